"""What a new user meets first: missing extras fail early with a hint, the
XGBoost stand-in is sane and labelled, studies show progress in a terminal
only, and the HTML diagram of a fitted estimator is readable."""

import io
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT
from joblib import delayed, parallel_config
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from cr_sklearn.datasets import load_pima
from cr_sklearn.study import (
    check_dependencies,
    data_fraction_study,
    default_baselines,
    factorial_study,
)
from cr_sklearn.study._engine import _ProgressBar, resolve_progress, run_tasks

# -- missing packages: at once, with the extra to install ---------------------


@pytest.mark.parametrize(
    "features, missing, hint",
    [
        (("tables",), ["pandas"], "cr_sklearn[study]"),
        (("tables", "plots"), ["pandas", "matplotlib"], "cr_sklearn[study]"),
        (("plots", "dask"), ["matplotlib", "dask"], "cr_sklearn[study,dask]"),
        (("xgboost",), ["xgboost"], "cr_sklearn[xgboost]"),
    ],
)
def test_check_dependencies_names_every_missing_package_and_extra(
    monkeypatch, features, missing, hint
):
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError) as info:
        check_dependencies(*features, purpose="cr-sklearn study")
    message = str(info.value)
    assert message.startswith("cr-sklearn study needs ")
    assert hint in message
    for name in missing:
        assert name in message


def test_a_blocked_package_hides_its_submodules_imported_before(monkeypatch):
    # find_spec returns an imported submodule's spec without looking at its
    # parent; the import itself would fail once the parent is blocked.
    import json.decoder  # noqa: F401  (imported: in sys.modules)

    from cr_sklearn.study._deps import _installed

    assert _installed("json.decoder")
    monkeypatch.setitem(sys.modules, "json", None)
    assert not _installed("json.decoder")
    assert not _installed("json")


def test_check_dependencies_passes_and_rejects_unknown_features():
    check_dependencies("tables", "plots", "progress")
    with pytest.raises(ValueError, match="Unknown features"):
        check_dependencies("pandas")


