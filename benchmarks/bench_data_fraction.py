"""Pima data-fraction study: CR against each baseline, Holm-corrected p-values.

Protocol: RepeatedStratifiedKFold(5 folds x 5 repeats, random_state=0); each
training fold subsampled (stratified, nested) to 5%, 10%, 25%, 50%, 100%;
CRClassifier with its defaults against ``default_baselines()``; Wilcoxon
signed-rank and Nadeau-Bengio corrected t-tests over the 25 paired splits,
Holm-corrected over the table. This is the default ``cr-sklearn study``.

Run: ``python benchmarks/bench_data_fraction.py [--n-jobs N]``. With
``--from-csv study.csv`` (written by ``cr-sklearn study``) it rebuilds the
tables from an earlier identical run instead of fitting again.
Writes ``benchmarks/results/data_fraction.md`` and prints it.
"""

import argparse
import time
from pathlib import Path

from sklearn.model_selection import RepeatedStratifiedKFold

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima
from cr_sklearn.study import StudyResult, data_fraction_study, default_baselines

RESULTS = Path(__file__).resolve().parent / "results"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--from-csv", help="tidy records of an identical run")
    args = parser.parse_args()

    if args.from_csv:
        import pandas as pd

        result = StudyResult.from_frame(pd.read_csv(args.from_csv))
        name = Path(args.from_csv).name
        elapsed, source = (
            None,
            f"the records of an identical `cr-sklearn study` ({name})",
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
    parts = [
        "# Pima data-fraction study",
        "RepeatedStratifiedKFold(5x5, random_state=0), stratified nested "
        f"subsamples of each training fold; results from {source}.",
        "## Accuracy, Wilcoxon signed-rank against CR (Holm)",
        result.to_markdown("CR", test="wilcoxon", details=True),
        "## Corrected resampled t-test (Nadeau-Bengio) against CR (Holm)",
        result.to_markdown("CR", test="corrected_t", details=True),
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
