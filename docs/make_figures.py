"""Render the figures in ``docs/_static``: the Pima study and a loss curve.

The study is the one ``cr-sklearn study`` runs (CR against the default
baselines, 5 x 5 repeated stratified cross-validation, five training
fractions: 750 fits, a few minutes on two cores)::

    python docs/make_figures.py            # both figures
    python docs/make_figures.py --quick    # 1 x 3 folds, two fractions: a look
    python docs/make_figures.py --only loss
    python docs/make_figures.py --only study --from-csv records.csv

``--from-csv`` draws the study from the tidy records of an identical run
(``python benchmarks/run.py fraction --csv records.csv`` or
``cr-sklearn study``), so that the figure and the measured table are one run.

Without xgboost, HistGradientBoosting stands in for XGBoost (and says so in
the legend), as in ``cr-sklearn study``.
"""

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.model_selection import RepeatedStratifiedKFold  # noqa: E402

from cr_sklearn import CRClassifier  # noqa: E402
from cr_sklearn.datasets import load_pima  # noqa: E402
from cr_sklearn.plotting import LossCurveDisplay  # noqa: E402
from cr_sklearn.study import (  # noqa: E402
    StudyDisplay,
    StudyResult,
    data_fraction_study,
    default_baselines,
)

STATIC = Path(__file__).resolve().parent / "_static"


def study_figure(path, *, quick, n_jobs, from_csv=None):
    if from_csv:
        import pandas as pd

        result = StudyResult.from_frame(pd.read_csv(from_csv))
    else:
        X, y = load_pima(return_X_y=True)
        models = {"CR": CRClassifier(), **default_baselines()}
        repeats, folds = (1, 3) if quick else (5, 5)
        fractions = (0.1, 1.0) if quick else (0.05, 0.1, 0.25, 0.5, 1.0)
        cv = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=0)
        start = time.perf_counter()
        result = data_fraction_study(
            models, X, y, fractions=fractions, cv=cv, n_jobs=n_jobs, random_state=0
        )
        print(f"{len(result)} fits in {time.perf_counter() - start:.0f} s")
    print(result.to_markdown("CR"))
    # A column: the docs' article is narrow (the command draws a row).
    display = StudyDisplay.from_result(result, dataset="Pima", layout="column")
    display.figure_.savefig(path, dpi=110)
    plt.close(display.figure_)


def loss_figure(path):
    X, y = load_pima(return_X_y=True)
    clf = CRClassifier(early_stopping=True, max_iter=150, random_state=0).fit(X, y)
    display = LossCurveDisplay.from_estimator(clf)
    display.ax_.set_title(
        f"CRClassifier on Pima: {clf.n_iter_} epochs, early stopping",
        fontsize="medium",
        pad=48,
    )
    display.figure_.savefig(path, dpi=110)
    plt.close(display.figure_)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small study")
    parser.add_argument("--only", choices=("study", "loss"), help="one figure")
    parser.add_argument("--n-jobs", type=int, default=-1, help="parallel fits")
    parser.add_argument("--from-csv", help="the study's tidy records (no fits)")
    args = parser.parse_args(argv)
    STATIC.mkdir(exist_ok=True)
    if args.only in (None, "loss"):
        loss_figure(STATIC / "loss_curve_pima.png")
    if args.only in (None, "study"):
        study_figure(
            STATIC / "study_pima.png",
            quick=args.quick,
            n_jobs=args.n_jobs,
            from_csv=args.from_csv,
        )


if __name__ == "__main__":
    main()
