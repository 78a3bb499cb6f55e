"""Seeded fixtures shared by the test modules."""

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier
from cr_sklearn.datasets import load_pima

# The nets under test are tiny: extra intra-op threads only add synchronisation,
# and on a shared machine oversubscribed threads slow each op by 10-100x.
torch.set_num_threads(1)

#: The repository root. A subprocess that imports the package runs here (with
#: ``cwd=ROOT``), so that it imports this checkout's code, as the tests do.
ROOT = Path(__file__).resolve().parents[1]
#: The benchmark scripts: not a package, imported by path.
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(autouse=True)
def _work_outside_the_checkout(tmp_path_factory, monkeypatch):
    """Run every test in an empty folder of its own.

    Whatever a test writes to a relative path (the command's default output
    folder, say) lands there, never in the checkout.
    """
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


def load_benchmark(stem):
    """Import ``benchmarks/<stem>.py``, its sibling modules importable.

    The benchmarks folder goes on ``sys.path`` (its modules import each other
    by name), so that every test shares one module object per script.
    """
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(stem)


# --------------------------------------------------------------------------
# The project's shared data folder
# --------------------------------------------------------------------------

#: ``../shared/data`` beside the repository root: local copies of the data
#: sets that are not bundled (SST-5, Yelp). A user's clone usually lacks it.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Set to 1 (as ``.ci/run`` does) to fail, not skip, when the folder is missing.
REQUIRE_DATA_ENV = "CR_SKLEARN_REQUIRE_DATA"

# A test (or a parameter) that reads ``../shared/data/<name>`` is marked
# ``@pytest.mark.shared_data("<name>", ...)``: without the folder it is skipped
# with a reason naming it, or fails when CR_SKLEARN_REQUIRE_DATA=1. The checks
# below are the only place that decides.


def _check_shared_data(names):
    missing = [n for n in names if not (SHARED_DATA / n).is_dir()]
    if not missing:
        return
    folders = ", ".join(f"../shared/data/{n}" for n in missing)
    reason = f"needs {folders} (the project's shared data folder)"
    if os.environ.get(REQUIRE_DATA_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_DATA_ENV}=1", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "shared_data(*names): reads ../shared/data/<name>; skipped without it "
        f"unless {REQUIRE_DATA_ENV}=1 (see tests/conftest.py)",
    )


def pytest_runtest_setup(item):
    names = [n for mark in item.iter_markers("shared_data") for n in mark.args]
    if names:
        _check_shared_data(names)


@pytest.fixture
def shared_data_home(request):
    """The shared data folder, for tests marked ``shared_data``."""
    if request.node.get_closest_marker("shared_data") is None:
        raise RuntimeError(
            "shared_data_home needs @pytest.mark.shared_data(<folder>) on the test"
        )
    return SHARED_DATA


# --------------------------------------------------------------------------
# Fast settings and seeded data
# --------------------------------------------------------------------------

#: The one set of fast settings for tests that need a fitted estimator, not a
#: good one: a small net, few epochs and a larger step than the default (the
#: problems here are one or two batches an epoch). Test modules import it
#: (``from conftest import FAST``) and state what a test needs on top of it,
#: ``CRClassifier(**{**FAST, "max_iter": 50})``; never change it in place.
FAST = dict(
    hidden_layer_sizes=(8,), max_iter=20, learning_rate_init=1e-2, random_state=0
)


def narrow_test_fold():
    """A table, labels and a split whose test rows are narrow in column 0 only.

    The first column's spread in the test fold differs from the training
    fold's far more than the other columns': tau by the test fold's spreads
    (the one rule of ``gradient_norms``) and by the training fold's (an
    estimator's default scale) tell apart.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    test = np.flatnonzero(np.abs(X[:, 0]) < 0.4)[:60]
    train = np.setdiff1d(np.arange(len(X)), test)
    return X, y, train, test


def make_ordinal_data(n=240, seed=0, n_features=4):
    """A seeded ordinal problem: codes 0..3 cut from a noisy linear latent."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, n_features))
    latent = 1.5 * X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=n)
    y = np.digitize(latent, [-1.5, 0.0, 1.5])  # codes 0..3, ordered
    return X, y


@pytest.fixture(scope="session")
def binary_data():
    """A seeded two-class problem, 200 rows and 4 features; read-only."""
    return make_classification(
        n_samples=200, n_features=4, n_informative=3, n_redundant=0, random_state=0
    )


@pytest.fixture(scope="session")
def multiclass_data():
    """A seeded three-class problem with string labels; read-only."""
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 1.0, 0.0], [0.0, 3.0, 0, 1.0]])
    labels = np.array(["ant", "bee", "cat"])
    codes = rng.randint(3, size=240)
    X = centers[codes] + rng.normal(size=(240, 4))
    return X, labels[codes]


@pytest.fixture(scope="session")
def ordinal_data():
    """``make_ordinal_data()``: 240 rows, 4 features, ordered codes 0..3; read-only."""
    return make_ordinal_data()


@pytest.fixture(scope="session")
def pima():
    """The bundled Pima data as ``(X, y)`` (raw, unscaled features)."""
    return load_pima(return_X_y=True)


@pytest.fixture(scope="session")
def pima_frame():
    """The bundled Pima data as ``(DataFrame, Series)``."""
    pytest.importorskip("pandas")
    return load_pima(return_X_y=True, as_frame=True)


@pytest.fixture(scope="session")
def fitted_pima(pima):
    """A CRClassifier fitted on raw Pima with fast settings; read-only."""
    X, y = pima
    # Early stopping on: tests read the validation attributes.
    return CRClassifier(**{**FAST, "early_stopping": True}).fit(X, y)


@pytest.fixture(scope="session")
def fitted_multiclass(multiclass_data):
    """A CRClassifier fitted on ``multiclass_data``; read-only."""
    return CRClassifier(**FAST).fit(*multiclass_data)
