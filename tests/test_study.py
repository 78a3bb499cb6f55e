"""Tests of data_fraction_study, default_baselines and the Dask backend."""

import signal

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from skorch.callbacks import Callback

from cr_sklearn import CRClassifier
from cr_sklearn.study import StudyResult, data_fraction_study, default_baselines
from cr_sklearn.study._engine import nested_subsamples


class _Recorder(ClassifierMixin, BaseEstimator):
    """Remembers which rows (ids in column 0) and parameters it was fitted with."""

    def __init__(self, random_state=None, n_threads=None):
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X, y):
        self.ids_ = np.sort(X[:, 0].astype(int))
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


def _fingerprint(est, X, y):
    ids = est.ids_
    return float(np.sum((ids + 1) * 2654435761 % 1000003))


def _seed(est, X, y):
    return float(est.random_state)


def _threads(est, X, y):
    return float(est.n_threads)


def _n_test(est, X, y):
    return float(len(X))


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=300, n_features=5, weights=[0.7, 0.3], random_state=0
    )
    X[:, 0] = np.arange(len(X))  # row ids, read back by _Recorder
    return X, y


def test_nested_stratified_subsamples():
    y = np.repeat([0, 1, 2], [200, 60, 10])
    subs = nested_subsamples(y, [0.05, 0.1, 0.5, 1.0], np.random.default_rng(0))
    for small, large in [(0.05, 0.1), (0.1, 0.5), (0.5, 1.0)]:
        assert set(subs[small]) <= set(subs[large])
    np.testing.assert_array_equal(subs[1.0], np.arange(len(y)))
    np.testing.assert_array_equal(np.bincount(y[subs[0.1]]), [20, 6, 1])
    # every class present even where round(f * n_class) would be 0
    assert np.bincount(y[subs[0.05]]).min() >= 1


def test_every_model_sees_the_same_nested_subsample(data):
    X, y = data
    scoring = {"fp": _fingerprint, "n_test": _n_test}
    result = data_fraction_study(
        {"a": _Recorder(), "b": _Recorder()},
        X,
        y,
        fractions=(0.1, 0.5, 1.0),
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
        scoring=scoring,
    )
    frame = result.to_frame()
    fp = frame[frame.metric == "fp"].pivot_table(
        index=["fraction", "split"], columns="model", values="value"
    )
    np.testing.assert_array_equal(fp["a"], fp["b"])
    assert fp["a"].nunique() == len(fp)  # different subsample per (fraction, split)
    # the test fold is never subsampled
    n_test = frame[frame.metric == "n_test"]
    assert set(n_test["value"]) == {100.0}
    assert (n_test["n_test"] == 100).all()
    # training sizes follow the fractions of the 200-row training folds
    # (rounded per class, so within one row per class of the fraction)
    for fraction, n_train in zip(frame["fraction"], frame["n_train"], strict=True):
        assert abs(n_train - fraction * 200) <= 1


def test_records_layout(data):
    X, y = data
    result = data_fraction_study(
        {"logreg": LogisticRegression()}, X, y, fractions=(0.5, 1.0)
    )
    assert isinstance(result, StudyResult)
    # default cv: RepeatedStratifiedKFold 5 x 5
    assert result.n_splits == 25 and len(result) == 50
    rec = result.records[-1]
    assert rec["repeat"] == 4 and rec["fold"] == 4 and rec["split"] == 24
    assert rec["metric"] == "accuracy" and 0.5 < rec["value"] <= 1.0
    assert rec["fit_time"] >= 0 and rec["n_test"] == 60


def test_seeds_filled_from_random_state_and_split(data):
    X, y = data
    models = {"a": _Recorder(), "fixed": _Recorder(random_state=7)}
    kw = dict(fractions=(0.5, 1.0), cv=3, scoring=_seed)
    frame = data_fraction_study(models, X, y, random_state=0, **kw).to_frame()
    seeds = frame.pivot_table(
        index=["fraction", "split"], columns="model", values="value"
    )
    assert (seeds["fixed"] == 7).all()
    # one seed per split, shared across fractions and models
    per_split = seeds["a"].groupby(level="split").nunique()
    assert (per_split == 1).all() and seeds["a"].nunique() == 3
    other = data_fraction_study(models, X, y, random_state=1, **kw).to_frame()
    assert not np.array_equal(other["value"], frame["value"])


