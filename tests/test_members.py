"""Cross-fitted members: n_members, the out-of-fold epoch and oob_score."""

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import FAST, ROOT
from sklearn.base import BaseEstimator
from sklearn.datasets import make_classification
from skorch.callbacks import Callback

import cr_sklearn._members as members
from cr_sklearn import CRClassifier, CROrdinalRegressor, DepthGrowth
from cr_sklearn._members import member_folds, member_rows

MEMBERS = {**FAST, "n_members": 3}
# FAST's 20 epochs end while the members still improve: a warning by design.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=150, n_classes=2, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=5,
        n_informative=3,
        n_redundant=0,
        n_classes=n_classes,
        random_state=seed,
    )
    return X, y


def _ordinal_data(n=150, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n), [-1, 0, 1])
    return X, y


def _fixed_folds(monkeypatch, fold):
    """Make every member fit use ``fold`` as its folds."""
    monkeypatch.setattr(members, "member_folds", lambda y, k, seed: fold.copy())


def _member_states(model):
    """Each member's trained layers (the training network's)."""
    layers = model.net_.module_
    return [layers.member(m).state_dict() for m in range(layers.n_members)]


def _equal(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


# -- folds and weights ---------------------------------------------------------


def test_folds_are_stratified_and_fall_back_to_plain_folds():
    y = np.repeat([0, 1], [40, 20])
    fold = member_folds(y, 4, seed=0)
    assert sorted(np.unique(fold)) == [0, 1, 2, 3]
    for m in range(4):  # every fold has a quarter of each class
        assert np.bincount(y[fold == m]).tolist() == [10, 5]
    np.testing.assert_array_equal(fold, member_folds(y, 4, seed=0))
    rare = np.array([0] * 20 + [1] * 2)  # a class with fewer rows than folds
    fold = member_folds(rare, 4, seed=0)
    assert np.bincount(fold).min() >= 5


def test_too_few_samples_for_the_members_raise():
    with pytest.raises(ValueError, match="n_members=5 needs at least 5 samples"):
        member_folds(np.array([0, 1, 0, 1]), 5, seed=0)
    X, y = _data(n=4)
    with pytest.raises(ValueError, match="at least 5 samples"):
        CRClassifier(**{**MEMBERS, "n_members": 5}).fit(X, y)


def test_member_weights_hold_out_the_fold_and_keep_mean_one(monkeypatch):
    fold = np.array([0, 1, 2, 0, 1, 2])
    weight = np.array([1.0, 2.0, 1.0, 3.0, 1.0, 1.0])
    _fixed_folds(monkeypatch, fold)
    codes = np.zeros(6, dtype=int)
    rows = member_rows("folds", codes, weight, 0, n_members=3)
    train, held = rows.train, rows.held
    assert train.shape == held.shape == (6, 3)
    np.testing.assert_array_equal(rows.fold, fold)
    np.testing.assert_allclose(train.mean(axis=0), 1.0)
    for m in range(3):
        assert np.all(train[fold == m, m] == 0) and np.all(train[fold != m, m] > 0)
        # Held-out weights: the sample weights, in units of the largest.
        np.testing.assert_array_equal(held[:, m], weight / 3.0 * (fold == m))
    with pytest.raises(ValueError, match="positive weight"):
        member_rows("folds", codes, weight * (fold == 0), 0, n_members=3)
    # One network: every row trains it, or all but a held-out share.
    one = member_rows("all", codes, weight, 0)
    assert one.held is None and one.train.shape == (6, 1)
    y = np.array([0, 1] * 10)
    held_out = member_rows("hold-out", y, np.ones(20), 0, validation_fraction=0.2)
    assert (held_out.held[:, 0] > 0).sum() == 4
    assert np.all((held_out.held[:, 0] > 0) != (held_out.train[:, 0] > 0))


# -- training ------------------------------------------------------------------


def test_a_members_held_out_labels_do_not_touch_it(monkeypatch):
    X, y = _data()
    fold = np.arange(len(y)) % 3
    _fixed_folds(monkeypatch, fold)
    params = {**MEMBERS, "early_stopping": False}
    a = CRClassifier(**params).fit(X, y)
    changed = y.copy()
    changed[fold == 0] = 1 - changed[fold == 0]  # every label of fold 0 flipped
    b = CRClassifier(**params).fit(X, changed)
    first, second = _member_states(a), _member_states(b)
    assert _equal(first[0], second[0])  # member 0 never trains on fold 0
    assert not _equal(first[1], second[1])  # members 1 and 2 do
    assert not _equal(first[2], second[2])


def test_the_members_differ_and_share_the_input_transform():
    X, y = _data()
    model = CRClassifier(**MEMBERS).fit(X, y)
    states = _member_states(model)
    assert not _equal(states[0], states[1])
    assert model.module_.n_members == 3
    assert model.n_iter_ == len(model.loss_curve_)


class _Record(Callback):
    """The module after every epoch (before any best-epoch restore)."""

    def __init__(self, log):
        self.log = log

    def on_epoch_end(self, net, **kwargs):
        self.log.append(copy.deepcopy(net.module_))


def _overfitting_fit(**params):
    # Noisy labels and a large step: each member's out-of-fold loss turns up.
    X, y = _data(n=90, seed=1)
    y = np.where(np.random.RandomState(0).rand(len(y)) < 0.3, 1 - y, y)
    log = []
    model = CRClassifier(
        hidden_layer_sizes=(32, 32),
        learning_rate_init=0.03,
        max_iter=80,
        n_iter_no_change=5,
        n_members=4,
        random_state=0,
        callbacks=[_Record(log)],
        **params,
    ).fit(X, y)
    return model, log


def test_each_member_keeps_its_own_best_epoch():
    model, log = _overfitting_fit()
    best = model.best_epochs_
    assert best.shape == (4,) and model.best_epoch_ == best.max()
    assert model.n_iter_ == len(log) and np.all(best <= model.n_iter_)
    assert len(set(best.tolist())) > 1, best  # the members stopped apart
    losses = np.array(model.net_.history[:, "member_valid_loss"])
    np.testing.assert_array_equal(best, losses.argmin(axis=0) + 1)
    for m, epoch in enumerate(best):  # member m as it was after its best epoch
        assert _equal(
            model.net_.module_.member(m).state_dict(),
            log[epoch - 1].member(m).state_dict(),
        )


def test_a_fixed_budget_trains_every_epoch_and_chooses_none():
    X, y = _data()
    model = CRClassifier(**{**MEMBERS, "early_stopping": False, "max_iter": 7})
    model.fit(X, y)
    assert model.early_stopping_ == "off" and model.n_iter_ == 7
    assert model.best_epochs_ is None and model.best_epoch_ is None
    assert model.cv_validation_loss_.shape == (7,)


def test_the_out_of_fold_epoch_ignores_the_hold_out_parameters():
    X, y = _data()
    model = CRClassifier(**{**MEMBERS, "early_stopping": True}).fit(X, y)
    assert model.early_stopping_ == "cv" and model.validation_scores_ is None
    # max_iter="auto" counts optimizer steps, as with early_stopping="cv":
    # 150 rows, one step an epoch, 2,000 steps.
    auto = CRClassifier(**{**MEMBERS, "max_iter": "auto"}).fit(X, y)
    assert auto.early_stopping_ == "cv" and auto.max_iter_ == 2000


def test_seeded_member_fits_are_reproducible():
    X, y = _data()
    a = CRClassifier(**MEMBERS).fit(X, y).predict_proba(X)
    b = CRClassifier(**MEMBERS).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


# -- outputs -------------------------------------------------------------------


def _member_probas(model, X):
    """Each member's probabilities, from its network alone."""
    x = torch.as_tensor(X, dtype=torch.float64)
    out = []
    for m in range(model.module_.n_members):
        net = model.module_.member(m).double().eval()
        with torch.no_grad():
            z = net(x)
        if z.shape[1] == 1:
            p = torch.sigmoid(z)
            z = torch.cat([1 - p, p], dim=1)
        else:
            z = torch.softmax(z, dim=1)
        out.append(z.numpy())
    return np.stack(out)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_probabilities_are_the_members_mean(n_classes):
    X, y = _data(n_classes=n_classes)
    model = CRClassifier(**MEMBERS).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba, _member_probas(model, X).mean(axis=0), atol=1e-7)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    scores = model.decision_function(X)
    if n_classes == 2:
        # The logit of the averaged probability.
        np.testing.assert_allclose(1 / (1 + np.exp(-scores)), proba[:, 1], atol=1e-12)
    else:
        np.testing.assert_allclose(
            np.exp(scores) / np.exp(scores).sum(1, keepdims=True), proba, atol=1e-12
        )
    np.testing.assert_array_equal(model.predict(X), model.classes_[proba.argmax(1)])
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), proba, atol=1e-12)


