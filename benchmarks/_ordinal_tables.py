"""Registry of the ordinal benchmark suite: real tables with an ordered target.

The ordinal counterpart of ``_suite_tables.py``. Each :class:`OrdinalTable`
names its loader, origin, licence, target, the target's ordered levels, its
shape (rows, columns after the suite's one-hot encoding, levels) and its half
of the suite (``split``: ``"tune"`` or ``"confirm"``). A loader returns
``(X, y)``: features as in ``_suite_tables`` (numeric columns to scale, the
others categorical strings) and ``y`` the ranks ``0..K-1`` of ``levels``, so
that every model sees the same contiguous integer labels and the MAE is in
rank units. Nothing is redistributed: the loaders read cr_sklearn's bundled
Wine Quality, the R data sets installed by ``pydataset`` and the files in
``../shared/data`` (set ``CR_SKLEARN_SUITE_DATA`` or pass ``data_dir``);
tables from there are marked ``shared`` and skipped with a message when the
folder is absent. The Yelp sample is read only, never redistributed.

Levels merged: Wine Quality's rare extremes (red: 3 and 4 as "<=4", 7 and 8
as ">=7"; white: 3 and 4 as "<=4", 8 and 9 as ">=8"), so that every level
has at least 60 rows and appears in both folds of a 2-fold split. Where
pandas read R's level "None" as missing (survey's Exer, Arthritis'
Improved), it is restored as the lowest level.

How the split was drawn (once, before any recipe was tried; the labels
below are committed): :func:`draw_split` with ``SPLIT_SEED = 14``.
``FIXED_TUNE`` goes to the tuning half: Wine Quality (the earlier defaults
were tuned on it, ``benchmarks/bench_ordinal.py`` and
``benchmarks/tune_defaults.py``) and the R tables whose rows and features
are in the classification suite's tuning half (Fair, Salaries, VerbAgg),
which the new recipe will be tuned on. ``FIXED_CONFIRM`` goes to the
confirmation half: the tables whose rows are in the classification suite's
confirmation half (SST-5, Yelp, diamonds and Womenlf with the same target;
survey), so that tuning here cannot leak into that half. Of the free tables,
as many go to ``"tune"`` as make the halves equal (the odd one out goes to
``"confirm"``); every such choice is scored by its imbalance over the regime
tags of :func:`regimes`, and the seed draws one of the least imbalanced
choices. ``tests/test_ordinal_suite.py`` checks that redrawing gives the
committed labels. A table added later must not move them: draw its half on
its own and restrict that test to the tables drawn here.
"""

from dataclasses import dataclass, field
from pathlib import Path

import _suite_tables
import numpy as np
import pandas as pd

# The R tables are read and typed as in the classification suite.
from _suite_tables import (
    _GPL2OR3,
    _GPL2P,
    _categorical,
    _r_licence,
    _r_origin,
    _rdata,
    default_data_dir,
    why_unavailable,
)

__all__ = [
    "FIXED_CONFIRM",
    "FIXED_TUNE",
    "SPLIT_SEED",
    "TABLES",
    "OrdinalTable",
    "default_data_dir",
    "draw_split",
    "get_tables",
    "load_table",
    "regimes",
    "why_unavailable",
]

SPLIT_SEED = 14
FIXED_TUNE = ("fair_rate", "salaries_rank", "verbagg", "wine_red", "wine_white")
FIXED_CONFIRM = ("diamonds_cut", "sst5", "survey_exer", "womenlf", "yelp5")


@dataclass(frozen=True)
class OrdinalTable:
    """One table of the ordinal suite and what is known about it.

    ``load(data_dir)`` returns ``(X, y)`` with ``y`` the ranks of
    ``levels`` (lowest first). ``files`` are the paths under the shared data
    folder the table needs (empty for tables from installed packages).
    """

    name: str
    load: object
    origin: str
    licence: str
    target: str
    levels: tuple
    shape: tuple
    categorical: bool
    split: str
    source: str
    files: tuple = field(default=())

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
        """Ordered levels of the target."""
        return self.shape[2]

    @property
    def shared(self):
        """Whether the table is read from the shared data folder."""
        return bool(self.files)


