"""Pima data-fraction study: CR against each baseline, paired tests over splits.

Protocol: RepeatedStratifiedKFold(5 folds x 5 repeats, random_state=0); each
training fold subsampled (stratified, nested) to 5%, 10%, 25%, 50%, 100%;
CRClassifier with its defaults against ``default_baselines()``; the
Nadeau-Bengio corrected t-test over the 25 paired splits (the default of the
study tables and plots), then the Wilcoxon signed-rank test; unadjusted
p-values, marked where the Holm-adjusted test rejects. This is the default
``cr-sklearn study``.

Run: ``python benchmarks/bench_data_fraction.py [--n-jobs N] [--csv PATH]``
(``--csv`` keeps the tidy records, from which ``docs/make_figures.py
--from-csv PATH`` draws the docs' figure of the same run). With
``--from-csv study.csv`` (written by ``cr-sklearn study``) it rebuilds the
tables from an earlier identical run instead of fitting again.
Writes ``benchmarks/results/data_fraction.md`` and prints it.
"""

import argparse
import datetime
import shlex
import sys
import time
from pathlib import Path

from sklearn.model_selection import RepeatedStratifiedKFold

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima
from cr_sklearn.study import StudyResult, data_fraction_study, default_baselines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _suite_runner import git_commit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--from-csv", help="tidy records of an identical run")
    parser.add_argument("--csv", help="also write the tidy records here")
    args = parser.parse_args()
    from cr_sklearn import __version__

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join(["python", "benchmarks/bench_data_fraction.py", *sys.argv[1:]])

    if args.from_csv:
        import pandas as pd

        result = StudyResult.from_frame(pd.read_csv(args.from_csv))
        name = Path(args.from_csv).name
        elapsed, source = (
            None,
            f"the tidy records in {name}, of an identical run (this script with "
            "`--csv`, or `cr-sklearn study`); the fit times are that run's, "
            "wall-clock on a shared machine with other jobs running (noisy: "
            "compare the fit-time column within the run only)",
        )
    else:
        X, y = load_pima(return_X_y=True)
        models = {"CR": CRClassifier(), **default_baselines()}
        cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=5, random_state=0)
        start = time.perf_counter()
        result = data_fraction_study(
            models, X, y, cv=cv, random_state=0, n_jobs=args.n_jobs, progress=True
        )
        elapsed, source = time.perf_counter() - start, "this script"
    if args.csv:
        result.to_csv(args.csv)
    parts = [
        "# Pima data-fraction study",
        f"Command: `{command}`",
        f"Date: {date}, cr_sklearn {__version__}, commit {git_commit()}; "
        "CRClassifier and the baselines at their defaults.",
        "RepeatedStratifiedKFold(5x5, random_state=0), stratified nested "
        f"subsamples of each training fold; results from {source}.",
        "## Accuracy: corrected resampled t-test (Nadeau-Bengio) against CR",
        "The default of `cr-sklearn study`, `StudyResult.to_markdown` and "
        "`StudyDisplay`: unadjusted p-values, `*` where Holm's correction over "
        "the table still rejects at 0.05.",
        result.to_markdown("CR", test="corrected_t", details=True),
        "## Accuracy: Wilcoxon signed-rank test against CR",
        'The alternative (`test="wilcoxon"`): it ignores the overlap of the '
        "splits' training sets, so it rejects more often than it should.",
        result.to_markdown("CR", test="wilcoxon", details=True),
    ]
    if elapsed is not None:
        parts.append(
            f"Wall time {elapsed:.0f} s for {len(result)} fits on a shared machine "
            "(other jobs running: timings are noisy; compare the fit-time column "
            "within this run only)."
        )
    text = "\n\n".join(parts) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "data_fraction.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