def test_ordinal_members_average_the_cumulative_probabilities():
    X, y = _ordinal_data()
    model = CROrdinalRegressor(**MEMBERS).fit(X, y)
    assert model.cutpoints_.shape == (3, 3)
    assert np.all(np.diff(model.cutpoints_, axis=1) > 0)
    x = torch.as_tensor(X, dtype=torch.float64)
    cums = []
    for m in range(3):
        with torch.no_grad():
            eta = model.module_.member(m).double().eval()(x)[:, 0].numpy()
        cums.append(1 / (1 + np.exp(-(model.cutpoints_[m][None, :] - eta[:, None]))))
    cum = np.mean(cums, axis=0)
    np.testing.assert_allclose(
        model.predict_cumulative_proba(X)[:, :-1], cum, atol=1e-9
    )
    proba = model.predict_proba(X)
    np.testing.assert_allclose(np.diff(cum, axis=1), proba[:, 1:-1], atol=1e-9)
    assert np.all(np.diff(model.predict_cumulative_proba(X), axis=1) >= 0)
    # The expected rank: consistent with predict_proba.
    np.testing.assert_allclose(model.predict_latent(X), proba @ np.arange(4), atol=1e-9)
    median = (model.predict_cumulative_proba(X) < 0.5).sum(1)
    np.testing.assert_array_equal(model.predict(X), model.classes_[median])