def test_n_threads_set_on_nested_parameters(data):
    X, y = data
    models = {
        "plain": _Recorder(),
        "piped": make_pipeline(StandardScaler(), _Recorder()),
    }

    def threads(est, X, y):
        return float(
            est.get_params()[
                "n_threads"
                if "n_threads" in est.get_params()
                else "_recorder__n_threads"
            ]
        )

    frame = data_fraction_study(
        models, X, y, fractions=(1.0,), cv=2, scoring=threads, n_threads=1
    ).to_frame()
    assert set(frame["value"]) == {1.0}
    untouched = data_fraction_study(
        {"plain": _Recorder(n_threads=3)},
        X,
        y,
        fractions=(1.0,),
        cv=2,
        scoring=_threads,
        n_threads=None,
    ).to_frame()
    assert set(untouched["value"]) == {3.0}


def test_blas_threads_are_limited_during_fits(data):
    from threadpoolctl import threadpool_info

    def max_threads(est, X, y):
        return float(max([p["num_threads"] for p in threadpool_info()] or [1]))

    X, y = data
    frame = data_fraction_study(
        {"m": LogisticRegression()}, X, y, fractions=(1.0,), cv=2, scoring=max_threads
    ).to_frame()
    assert set(frame["value"]) == {1.0}


def test_cr_classifier_gets_one_thread_and_is_reproducible(data):
    X, y = data
    models = {"cr": CRClassifier(hidden_layer_sizes=(8,), max_iter=3)}
    kw = dict(fractions=(0.5,), cv=2, scoring={"acc": "accuracy", "thr": _threads})
    first = data_fraction_study(models, X, y, **kw).to_frame()
    second = data_fraction_study(models, X, y, **kw).to_frame()
    assert set(first.loc[first.metric == "thr", "value"]) == {1.0}
    np.testing.assert_array_equal(first["value"], second["value"])


def test_results_do_not_depend_on_n_jobs(data):
    X, y = data
    models = {
        "tree": DecisionTreeClassifier(max_features=2),
        "logreg": LogisticRegression(),
    }
    kw = dict(fractions=(0.2, 1.0), cv=3, random_state=3)
    serial = data_fraction_study(models, X, y, n_jobs=1, **kw).to_frame()
    parallel = data_fraction_study(models, X, y, n_jobs=2, **kw).to_frame()
    cols = ["model", "fraction", "split", "n_train", "value"]
    assert serial[cols].equals(parallel[cols])


@pytest.mark.parametrize(
    "scoring, metrics",
    [
        ("accuracy", ["accuracy"]),
        (["accuracy", "balanced_accuracy"], ["accuracy", "balanced_accuracy"]),
        ({"acc": "accuracy", "n": _n_test}, ["acc", "n"]),
        (None, ["score"]),
        (make_scorer(lambda a, b: 0.5), ["score"]),
    ],
)
def test_scoring_forms(data, scoring, metrics):
    X, y = data
    result = data_fraction_study(
        {"m": LogisticRegression()}, X, y, fractions=(1.0,), cv=2, scoring=scoring
    )
    assert result.metrics == metrics
    assert len(result) == 2 * len(metrics)


def test_dreg_scorer_is_accepted(data):
    from cr_sklearn import DREGScorer

    X, y = data
    result = data_fraction_study(
        {"cr": CRClassifier(hidden_layer_sizes=(8,), max_iter=3)},
        X,
        y,
        fractions=(1.0,),
        cv=2,
        scoring={"acc": "accuracy", "tau": DREGScorer()},
    )
    values = result.to_frame().query("metric == 'tau'")["value"]
    assert len(values) == 2 and np.isfinite(values).all() and (values >= 1).all()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(estimators={}), TypeError, "non-empty dict"),
        (dict(estimators=[LogisticRegression()]), TypeError, "dict"),
        (dict(estimators={"x": object()}), TypeError, "no fit method"),
        (dict(fractions=(0.0, 0.5)), ValueError, r"\(0, 1\]"),
        (dict(fractions=(0.5, 1.2)), ValueError, r"\(0, 1\]"),
        (dict(fractions=()), ValueError, "fractions"),
        (dict(scoring=3), TypeError, "scoring"),
        (dict(n_threads=0), ValueError, "n_threads"),
    ],
)
def test_bad_arguments(data, kwargs, error, match):
    X, y = data
    args = {"estimators": {"m": LogisticRegression()}, **kwargs}
    with pytest.raises(error, match=match):
        data_fraction_study(args.pop("estimators"), X, y, cv=2, **args)


def test_continuous_target_is_rejected(data):
    X, _ = data
    with pytest.raises(ValueError, match="class labels"):
        data_fraction_study({"m": LogisticRegression()}, X, X[:, 1], cv=2)