def regimes(table):
    """The regime tags of a table (used to balance the split).

    Parameters
    ----------
    table : OrdinalTable
        A registry entry.

    Returns
    -------
    tags : tuple of str
        The size band (``"small"`` under 400 rows, ``"large"`` from 5,000,
        else ``"medium"``), then those of ``"wide"`` (30 or more columns after
        encoding), ``"categorical"``, ``"many_levels"`` (5 or more) and
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
        "many_levels": table.n_classes >= 5,
        "shared": table.shared,
    }
    return (size, *(tag for tag, on in flags.items() if on))


def draw_split(tables, seed=SPLIT_SEED, fixed=FIXED_TUNE, fixed_confirm=FIXED_CONFIRM):
    """Draw the tune/confirm split, balanced across :func:`regimes`.

    The classification suite's draw (``_suite_tables.draw_split``) with this
    registry's fixed tables and regime tags.

    Parameters
    ----------
    tables : sequence of OrdinalTable
        The tables to split (their ``split`` field is ignored).
    seed : int, default=SPLIT_SEED
        Seed of the draw among the most balanced choices.
    fixed : sequence of str, default=FIXED_TUNE
        Tables that go to the tuning half whatever the draw.
    fixed_confirm : sequence of str, default=FIXED_CONFIRM
        Tables that go to the confirmation half whatever the draw.

    Returns
    -------
    split : dict of str to str
        Table name to ``"tune"`` or ``"confirm"``.
    """
    return _suite_tables.draw_split(
        tables, seed, fixed, fixed_confirm, regimes_of=regimes
    )


def get_tables(names=None, split="all"):
    """Registry entries by name and half, in registry order.

    Parameters
    ----------
    names : sequence of str, default=None
        Table names; all tables when None.
    split : {"all", "tune", "confirm"}, default="all"
        Keep only one half.

    Returns
    -------
    tables : list of OrdinalTable
    """
    return _suite_tables.get_tables(names, split, tables=TABLES)


def load_table(table, data_dir=None):
    """Load a table as ``(X, y)``, ``y`` the ranks of its levels.

    Parameters
    ----------
    table : OrdinalTable
        A registry entry.
    data_dir : path-like, default=None
        The shared data folder; :func:`default_data_dir` when None.

    Returns
    -------
    X : DataFrame
    y : ndarray of int
        Ranks ``0..K-1``.
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    X, y = table.load(data_dir)
    if set(np.unique(y)) != set(range(len(table.levels))):
        raise ValueError(f"{table.name}: labels are not the ranks of its levels.")
    return X, y


# -- loaders ---------------------------------------------------------------


def _ranks(values, levels, merge=None):
    """Ranks of ``values`` in ``levels`` (after ``merge``: value to level)."""
    values = pd.Series(values).astype(object)
    if merge:
        values = values.map(lambda v: merge.get(v, v))
    index = {level: i for i, level in enumerate(levels)}
    ranks = values.map(lambda v: index.get(str(v)))
    if ranks.isna().any():
        unknown = sorted(set(values[ranks.isna()].astype(str)))
        raise ValueError(f"values {unknown} are not among the levels {levels}")
    return ranks.to_numpy(dtype=np.int64)


_WINE_LEVELS = {
    "red": ("<=4", "5", "6", ">=7"),
    "white": ("<=4", "5", "6", "7", ">=8"),
}
_WINE_MERGE = {
    "red": {3: "<=4", 4: "<=4", 7: ">=7", 8: ">=7"},
    "white": {3: "<=4", 4: "<=4", 8: ">=8", 9: ">=8"},
}


def _wine(color):
    def load(data_dir):
        from cr_sklearn.datasets import load_wine_quality

        X, y = load_wine_quality(color=color, return_X_y=True, as_frame=True)
        merge = _WINE_MERGE[color]
        y = [merge.get(int(v), str(int(v))) for v in np.asarray(y)]
        return X.astype(float), _ranks(y, _WINE_LEVELS[color])

    return load


def _embeddings(folder, levels):
    embeddings = _suite_tables._embeddings(folder)

    def load(data_dir):
        X, y = embeddings(data_dir)
        return X, _ranks(y.astype(str), levels)

    return load