# -- oob_score -----------------------------------------------------------------


@pytest.mark.parametrize("estimator", [CRClassifier, CROrdinalRegressor])
def test_oob_rows_come_from_the_member_that_held_them_out(estimator, monkeypatch):
    X, y = _ordinal_data()
    fold = np.random.RandomState(0).permutation(len(y)) % 3
    _fixed_folds(monkeypatch, fold)
    model = estimator(**MEMBERS, oob_score=True).fit(X, y)
    proba = model._member_proba(model._outputs(X))
    oob = model.oob_decision_function_
    assert oob.shape == (len(y), len(model.classes_))
    for m in range(3):
        np.testing.assert_array_equal(oob[fold == m], proba[m][fold == m])
    codes = np.searchsorted(model.classes_, y)
    if estimator is CRClassifier:
        assert model.oob_score_ == np.mean(oob.argmax(1) == codes)
    else:  # the negative MAE of the median class
        median = (np.cumsum(oob, axis=1)[:, :-1] < 0.5).sum(1)
        assert model.oob_score_ == -np.mean(np.abs(median - codes))


def test_oob_score_needs_members_and_is_dropped_by_a_later_fit():
    X, y = _data()
    with pytest.raises(ValueError, match="oob_score=True needs n_members > 1"):
        CRClassifier(**FAST, oob_score=True).fit(X, y)
    model = CRClassifier(**MEMBERS, oob_score=True).fit(X, y)
    assert hasattr(model, "oob_score_")
    model.set_params(oob_score=False).fit(X, y)
    assert not hasattr(model, "oob_score_")
    assert not hasattr(model, "oob_decision_function_")


# -- what members do not do ------------------------------------------------------


def test_partial_fit_and_warm_start_raise_with_members():
    X, y = _data()
    assert not hasattr(CRClassifier(**MEMBERS), "partial_fit")
    assert not hasattr(CROrdinalRegressor(**MEMBERS), "partial_fit")
    with pytest.raises(AttributeError, match="partial_fit"):
        CRClassifier(**MEMBERS).partial_fit(X, y, classes=[0, 1])
    model = CRClassifier(**MEMBERS).fit(X, y)
    before = model.predict_proba(X)
    # A fitted member model, asked for one network's partial_fit: it has none.
    with pytest.raises(AttributeError, match="partial_fit") as raised:
        model.set_params(n_members=1).partial_fit(X, y)
    assert "partial_fit is not available" in str(raised.value.__cause__)
    model.set_params(n_members=3)
    with pytest.raises(ValueError, match="warm_start=True is not available"):
        model.set_params(warm_start=True).fit(X, y)
    # A fitted member model under warm_start with n_members=1: also refused.
    with pytest.raises(ValueError, match="warm_start=True is not available"):
        model.set_params(n_members=1).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), before)