def test_default_baselines():
    models = default_baselines(random_state=0)
    names = list(models)
    assert names[:3] == ["LogisticRegression", "SVC", "RandomForest"]
    assert names[-1] == "MLP" and len(names) == 5
    assert names[3] in ("XGBoost", "HistGradientBoosting (XGBoost stand-in)")
    assert models["RandomForest"].n_estimators == 500
    assert models["RandomForest"].n_jobs == 1


def test_xgboost_baseline_accepts_any_labels():
    pytest.importorskip("xgboost")
    X, y = make_classification(
        n_samples=120, n_classes=3, n_informative=3, random_state=0
    )
    labels = np.array(["low", "mid", "high"])[y]
    clf = default_baselines(random_state=0)["XGBoost"].set_params(
        estimator__n_estimators=5
    )
    clf.fit(X, labels)
    assert set(clf.predict(X)) <= set(labels)
    assert clf.predict_proba(X).shape == (120, 3)
    assert list(clf.classes_) == ["high", "low", "mid"]


def test_missing_xgboost_falls_back_with_a_logged_note(monkeypatch, caplog):
    import sys
    import warnings

    monkeypatch.setitem(sys.modules, "xgboost", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a note, not a warning
        models = default_baselines()
    assert "xgboost is not installed" in caplog.text
    names = list(models)
    assert names[3] == "HistGradientBoosting (XGBoost stand-in)"
    assert "XGBoost" not in models


@pytest.mark.slow  # two worker processes import torch: 150 s on a busy 2-core box
def test_dask_backend_gives_the_local_result(data):
    distributed = pytest.importorskip("dask.distributed")
    import joblib

    X, y = data
    models = {
        "tree": DecisionTreeClassifier(max_features=2),
        "cr": CRClassifier(hidden_layer_sizes=(8,), max_iter=3),
    }
    kw = dict(fractions=(0.3, 1.0), cv=2, random_state=0)
    # sequential equals loky (test_results_do_not_depend_on_n_jobs)
    local = data_fraction_study(models, X, y, n_jobs=1, **kw)
    with (
        distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        joblib.parallel_config(backend="dask"),
    ):
        remote = data_fraction_study(models, X, y, n_jobs=2, **kw)
    cols = ["model", "fraction", "split", "n_train", "n_test", "metric", "value"]
    assert local.to_frame()[cols].equals(remote.to_frame()[cols])


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_ordered_categorical_reaches_ordinal_models_and_scorers(library):
    lib = pytest.importorskip(library, reason=f"ordered labels of {library}")
    from conftest import FAST, make_ordinal_data

    from cr_sklearn import CROrdinalRegressor, get_ordinal_scorer

    X, codes = make_ordinal_data(n=120)
    X = np.column_stack([np.arange(len(X)), X])  # ids for _Recorder
    order = ["None", "Some", "Marked", "Severe"]  # not alphabetical
    labels = np.array(order)[codes]
    if library == "pandas":
        y = lib.Series(lib.Categorical(labels, order, ordered=True))
    else:  # a polars Enum is ordered by its categories
        y = lib.Series(labels.tolist(), dtype=lib.Enum(order))
    models = {"CR": CROrdinalRegressor(**FAST), "majority": _Recorder()}
    mae = get_ordinal_scorer("neg_mean_absolute_error")
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    result = data_fraction_study(
        models, X, y, fractions=(1.0,), cv=cv, scoring={"mae": mae}, progress=False
    )
    values = {(r["model"], r["split"]): r["value"] for r in result.records}
    for s, (train, test) in enumerate(cv.split(X, np.array(order)[codes])):
        assert np.isfinite(values[("CR", s)])
        # The majority label's (first in np.unique on a tie, as _Recorder's)
        # distance in the categories' order.
        labels, counts = np.unique(np.asarray(y)[train], return_counts=True)
        majority = order.index(labels[np.argmax(counts)])
        expected = -np.mean(np.abs(codes[test] - majority))
        assert values[("majority", s)] == pytest.approx(expected)
    # Plain strings carry no order: the ordinal model asks for one.
    with pytest.raises(ValueError, match="order"):
        data_fraction_study(
            {"CR": CROrdinalRegressor(**FAST)},
            X,
            np.array(order)[codes],
            fractions=(1.0,),
            cv=cv,
            progress=False,
        )


# A fresh interpreter: torch shows its read-only warning once per process.
_READ_ONLY_STUDY = """
import sys
import warnings
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from cr_sklearn import CRClassifier
from cr_sklearn.cli import main
from cr_sklearn.datasets import load_pima
from cr_sklearn.study import data_fraction_study

X, y = load_pima(return_X_y=True)
X, y = np.array(X[:150]), np.array(y[:150])
X.flags.writeable = False
y.flags.writeable = False
import matplotlib.pyplot  # its own import-time warnings are not the test's
warnings.simplefilter("error")
warnings.simplefilter("ignore", ConvergenceWarning)
model = CRClassifier((8,), max_iter=2)
data_fraction_study({"CR": model}, X, y, fractions=(1.0,), cv=2, progress=False)
# The command's tables: pandas frames, read-only arrays under copy-on-write.
status = main(["evaluate", "--models", "CR", "--folds", "2", "--repeats", "1",
               "--n-jobs", "1", "--no-progress", "--out", sys.argv[1]])
print("status", status)
"""


def test_a_study_on_read_only_input_raises_no_warning(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    done = subprocess.run(
        [sys.executable, "-c", _READ_ONLY_STUDY, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "status 0" in done.stdout
    assert "not writable" not in done.stderr


# -- Ctrl-C stops a study (issue 47, F10) ----------------------------------------
class _CtrlC(Callback):
    """Press Ctrl-C (SIGINT to this process) as epoch ``at`` of a fit ends."""

    def __init__(self, at=2):
        self.at = at

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.at:
            signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("in_pipeline", [False, True])
def test_ctrl_c_in_a_fit_stops_the_study_unscored(data, in_pipeline):
    X, y = data
    cr = CRClassifier((8,), max_iter=5, early_stopping=False, callbacks=[_CtrlC()])
    scored = []

    def accuracy(est, X_test, y_test):
        scored.append(type(est).__name__)
        return float(np.mean(est.predict(X_test) == y_test))

    models = {
        "logreg": LogisticRegression(),
        "CR": make_pipeline(StandardScaler(), cr) if in_pipeline else cr,
    }
    with pytest.raises(KeyboardInterrupt):
        data_fraction_study(
            models,
            X,
            y,
            fractions=(1.0,),
            cv=3,
            scoring=accuracy,
            n_jobs=1,
            progress=False,
        )
    assert scored == ["LogisticRegression"]  # the first split's, not CR's
    # The handler in place before the study is back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.filterwarnings("ignore:Training interrupted")
def test_a_stopping_callback_is_not_a_ctrl_c(data):
    # skorch's own EarlyStopping ends training with a KeyboardInterrupt too
    # (the fit warns as for a Ctrl-C): without a Ctrl-C, the study scores
    # the fits.
    from skorch.callbacks import EarlyStopping

    X, y = data
    model = CRClassifier(
        (8,),
        max_iter=30,
        early_stopping=False,
        callbacks=[EarlyStopping(monitor="train_loss", patience=1, threshold=10.0)],
    )
    result = data_fraction_study(
        {"CR": model}, X, y, fractions=(1.0,), cv=2, n_jobs=1, progress=False
    )
    assert len(result) == 2 and np.isfinite(result.to_frame()["value"]).all()


# -- each kind of warning once (issue 49, row 8) -----------------------------------
def test_warnings_that_differ_in_a_count_are_one_line_with_its_range():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.arange(41) % 4, rng.normal(size=41)])
    y = np.arange(41) % 2
    # 16 bins for a column of 4 values, in training folds of 27 and 28 rows.
    model = CRClassifier((8,), max_iter=2, encoding_bins=16)
    with pytest.warns(UserWarning) as record:
        data_fraction_study({"CR": model}, X, y, fractions=(1.0,), cv=3, progress=False)
    lines = [str(w.message) for w in record if "encoding_bins" in str(w.message)]
    assert len(lines) == 1, lines
    assert "the 27-28 training rows" in lines[0]
    assert lines[0].endswith("(in 3 of 3 fits)")


def test_merged_warnings_keep_names_and_other_texts_apart():
    from cr_sklearn.study._engine import merged_warnings

    fits = [
        [(UserWarning, "8 rows in float32."), (UserWarning, "{a} 1.5 of 2")],
        [(UserWarning, "10 rows in float32."), (UserWarning, "{a} 0.25 of 2")],
        [(UserWarning, "9 rows in float64."), (FutureWarning, "{a} 1.5 of 2")],
    ]
    assert merged_warnings(fits) == [
        (UserWarning, "8-10 rows in float32.", 2),
        (UserWarning, "{a} 0.25-1.5 of 2", 2),
        (UserWarning, "9 rows in float64.", 1),
        (FutureWarning, "{a} 1.5 of 2", 1),
    ]