def _r_table(name, target, levels, drop=(), missing_level=None, sample=None):
    """An R table's features and the ranks of its ordered ``target``.

    ``missing_level`` replaces missing target values (R's level "None", read
    as missing by pandas); other rows without a label are dropped.
    ``sample`` keeps that many rows, drawn with seed 0.
    """

    def load(data_dir):
        frame = _rdata(name)
        if sample is not None:
            rows = np.random.RandomState(0).choice(len(frame), sample, replace=False)
            frame = frame.iloc[np.sort(rows)]
        if missing_level is not None:
            frame = frame.assign(**{target: frame[target].fillna(missing_level)})
        frame = frame.dropna(subset=[target])
        X = _categorical(frame.drop(columns=[target, *drop]))
        return X, _ranks(frame[target].astype(str), levels)

    return load


# Shapes are of the whole table: rows, columns after the suite's encoding
# (median-imputed scaled numeric columns, one-hot categorical columns with a
# "missing" level where values are missing, one column for a binary one),
# levels of the target.
TABLES = [
    # --- bundled with cr_sklearn
    OrdinalTable(
        name="wine_red",
        load=_wine("red"),
        origin="UCI Wine Quality, red (Cortez et al. 2009), bundled with cr_sklearn",
        licence="CC BY 4.0 (UCI)",
        target="quality, 3 and 4 merged, 7 and 8 merged",
        levels=_WINE_LEVELS["red"],
        shape=(1599, 11, 4),
        categorical=False,
        split="tune",
        source="cr_sklearn",
    ),
    OrdinalTable(
        name="wine_white",
        load=_wine("white"),
        origin="UCI Wine Quality, white (Cortez et al. 2009), bundled with cr_sklearn",
        licence="CC BY 4.0 (UCI)",
        target="quality, 3 and 4 merged, 8 and 9 merged",
        levels=_WINE_LEVELS["white"],
        shape=(4898, 11, 5),
        categorical=False,
        split="tune",
        source="cr_sklearn",
    ),
    # --- ../shared/data
    OrdinalTable(
        name="sst5",
        load=_embeddings("sst5", ("0", "1", "2", "3", "4")),
        origin="SST-5 sentences (Socher et al. 2013), train file, as "
        "all-MiniLM-L6-v2 embeddings, ../shared/data/sst5",
        licence="unstated (Stanford); embedding model Apache-2.0",
        target="sentiment, very negative (0) to very positive (4)",
        levels=("0", "1", "2", "3", "4"),
        shape=(8544, 384, 5),
        categorical=False,
        split="confirm",
        source="shared",
        files=("sst5/minilm_embeddings.npz",),
    ),
    OrdinalTable(
        name="yelp5",
        load=_embeddings("yelp5", ("1", "2", "3", "4", "5")),
        origin="Yelp Open Dataset reviews (Yue et al. 2023 sample), train "
        "file, as all-MiniLM-L6-v2 embeddings, ../shared/data/yelp5",
        licence="Yelp Dataset Terms of Use: read for benchmarks, never redistributed",
        target="stars, 1 to 5",
        levels=("1", "2", "3", "4", "5"),
        shape=(5000, 384, 5),
        categorical=False,
        split="confirm",
        source="shared",
        files=("yelp5/minilm_embeddings.npz",),
    ),
    # --- R tables installed by pydataset
    OrdinalTable(
        name="arthritis",
        load=_r_table(
            "Arthritis",
            "Improved",
            ("None", "Some", "Marked"),
            drop=["ID"],
            missing_level="None",
        ),
        origin=_r_origin("vcd", "Arthritis", "Koch & Edwards 1988 trial"),
        licence=_r_licence("vcd", "GPL-2"),
        target="improvement None < Some < Marked (patient ID dropped)",
        levels=("None", "Some", "Marked"),
        shape=(84, 3, 3),
        categorical=True,
        split="tune",
        source="pydataset",
    ),
    OrdinalTable(
        name="diamonds_cut",
        load=_r_table(
            "diamonds",
            "cut",
            ("Fair", "Good", "Very Good", "Premium", "Ideal"),
            sample=10_000,
        ),
        origin=_r_origin("ggplot2", "diamonds", "10,000 of 53,940 rows, seed 0"),
        licence=_r_licence("ggplot2", "MIT"),
        target="cut Fair < Good < Very Good < Premium < Ideal",
        levels=("Fair", "Good", "Very Good", "Premium", "Ideal"),
        shape=(10000, 22, 5),
        categorical=True,
        split="confirm",
        source="pydataset",
    ),
    OrdinalTable(
        name="fair_rate",
        load=_r_table("Fair", "rate", ("1", "2", "3", "4", "5")),
        origin=_r_origin("Ecdat", "Fair", "Fair 1978 affairs survey"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="self-rated happiness of the marriage, 1 to 5",
        levels=("1", "2", "3", "4", "5"),
        shape=(601, 8, 5),
        categorical=True,
        split="tune",
        source="pydataset",
    ),
    OrdinalTable(
        name="kakadu",
        # lower and upper are the bounds of the WTP interval that the answers
        # (nn, ny, yy) place it in: they give the target away.
        load=_r_table("Kakadu", "answer", ("nn", "ny", "yy"), drop=["lower", "upper"]),
        origin=_r_origin("Ecdat", "Kakadu", "Carson et al. 1994 survey"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="double-bounded WTP answers no-no < no-yes < yes-yes "
        "(the bid bounds dropped)",
        levels=("nn", "ny", "yy"),
        shape=(1827, 19, 3),
        categorical=True,
        split="confirm",
        source="pydataset",
    ),
    OrdinalTable(
        name="mathlevel",
        load=_r_table(
            "Mathlevel",
            "mathlevel",
            ("170", "171a", "171b", "172a", "172b", "221a", "221b"),
        ),
        origin=_r_origin("Ecdat", "Mathlevel", "Ferber 1994 micro students"),
        licence=_r_licence("Ecdat", _GPL2P),
        target="highest calculus course, 170 < 171a < ... < 221b (7)",
        levels=("170", "171a", "171b", "172a", "172b", "221a", "221b"),
        shape=(609, 11, 7),
        categorical=True,
        split="confirm",
        source="pydataset",
    ),
    OrdinalTable(
        name="salaries_rank",
        load=_r_table("Salaries", "rank", ("AsstProf", "AssocProf", "Prof")),
        origin=_r_origin("car", "Salaries", "US professors' salaries 2008-09"),
        licence=_r_licence("car", _GPL2P),
        target="academic rank AsstProf < AssocProf < Prof",
        levels=("AsstProf", "AssocProf", "Prof"),
        shape=(397, 5, 3),
        categorical=True,
        split="tune",
        source="pydataset",
    ),
    OrdinalTable(
        name="survey_exer",
        load=_r_table("survey", "Exer", ("None", "Some", "Freq"), missing_level="None"),
        origin=_r_origin("MASS", "survey", "Adelaide statistics students"),
        licence=_r_licence("MASS", _GPL2OR3),
        target="exercise None < Some < Freq",
        levels=("None", "Some", "Freq"),
        shape=(237, 26, 3),
        categorical=True,
        split="confirm",
        source="pydataset",
    ),
    OrdinalTable(
        name="verbagg",
        load=_r_table("VerbAgg", "resp", ("no", "perhaps", "yes"), drop=["id", "r2"]),
        origin=_r_origin("lme4", "VerbAgg", "De Boeck & Wilson 2004"),
        licence=_r_licence("lme4", _GPL2P),
        target="response no < perhaps < yes (r2, derived from it, and id dropped)",
        levels=("no", "perhaps", "yes"),
        shape=(7584, 31, 3),
        categorical=True,
        split="tune",
        source="pydataset",
    ),
    OrdinalTable(
        name="womenlf",
        load=_r_table("Womenlf", "partic", ("not.work", "parttime", "fulltime")),
        origin=_r_origin("car", "Womenlf", "Social Change in Canada, 1977"),
        licence=_r_licence("car", _GPL2P),
        target="work not.work < parttime < fulltime",
        levels=("not.work", "parttime", "fulltime"),
        shape=(263, 7, 3),
        categorical=True,
        split="confirm",
        source="pydataset",
    ),
]
