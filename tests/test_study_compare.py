"""compare_study: models x tables x fractions x splits, failures kept, resumable."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, KFold
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

from cr_sklearn import DREGScorer, get_ordinal_scorer
from cr_sklearn.study import ComparisonResult, compare_study
from cr_sklearn.study._compare import _direction

pd = pytest.importorskip("pandas")

MODELS = {"logreg": LogisticRegression(), "dummy": DummyClassifier()}


def _tables(n=3):
    return [
        (f"t{i}", *make_classification(60 + 20 * i, n_features=5, random_state=i))
        for i in range(n)
    ]


class SlowDummy(DummyClassifier):
    """A DummyClassifier whose fit takes ``delay`` seconds and is counted."""

    fits = []

    def __init__(
        self, *, strategy="prior", random_state=None, constant=None, delay=0.0
    ):
        super().__init__(
            strategy=strategy, random_state=random_state, constant=constant
        )
        self.delay = delay

    def fit(self, X, y, sample_weight=None):
        SlowDummy.fits.append(1)
        time.sleep(self.delay)
        return super().fit(X, y, sample_weight)


class Failing(DummyClassifier):
    """Raises on tables with more than ``limit`` rows."""

    def __init__(self, *, strategy="prior", random_state=None, constant=None, limit=50):
        super().__init__(
            strategy=strategy, random_state=random_state, constant=constant
        )
        self.limit = limit

    def fit(self, X, y, sample_weight=None):
        if len(y) > self.limit:
            raise ValueError("too many rows for this model")
        return super().fit(X, y, sample_weight)


def test_one_record_per_fit_and_scorer_with_times():
    result = compare_study(
        MODELS,
        _tables(),
        cv=3,
        fractions=(0.5, 1.0),
        scoring=["accuracy", "neg_log_loss"],
        progress=False,
    )
    frame = result.to_frame()
    # 3 tables x 2 fractions x 3 splits x 2 models x 2 metrics
    assert len(frame) == 72
    assert result.metrics == ["accuracy", "log_loss"]
    assert (frame["fit_time"] > 0).all() and (frame["score_time"] > 0).all()
    assert (frame["error"] == "").all()
    # log-loss in natural units (positive) and ranked lower-is-better
    loss = frame[frame["metric"] == "log_loss"]
    assert (loss["value"] > 0).all() and not loss["greater_is_better"].any()
    assert result.greater_is_better == {"accuracy": True, "log_loss": False}
    ranks = result.ranks("log_loss")
    scores = result.table_scores("log_loss")
    best = scores.idxmin(axis=1)
    assert all(ranks.loc[i, m] == 1 for i, m in best.items())
    # the training rows follow the fraction
    half = frame[frame["fraction"] == 0.5]["n_train"].to_numpy()
    full = frame[frame["fraction"] == 1.0]["n_train"].to_numpy()
    assert (half < full).all()


def test_scorer_directions_follow_their_sign():
    from sklearn.metrics import get_scorer

    assert _direction(get_scorer("neg_log_loss")) == (-1, False)
    assert _direction(get_scorer("accuracy")) == (1, True)
    assert _direction(DREGScorer()) == (1, False)
    assert _direction(DREGScorer(negate=True)) == (-1, False)
    assert _direction(get_ordinal_scorer("neg_mean_absolute_error")) == (-1, False)
    assert _direction(None) == (1, True)


def test_tau_is_ranked_lower_is_better_in_natural_units():
    tables = _tables(2)
    models = {
        "mlp": MLPClassifier((16,), max_iter=300, random_state=0),
        "logreg": LogisticRegression(),
    }
    result = compare_study(
        models,
        tables,
        cv=2,
        scoring={"neg_tau": DREGScorer(q=95, negate=True)},
        progress=False,
    )
    frame = result.to_frame()
    assert result.metrics == ["tau"]
    assert (frame["value"] >= 1).all()  # tau = p95 / mean >= 1, not -tau
    scores = result.table_scores("tau")
    assert (scores["mlp"] > scores["logreg"]).all()
    # the smoother model (lower tau) ranks first
    assert (result.ranks("tau")["logreg"] == 1).all()


def test_ordinal_estimators_and_scorers():
    from conftest import FAST, make_ordinal_data

    from cr_sklearn import CROrdinalRegressor

    X, y = make_ordinal_data(n=120)
    tables = [("a", X, y), ("b", X[::-1].copy(), y[::-1].copy())]
    models = {"ordinal": CROrdinalRegressor(**FAST), "dummy": DummyClassifier()}
    result = compare_study(
        models,
        tables,
        cv=2,
        scoring={"mae": get_ordinal_scorer("neg_mean_absolute_error")},
        progress=False,
    )
    frame = result.to_frame()
    assert (frame["error"] == "").all(), frame["error"].unique()
    assert result.metrics == ["mae"]
    assert not result.greater_is_better["mae"]
    assert (frame["value"] >= 0).all()


def test_failed_fits_are_recorded_not_dropped():
    # tables of 60, 80, 100 rows: training folds of 30, 40, 50 rows
    models = {"failing": Failing(limit=45), "dummy": DummyClassifier()}
    with pytest.warns(FitFailedWarning, match="2 of 12 fits failed"):
        result = compare_study(models, _tables(), cv=2, progress=False)
    frame = result.to_frame()
    assert len(frame) == 3 * 2 * 2  # nothing dropped
    failed = frame[frame["error"] != ""]
    assert set(failed["table"]) == {"t2"} and set(failed["model"]) == {"failing"}
    assert len(failed) == 2 and failed["value"].isna().all()
    assert failed["error"].str.contains("ValueError: too many rows").all()
    with pytest.raises(ValueError, match="too many rows"):
        compare_study(models, _tables(), cv=2, progress=False, error_score="raise")


def test_failed_table_is_left_out_of_the_tests_with_a_warning():
    models = {
        "failing": Failing(limit=35),
        "dummy": DummyClassifier(),
        "tree": DecisionTreeClassifier(),
    }
    with pytest.warns(FitFailedWarning):
        result = compare_study(models, _tables(4), cv=2, progress=False)
    assert result.table_scores()["failing"].isna().sum() == 3
    with (
        pytest.warns(UserWarning, match="left out"),
        pytest.raises(ValueError, match="at least 2 tables"),
    ):
        result.friedman()


def test_groups_reach_the_splitter():
    X, y = make_classification(80, n_features=4, random_state=0)
    groups = np.repeat(np.arange(8), 10)
    result = compare_study(
        MODELS,
        [("g", X, y, groups), ("h", X, y, groups)],
        cv=GroupKFold(4),
        progress=False,
    )
    assert result.to_frame()["n_test"].eq(20).all()
    with pytest.raises(ValueError, match="Table 'g'.*groups"):
        compare_study(MODELS, [("g", X, y)], cv=GroupKFold(4), progress=False)


def test_csv_tables_are_preprocessed_in_each_fold(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=90),
            "city": rng.choice(["a", "b", "c"], size=90),
            "label": rng.choice(["yes", "no"], size=90),
        }
    )
    frame.loc[::7, "x"] = np.nan
    path = tmp_path / "towns.csv"
    frame.to_csv(path, index=False)
    result = compare_study(
        MODELS,
        [path, ("other", *make_classification(60, random_state=1))],
        target="label",
        cv=3,
        progress=False,
    )
    assert result.tables == ["towns", "other"]
    assert (result.to_frame()["error"] == "").all()
    with pytest.raises(ValueError, match="target="):
        compare_study(MODELS, [path], cv=3, progress=False)


def test_bad_tables_are_refused():
    X, y = make_classification(40, random_state=0)
    with pytest.raises(TypeError, match="list of"):
        compare_study(MODELS, ("a", X, y), progress=False)
    with pytest.raises(ValueError, match="Two tables are named 'a'"):
        compare_study(MODELS, [("a", X, y), ("a", X, y)], progress=False)
    with pytest.raises(ValueError, match="class labels"):
        compare_study(MODELS, [("a", X, X[:, 0])], progress=False)
    with pytest.raises(ValueError, match="error_score"):
        compare_study(MODELS, [("a", X, y)], error_score="skip", progress=False)


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_backends_give_the_sequential_result_and_fill_the_cache(tmp_path, backend):
    tables = _tables()
    kw = dict(cv=2, fractions=(0.5, 1.0), progress=False)
    sequential = compare_study(MODELS, tables, n_jobs=1, **kw)
    with joblib.parallel_config(backend=backend):
        parallel = compare_study(MODELS, tables, n_jobs=2, cache=tmp_path, **kw)
    cols = ["table", "model", "fraction", "split", "metric", "value"]
    assert sequential.to_frame()[cols].equals(parallel.to_frame()[cols])
    assert len(list(tmp_path.glob("*/*.json"))) == 3 * 2 * 2 * 2


@pytest.mark.slow  # a local Dask cluster of two worker processes
def test_dask_backend_driver_writes_the_cache(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    tables = _tables()
    kw = dict(cv=2, progress=False)
    local = compare_study(MODELS, tables, n_jobs=1, **kw)
    with (
        distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        joblib.parallel_config(backend="dask"),
    ):
        remote = compare_study(MODELS, tables, n_jobs=2, cache=tmp_path, **kw)
    cols = ["table", "model", "split", "metric", "value"]
    assert local.to_frame()[cols].equals(remote.to_frame()[cols])
    assert len(list(tmp_path.glob("*/*.json"))) == 3 * 2 * 2


def test_cache_hits_skip_the_fits_and_give_the_same_records(tmp_path):
    tables = _tables(2)
    models = {"slow": SlowDummy(), "logreg": LogisticRegression()}
    SlowDummy.fits.clear()
    first = compare_study(models, tables, cv=3, cache=tmp_path, progress=False)
    assert len(SlowDummy.fits) == 6 and first.n_cached == 0
    second = compare_study(models, tables, cv=3, cache=tmp_path, progress=False)
    assert len(SlowDummy.fits) == 6 and second.n_cached == 12
    drop = ["fit_time", "score_time"]
    assert (
        first.to_frame().drop(columns=drop).equals(second.to_frame().drop(columns=drop))
    )
    # another parameter, another fit; another table content, another fit
    models["slow"] = SlowDummy(strategy="most_frequent")
    third = compare_study(models, tables, cv=3, cache=tmp_path, progress=False)
    assert len(SlowDummy.fits) == 12 and third.n_cached == 6
    X, y = tables[0][1:]
    changed = [("t0", X + 1.0, y), tables[1]]
    fourth = compare_study(models, changed, cv=3, cache=tmp_path, progress=False)
    assert fourth.n_cached == 6


_KILLED_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from sklearn.datasets import make_classification
    from cr_sklearn.study import compare_study
    from test_study_compare import SlowDummy

    tables = [(f"t{i}", *make_classification(60, n_features=4, random_state=i))
              for i in range(4)]
    compare_study({"slow": SlowDummy(delay=0.1), "fast": SlowDummy()}, tables,
                  cv=5, cache=sys.argv[1], n_jobs=1, progress=False)
    """
)