class _MustNotFit(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        raise AssertionError("a fit ran before the dependency check")


def test_progress_true_without_tqdm_fails_before_any_fit(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    X, y = load_pima(return_X_y=True)
    with pytest.raises(ImportError, match=r"tqdm.*cr_sklearn\[study\]"):
        data_fraction_study({"m": _MustNotFit()}, X, y, cv=2, progress=True)
    with pytest.raises(ImportError, match=r"tqdm"):
        factorial_study({"d": (X, y)}, seeds=[0], progress=True)
    # "auto" without tqdm: no bar, no error.
    assert resolve_progress("auto", "x") is False


def test_progress_must_be_a_bool_or_auto():
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="'auto'"):
            resolve_progress(bad, "data_fraction_study")


# -- progress="auto" ---------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _small_study(**kwargs):
    from sklearn.linear_model import LogisticRegression

    X, y = load_pima(return_X_y=True)
    return data_fraction_study(
        {"logreg": LogisticRegression(max_iter=500)},
        X,
        y,
        fractions=(0.5, 1.0),
        cv=2,
        **kwargs,
    )


def test_auto_progress_is_silent_in_a_pipe(capsys):
    pytest.importorskip("tqdm")
    _small_study()  # progress="auto" by default
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_auto_progress_shows_a_bar_in_a_terminal(monkeypatch):
    pytest.importorskip("tqdm")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert resolve_progress("auto", "x") is True
    _small_study()
    text = terminal.getvalue()
    assert "4/4 fits" in text and "study" in text


def _slow_then_fast(i):
    # The first tasks finish last: results arrive out of order.
    time.sleep(0.05 * (4 - i))
    return i * 10


def test_results_keep_the_task_order_when_fits_finish_out_of_order():
    tasks = [delayed(_slow_then_fast)(i) for i in range(5)]
    with parallel_config(backend="threading"):
        out = run_tasks(tasks, n_jobs=3, verbose=0, progress=False, desc="t")
    assert out == [0, 10, 20, 30, 40]


def test_time_left_is_estimated_from_completed_fits():
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    bar = _ProgressBar(total=10, desc="study", workers=2)
    bar.bar.fp = stream
    assert "after the first fit" in bar.bar.postfix
    # One fit of 1 s done, 9 left on 2 workers: 4.5 s, whatever the wall
    # time since the start (worker start-up).
    bar.update(1.0)
    assert bar.bar.postfix == "time left ~00:04"
    bar.close()


# -- the XGBoost stand-in ----------------------------------------------------


def test_stand_in_is_sane_on_a_tiny_fold(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    models = default_baselines(random_state=0)
    name = "HistGradientBoosting (XGBoost stand-in)"
    assert name in models
    X, y = load_pima(return_X_y=True)
    stand_in, default = [], []
    for seed in range(8):
        # 31 training rows: a 5% Pima training fold.
        train, test = train_test_split(
            np.arange(len(y)), train_size=31, stratify=y, random_state=seed
        )
        clf = clone(models[name]).fit(X[train], y[train])
        assert clf.min_samples_leaf_ == 3
        assert clf.predict_proba(X[test]).shape == (len(test), 2)
        stand_in.append(clf.score(X[test], y[test]))
        hgb = HistGradientBoostingClassifier(random_state=0).fit(X[train], y[train])
        default.append(hgb.score(X[test], y[test]))
    # scikit-learn's default (20 rows a leaf) predicts the majority class.
    assert np.ptp(default) < 0.01
    assert np.mean(stand_in) > np.mean(default) + 0.02
    big = models[name].fit(X, y)
    assert big.min_samples_leaf_ == 20  # scikit-learn's default from 200 rows


def test_stand_in_note_is_one_clean_line():
    code = (
        "import sys; sys.modules['xgboost'] = None\n"
        "from cr_sklearn.study import default_baselines\n"
        "default_baselines()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "xgboost is not installed" in lines[0]
    assert "cr_sklearn[xgboost]" in lines[0]
    assert "Warning" not in lines[0] and ".py" not in lines[0]


# -- the HTML diagram --------------------------------------------------------


def test_estimators_use_the_readable_html_repr():
    from cr_sklearn import CRClassifier, CROrdinalRegressor
    from cr_sklearn._html_repr import FittedAttributesHTMLMixin

    for cls in (CRClassifier, CROrdinalRegressor):
        assert issubclass(cls, FittedAttributesHTMLMixin), (
            f"{cls.__name__}: BaseCR (cr_sklearn/_base.py) must list "
            "FittedAttributesHTMLMixin first among its bases"
        )


@pytest.mark.parametrize("name", ["CRClassifier", "CROrdinalRegressor"])
def test_fitted_net_and_module_render_readably(name):
    pytest.importorskip("sklearn", minversion="1.8")
    from conftest import FAST
    from sklearn.datasets import make_classification

    import cr_sklearn

    cls = getattr(cr_sklearn, name)
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    est = cls(**{**FAST, "max_iter": 3, "hidden_layer_sizes": (8, 4)})
    html = est.fit(X, y)._repr_html_()
    assert "3 epochs on cpu" in html
    assert "hidden (8, 4), " in html and " params" in html
    assert "skorch NeuralNet" in html
    # No fragment of the multi-line reprs.
    assert "&lt;class" not in html and "ModuleList" not in html
    # No documentation link: setup.cfg records no documentation URL.
    assert est._get_doc_link() == ""


# -- warnings once, progress lines in a log (issue 37 items 3, 4) --------------------
class _Warns(ClassifierMixin, BaseEstimator):
    """Warns in every fit, as a CR fit on too few rows for its bins does."""

    def fit(self, X, y):
        import warnings

        warnings.warn("column 3 has too few values", UserWarning, stacklevel=2)
        self.classes_ = np.unique(y)
        self.majority_ = self.classes_[np.argmax(np.unique(y, return_counts=True)[1])]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_each_warning_of_the_fits_is_shown_once_with_its_count(n_jobs, recwarn):
    X, y = load_pima(return_X_y=True)
    data_fraction_study(
        {"m": _Warns()}, X, y, fractions=(0.5, 1.0), cv=3, n_jobs=n_jobs
    )
    shown = [str(w.message) for w in recwarn if "too few values" in str(w.message)]
    assert shown == ["column 3 has too few values (in 6 of 6 fits)"]


def test_progress_lines_for_logs_and_pipes(capsys):
    assert resolve_progress("lines", "x") == "lines"
    _small_study(progress="lines")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("study: 1/4 fits (25%), ") and "time left ~" in err[0]
    assert err[-1].startswith("study: 4/4 fits in ")
    # At most one line per interval between the first and the last.
    assert len(err) == 2