def test_depth_growth_refuses_members():
    X, y = _data()
    base_model = CRClassifier(**MEMBERS, architecture="residual")
    with pytest.raises(ValueError, match="DepthGrowth grows one network"):
        DepthGrowth(base_model).fit(X, y)


def test_html_repr_shows_n_members():
    X, y = _data()
    model = CRClassifier(**MEMBERS).fit(X, y)
    html = model._repr_html_()
    assert "n_members" in html
    # The fitted-attribute table: newer scikit-learn than 1.6 draws it.
    if hasattr(BaseEstimator, "_get_fitted_attr_html"):
        assert "3 members of (8,)" in html


def test_n_members_is_validated():
    X, y = _data()
    for bad in (0, 1.5, "3"):
        with pytest.raises(ValueError, match="n_members"):
            CRClassifier(**{**FAST, "n_members": bad}).fit(X, y)
    for bad in (0, "3"):  # partial_fit exists, its validation names the parameter
        with pytest.raises(ValueError, match="n_members"):
            CRClassifier(**{**FAST, "n_members": bad}).partial_fit(X, y, [0, 1])
    with pytest.raises(ValueError, match="igpen_lambda > 0 is not available"):
        CRClassifier(**MEMBERS, igpen_lambda=0.1).fit(X, y)
    with pytest.raises(ValueError, match="spectral_norm"):
        CRClassifier(**MEMBERS, spectral_norm=True).fit(X, y)


@pytest.mark.parametrize("estimator", [CRClassifier, CROrdinalRegressor])
def test_residual_members_with_dropout_fit_and_predict(estimator):
    X, y = _ordinal_data()
    params = {**MEMBERS, "architecture": "residual", "hidden_layer_sizes": (8, 8)}
    model = estimator(**params, dropout=0.2, oob_score=True).fit(X, y)
    assert model.module_.n_members == 3 and model.best_epochs_.shape == (3,)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    members = model._member_proba(model._outputs(X))
    np.testing.assert_allclose(proba, members.mean(axis=0), atol=1e-12)


# -- prediction memory -------------------------------------------------------

# Fits a 5-member model of 50 classes on a few rows, then reports, for each
# head, the growth of the process's peak memory while predict_proba runs on
# n_rows rows, and the bytes of the probabilities it returns.
_PEAK_MEMORY = """
import gc, json, resource, sys
import numpy as np
from cr_sklearn import CRClassifier, CROrdinalRegressor


def peak():
    try:  # Linux: the peak since it was last reset, in bytes
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))
    except (OSError, StopIteration):
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def reset():
    try:  # Linux: reset the peak to the current size
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # ru_maxrss: growth above the peak so far


n_rows = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.normal(size=(500, 10))
y = np.arange(500) % 50
rows = rng.normal(size=(n_rows, 10))
report = {}
for estimator in (CRClassifier, CROrdinalRegressor):
    model = estimator((8,), max_iter=1, n_members=5, random_state=0).fit(X, y)
    model.predict_proba(rows[:10])
    gc.collect()
    reset()
    before = peak()
    proba = model.predict_proba(rows)
    report[estimator.__name__] = [peak() - before, proba.nbytes]
    del proba
print(json.dumps(report))
"""


def _prediction_memory(n_rows):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env["PYTHONWARNINGS"] = "ignore"
    run = subprocess.run(
        [sys.executable, "-c", _PEAK_MEMORY, str(n_rows)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def _check_prediction_memory(n_rows):
    # The members are averaged chunk by chunk: predict_proba grows the process
    # by little more than its result (and its logarithm), for both heads.
    for name, (growth, nbytes) in _prediction_memory(n_rows).items():
        assert nbytes == n_rows * 50 * 8
        assert growth <= 3 * nbytes + 50 * 2**20, (name, growth / 2**20)


def test_a_member_models_predict_proba_grows_memory_by_about_its_result():
    _check_prediction_memory(20_000)


@pytest.mark.slow
def test_a_member_models_predict_proba_on_100k_rows_and_50_classes():
    _check_prediction_memory(100_000)