def test_a_killed_run_resumes_and_refits_only_the_missing_fits(tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "run.py"
    script.write_text(_KILLED_RUN)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    tests = os.path.dirname(__file__)
    proc = subprocess.Popen([sys.executable, str(script), str(cache), tests], env=env)
    deadline = time.monotonic() + 120
    try:
        while len(list(cache.glob("*/*.json"))) < 10:
            assert proc.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "no fit files after 120 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = len(list(cache.glob("*/*.json")))
    total = 4 * 5 * 2
    assert 10 <= done < total
    SlowDummy.fits.clear()
    tables = [
        (f"t{i}", *make_classification(60, n_features=4, random_state=i))
        for i in range(4)
    ]
    result = compare_study(
        {"slow": SlowDummy(delay=0.1), "fast": SlowDummy()},
        tables,
        cv=5,
        cache=cache,
        n_jobs=1,
        progress=False,
    )
    assert len(SlowDummy.fits) == total - done
    assert result.n_cached == done
    assert len(list(cache.glob("*/*.json"))) == total
    assert not list(cache.glob("*/.*.tmp"))
    assert len(result) == total


def test_partial_cache_files_are_refitted(tmp_path):
    tables = _tables(1)
    compare_study(MODELS, tables, cv=2, cache=tmp_path, progress=False)
    files = sorted(tmp_path.glob("*/*.json"))
    files[0].write_text('{"scores": ')  # cut off by a crash
    result = compare_study(MODELS, tables, cv=2, cache=tmp_path, progress=False)
    assert result.n_cached == len(files) - 1


def test_result_round_trips_through_csv(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        result = compare_study(
            {"failing": Failing(limit=45), **MODELS},
            _tables(),
            cv=2,
            scoring=["accuracy", "neg_log_loss"],
            progress=False,
        )
    path = tmp_path / "r.csv"
    result.to_csv(path)
    back = ComparisonResult.from_frame(pd.read_csv(path))
    assert back.tables == result.tables and back.models == result.models
    assert back.greater_is_better == result.greater_is_better
    pd.testing.assert_frame_equal(back.to_frame(), result.to_frame())
    pd.testing.assert_frame_equal(back.summary(), result.summary())


def test_progress_lines_count_only_the_fits_to_run(tmp_path, capsys):
    tables = _tables(1)
    compare_study(MODELS, tables, cv=2, cache=tmp_path, progress="lines")
    assert "compare: 4/4 fits" in capsys.readouterr().err
    compare_study(MODELS, tables, cv=2, cache=tmp_path, progress="lines")
    assert "fits" not in capsys.readouterr().err


def test_fraction_subsamples_are_nested_and_stratified():
    tables = _tables(1)
    result = compare_study(
        MODELS,
        tables,
        cv=KFold(3, shuffle=True, random_state=0),
        fractions=(0.25, 1.0),
        progress=False,
    )
    frame = result.to_frame()
    small = frame[frame["fraction"] == 0.25]["n_train"]
    full = frame[frame["fraction"] == 1.0]["n_train"]
    assert np.allclose(small.to_numpy(), np.round(full.to_numpy() * 0.25), atol=1)


def test_cache_keys_see_every_parameter_and_no_addresses():
    from sklearn import config_context
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    from cr_sklearn import CRClassifier
    from cr_sklearn.study._fit_cache import estimator_text

    def pipeline(**params):
        return make_pipeline(
            FunctionTransformer(np.log1p),
            StandardScaler(),
            CRClassifier(**params),
        )

    # scikit-learn shortens a long repr: some parameter's change is hidden in it.
    changes = {"dropout": 0.2, "weight_decay": 0.5, "beta_1": 0.8, "tol": 0.01}
    changes |= {"degree": 4, "validation_fraction": 0.2, "max_iter": 50}
    changes |= {"n_iter_no_change": 5, "batch_size": 32, "learning_rate_init": 0.01}
    with config_context(print_changed_only=False):
        hidden = {
            name: value
            for name, value in changes.items()
            if repr(pipeline(**{name: value})) == repr(pipeline())
        }
    assert hidden
    for name, value in hidden.items():
        assert estimator_text(pipeline(**{name: value})) != estimator_text(pipeline())
    assert estimator_text(pipeline(dropout=0.1)) == estimator_text(
        pipeline(dropout=0.1)
    )
    assert "0x" not in estimator_text(make_pipeline(FunctionTransformer(lambda x: x)))
