"""The plan of a fit: every "auto" resolved by the data's shape, once.

How long a fit trains (early_stopping="auto", internal CV, max_iter="auto"),
the network's resolved settings and the thread rule.
"""

import copy
import math
import warnings

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.exceptions import ConvergenceWarning
from skorch.callbacks import Callback

import cr_sklearn._fit as base
from cr_sklearn import CRClassifier, CROrdinalRegressor
from cr_sklearn._plan import (
    AUTO_HOLD_OUT_MIN_SAMPLES,
    AUTO_LARGE_SAMPLES,
    AUTO_MAX_EPOCHS,
    AUTO_MAX_STEPS,
    AUTO_MEMBERS,
    CV_FOLDS,
    FitPlan,
    max_epochs_rule,
    members_rule,
    resolve_plan,
)

CV_SPLITS = CV_FOLDS


def _plan(est, n, n_features, *, incremental=False):
    """The plan ``est`` resolves on data of this shape."""
    return resolve_plan(est, n, n_features, 1, device="cpu", incremental=incremental)


CV = dict(early_stopping="cv", max_iter="auto", learning_rate_init=1e-2, random_state=0)


def _data(n=150, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3).astype(int)
    return X, y


@pytest.mark.parametrize(
    ("early_stopping", "n", "mode"),
    [
        ("cv", 150, "cv"),
        ("cv", 5000, "cv"),
        ("auto", AUTO_HOLD_OUT_MIN_SAMPLES - 1, "off"),
        ("auto", AUTO_HOLD_OUT_MIN_SAMPLES, "hold-out"),
        (True, 150, "hold-out"),
        (False, 150, "off"),
    ],
)
def test_early_stopping_resolves_by_the_size_of_the_data(early_stopping, n, mode):
    est = CRClassifier(early_stopping=early_stopping)
    for n_features in (4, 384):  # the classifier's rule ignores the width
        assert _plan(est, n, n_features).stopping == mode
        plan = _plan(est, n, n_features, incremental=True)
        assert (plan.stopping, plan.max_epochs) == ("off", 1)


@pytest.mark.parametrize(
    ("n", "n_features", "mode"),
    [
        (AUTO_HOLD_OUT_MIN_SAMPLES - 1, 100, "off"),
        (AUTO_HOLD_OUT_MIN_SAMPLES - 1, 101, "hold-out"),
        (150, 384, "hold-out"),
        (AUTO_HOLD_OUT_MIN_SAMPLES, 4, "hold-out"),
    ],
)
def test_ordinal_auto_holds_out_on_wide_inputs_at_any_size(n, n_features, mode):
    est = CROrdinalRegressor(n_members=1)
    assert est.early_stopping == "auto"
    assert _plan(est, n, n_features).stopping == mode
    assert _plan(est, n, n_features, incremental=True).stopping == "off"


@pytest.mark.parametrize(
    ("n_members", "n", "one_network", "members"),
    [
        ("auto", AUTO_LARGE_SAMPLES - 1, False, 1),
        ("auto", AUTO_LARGE_SAMPLES, False, AUTO_MEMBERS),
        ("auto", 10 * AUTO_LARGE_SAMPLES, True, 1),
        (3, 10, True, 3),  # a count is the user's, checked by the fit
    ],
)
def test_members_auto_is_four_from_a_thousand_rows(n_members, n, one_network, members):
    assert members_rule(n_members, n, one_network) == members


@pytest.mark.parametrize(
    ("est", "n", "n_features", "bins", "members"),
    [
        # The ordinal head: round C's D (16 bins, 4 members) from 1,000 rows.
        (CROrdinalRegressor(), AUTO_LARGE_SAMPLES - 1, 8, None, 1),
        (CROrdinalRegressor(), AUTO_LARGE_SAMPLES, 8, 16, AUTO_MEMBERS),
        (CROrdinalRegressor(), AUTO_LARGE_SAMPLES, 384, None, AUTO_MEMBERS),
        (CROrdinalRegressor(warm_start=True), 5000, 8, 16, 1),
        (CROrdinalRegressor(igpen_lambda=0.1), 5000, 8, 16, 1),
        (CROrdinalRegressor(spectral_norm=True), 5000, 8, 16, 1),
        # The classifier: 4 bins at every size, one network unless asked.
        (CRClassifier(), AUTO_LARGE_SAMPLES - 1, 8, 4, 1),
        (CRClassifier(), 5000, 8, 4, 1),
        (CRClassifier(n_members="auto"), 5000, 8, 4, AUTO_MEMBERS),
        (CRClassifier(n_members="auto"), 5000, 101, None, AUTO_MEMBERS),
    ],
)
def test_auto_bins_and_members_follow_the_rows_and_the_head(
    est, n, n_features, bins, members
):
    plan = _plan(est, n, n_features)
    assert (plan.encoding_bins, plan.n_members) == (bins, members)
    assert plan.stopping == ("cv" if members > 1 else plan.stopping)
    # partial_fit trains one network, whatever the rows.
    assert _plan(est, n, n_features, incremental=True).n_members == 1


def test_ordinal_defaults_train_members_from_a_thousand_rows(tmp_path):
    from cr_sklearn import load_model, save_model

    rng = np.random.default_rng(0)
    X = rng.standard_normal((AUTO_LARGE_SAMPLES, 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(len(X)), [-0.5, 0.5])
    reg = CROrdinalRegressor((8,), max_iter=2, random_state=0).fit(X, y)
    assert (reg.n_members_, reg.encoding_bins_) == (AUTO_MEMBERS, 16)
    assert reg.cutpoints_.shape == (AUTO_MEMBERS, 2)
    assert reg.module_.n_members == AUTO_MEMBERS
    # A member model does not continue batch by batch, and says why.
    assert not hasattr(reg, "partial_fit")
    with pytest.raises(AttributeError, match="partial_fit") as raised:
        reg.partial_fit(X[:10], y[:10])
    assert "'auto' from 1,000 rows" in str(raised.value.__cause__)
    save_model(reg, tmp_path / "m.crm")
    loaded = load_model(tmp_path / "m.crm")
    assert loaded.n_members_ == AUTO_MEMBERS
    np.testing.assert_array_equal(loaded.predict_proba(X), reg.predict_proba(X))
    # Below 1,000 rows: one network, no encoding, and no out-of-fold rows.
    small = CROrdinalRegressor((8,), max_iter=2, random_state=0).fit(X[:999], y[:999])
    assert (small.n_members_, small.encoding_bins_) == (1, None)
    assert small.cutpoints_.shape == (2,)
    with pytest.raises(ValueError, match="n_members='auto' chose one network"):
        small.set_params(oob_score=True).fit(X[:999], y[:999])


@pytest.mark.parametrize("first", [200, AUTO_LARGE_SAMPLES + 200])
@pytest.mark.parametrize("continuing", ["partial_fit", "warm_start"])
def test_a_continued_fit_keeps_the_auto_network_of_its_first_call(first, continuing):
    # The ordinal "auto" bins depend on the rows: a later call on the other
    # side of 1,000 rows continues the network, not re-sizes it.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((AUTO_LARGE_SAMPLES + 200, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    later = 200 if first > 200 else len(X)
    reg = CROrdinalRegressor((8,), max_iter=2, random_state=0)
    if continuing == "partial_fit":
        reg.partial_fit(X[:first], y[:first], classes=[0, 1, 2])
        bins = reg.encoding_bins_
        reg.partial_fit(X[:later], y[:later])
    else:
        reg.set_params(warm_start=True).fit(X[:first], y[:first])
        bins = reg.encoding_bins_
        reg.fit(X[:later], y[:later])
    # partial_fit and warm_start train one network: the bins of the first
    # call's rows, kept.
    assert bins == (16 if first >= AUTO_LARGE_SAMPLES else None)
    assert (reg.encoding_bins_, reg.n_members_) == (bins, 1)
    # A parameter the user changes is still refused.
    with pytest.raises(ValueError, match="cannot change under warm_start"):
        reg.set_params(encoding_bins=8, warm_start=True).fit(X[:later], y[:later])


def test_ordinal_fit_resolves_auto_by_the_width_of_x():
    rng = np.random.default_rng(0)
    y = np.arange(120) % 3
    narrow = rng.standard_normal((120, 4)) + y[:, None]
    wide = rng.standard_normal((120, 101)) + y[:, None]
    reg = CROrdinalRegressor((4,), max_iter=3, random_state=0)
    assert reg.fit(narrow, y).early_stopping_ == "off"
    assert reg.n_iter_ == 3
    assert reg.fit(wide, y).early_stopping_ == "hold-out"
    assert np.isfinite(reg.net_.history[-1, "valid_loss"])


def test_max_iter_auto_is_a_step_budget_with_internal_cv():
    assert max_epochs_rule("auto", "cv", 1) == AUTO_MAX_STEPS
    assert max_epochs_rule("auto", "cv", 3) == math.ceil(AUTO_MAX_STEPS / 3)
    assert max_epochs_rule("auto", "off", 3) == AUTO_MAX_EPOCHS
    assert max_epochs_rule("auto", "hold-out", 50) == AUTO_MAX_EPOCHS
    assert max_epochs_rule(7, "cv", 1) == 7
    # On 600 rows in batches of 200: three steps an epoch.
    plan = _plan(CRClassifier(max_iter="auto", early_stopping="cv"), 600, 4)
    assert plan.max_epochs == math.ceil(AUTO_MAX_STEPS / 3)


def test_the_plan_is_frozen_and_its_network_fields_are_plain():
    plan = _plan(CRClassifier(), 300, 5)
    assert isinstance(plan, FitPlan)
    with pytest.raises(AttributeError):
        plan.batch_size = 3
    values = plan.network_values()
    assert values["hidden"] == (64, 64) and values["encoding_bins"] == 4
    assert values["dropout"] == 0.3 and values["dtype"] == "float32"
    wide = _plan(CRClassifier(), 300, 384)
    assert (wide.encoding_bins, wide.dropout) == (None, 0.1)


class _Starts(Callback):
    """Record each run's starting weights and its epoch count."""

    def __init__(self, log):
        self.log = log

    def on_train_begin(self, net, **kwargs):
        self.log.append(copy.deepcopy(net.module_))


def _spy_runs(monkeypatch):
    starts = []
    original = base.make_net

    def build(*args, **kwargs):
        net = original(*args, **kwargs)
        net.callbacks_.append(("spy", _Starts(starts).initialize()))
        return net

    monkeypatch.setattr(base, "make_net", build)
    return starts


def _layers(network):
    """The layers' parameters of a network, as float64 (no input transform)."""
    return {
        k: v.double()
        for k, v in network.state_dict().items()
        if k not in ("input_mean", "input_scale") and not k.startswith("encoding.")
    }


def _same(a, b):
    a, b = _layers(a), _layers(b)
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _members(stacked):
    """The members of the folds' stacked start, as single networks."""
    assert stacked.n_members == CV_SPLITS
    return [stacked.member(m) for m in range(CV_SPLITS)]


def test_internal_cv_picks_the_epoch_of_least_mean_validation_loss(monkeypatch):
    starts = _spy_runs(monkeypatch)
    X, y = _data()
    est = CRClassifier((8,), **CV).fit(X, y)
    assert est.early_stopping_ == "cv"
    curve = est.cv_validation_loss_
    assert curve.ndim == 1 and np.isfinite(curve).all()
    chosen = int(np.argmin(curve)) + 1
    # The returned model trained on all rows for exactly that many epochs.
    assert est.n_iter_ == len(est.loss_curve_) == est.best_epoch_ == chosen
    assert est.validation_scores_ is None
    # The folds train as the members of one run; each member and the final
    # run start from one and the same network.
    assert len(starts) == 2
    folds, final = starts
    assert all(_same(final, member) for member in _members(folds))
    assert est.max_iter_ == math.ceil(AUTO_MAX_STEPS / 1)  # 100 rows: one batch


def test_internal_cv_continues_a_warm_start(monkeypatch):
    X, y = _data()
    est = CRClassifier((8,), **CV).fit(X, y)
    first = est.n_iter_
    fitted = copy.deepcopy(est.module_)
    starts = _spy_runs(monkeypatch)
    est.set_params(warm_start=True).fit(X, y)
    # Every run of the warm fit starts from the fitted network, not afresh.
    folds, final = starts
    assert _same(fitted, final)
    assert all(_same(final, member) for member in _members(folds))
    assert est.n_iter_ == first + int(np.argmin(est.cv_validation_loss_)) + 1


def test_internal_runs_are_silent_and_skip_user_callbacks(capsys):
    class Count(Callback):
        def initialize(self):
            self.runs = 0
            return self

        def on_train_begin(self, net, **kwargs):
            self.runs += 1

    counter = Count()
    X, y = _data()
    CRClassifier((8,), callbacks=[counter], verbose=1, **CV).fit(X, y)
    assert counter.runs == 1
    out = capsys.readouterr().out
    # One epoch table: the final run's.
    assert [line.split()[:1] for line in out.splitlines()].count(["epoch"]) == 1


def test_too_little_data_for_folds_trains_a_fixed_budget():
    X = np.arange(10.0).reshape(5, 2)
    y = np.array([0, 1, 0, 1, 0])
    est = CRClassifier((4,), **CV).fit(X, y)
    assert est.early_stopping_ == "off"
    assert est.n_iter_ == est.max_iter_ == AUTO_MAX_EPOCHS
    assert est.cv_validation_loss_ is None


def test_hold_out_and_fixed_modes_keep_their_meaning():
    X, y = _data(n=300)
    held = CRClassifier((8,), early_stopping=True, random_state=0).fit(X, y)
    assert held.early_stopping_ == "hold-out" and held.validation_scores_
    fixed = CRClassifier((8,), early_stopping=False, max_iter=7, random_state=0)
    fixed.fit(X, y)
    assert fixed.early_stopping_ == "off" and fixed.n_iter_ == 7


def test_partial_fit_runs_one_epoch_whatever_early_stopping_says():
    X, y = _data()
    est = CRClassifier((8,), **CV).partial_fit(X, y, classes=[0, 1])
    assert est.n_iter_ == 1 and est.early_stopping_ == "off"


def test_seeded_fits_with_internal_cv_are_reproducible():
    X, y = _data()
    params = {**CV, "random_state": 3}
    a = CRClassifier((8,), **params).fit(X, y).predict_proba(X)
    b = CRClassifier((8,), **params).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


def test_depth_growth_keeps_its_growth_under_internal_cv():
    from cr_sklearn import DepthGrowth

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)  # needs depth: a product
    base = CRClassifier((8,), architecture="residual", **{**CV, "max_iter": 30})
    grown = DepthGrowth(base, tol=0.0, max_blocks=2, max_steps=2, random_state=0)
    grown.fit(X, y)
    kept = [e for e in grown.growth_history_[1:] if e["kept"]]
    assert kept, "no growth step was kept"
    model = grown.estimator_
    # The returned network has the grown blocks, and its last fit chose its
    # length by internal CV on top of the grown network.
    assert grown.n_blocks_ >= 1  # none to start with
    assert len(model.hidden_layer_sizes) == 1 + grown.n_blocks_
    assert model.early_stopping_ == "cv"


def test_auto_threads_use_one_thread_for_small_networks(monkeypatch):
    seen = []

    class Threads(Callback):
        def on_train_begin(self, net, **kwargs):
            seen.append(torch.get_num_threads())

    X, y = _data()
    CRClassifier((8,), max_iter=2, callbacks=[Threads()], random_state=0).fit(X, y)
    assert seen == [1]
    # Large steps may use more, bounded by the usable CPUs and by four.
    import cr_sklearn._plan as plan

    monkeypatch.setattr(plan, "usable_cpus", lambda: 16)

    def threads(n_features, **params):
        return _plan(CRClassifier(**params), 1000, n_features).n_threads

    assert threads(384, hidden_layer_sizes=(4096, 4096)) == 4
    assert threads(8) == 1
    assert threads(8, n_threads=3) == 3


def test_a_model_fitted_with_internal_cv_saves_and_loads(tmp_path):
    from cr_sklearn import load_model, save_model

    X, y = _data()
    est = CRClassifier((8,), **CV).fit(X, y)
    path = tmp_path / "cv.safetensors"
    save_model(est, path)
    loaded = load_model(path)
    assert loaded.early_stopping_ == "cv" and loaded.max_iter_ == est.max_iter_
    np.testing.assert_array_equal(loaded.cv_validation_loss_, est.cv_validation_loss_)
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))


# -- a ConvergenceWarning when early stopping ran out of epochs ---------------


def _convergence_warnings(fit):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fit()
    return [w for w in record if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("estimator", [CRClassifier, CROrdinalRegressor])
@pytest.mark.parametrize("early_stopping", [True, "cv"])
def test_early_stopping_still_improving_at_max_iter_warns(estimator, early_stopping):
    # 20 epochs of a net that is still learning: the best epoch is among the
    # last n_iter_no_change=10, as MLPClassifier warns when it hits max_iter.
    X, y = _data()
    model = estimator(**{**FAST, "max_iter": 20, "early_stopping": early_stopping})
    with pytest.warns(ConvergenceWarning, match="Increase max_iter") as record:
        model.fit(X, y)
    assert model.best_epoch_ > model.max_iter_ - model.n_iter_no_change
    assert record[0].filename == __file__  # points at the fit call
    # A warm start counts the epochs of its own call.
    model.set_params(warm_start=True)
    assert _convergence_warnings(lambda: model.fit(X, y))


@pytest.mark.parametrize("early_stopping", [True, "cv"])
def test_early_stopping_that_converged_does_not_warn(early_stopping):
    X, y = _data()
    params = {**FAST, "max_iter": 400, "early_stopping": early_stopping}
    model = CRClassifier(**params)
    assert not _convergence_warnings(lambda: model.fit(X, y))
    assert model.best_epoch_ <= model.max_iter_ - model.n_iter_no_change


def test_the_auto_fixed_budget_does_not_warn():
    # Below 2,000 rows "auto" trains the fixed budget the defaults were tuned
    # with (a regulariser, as HistGradientBoosting's max_iter): however much
    # the loss still falls, more epochs are not the advice.
    X, y = _data()
    model = CRClassifier(**{**FAST, "max_iter": 3})
    assert not _convergence_warnings(lambda: model.fit(X, y))
    assert model.early_stopping_ == "off"
    assert model.loss_curve_[-1] < model.loss_curve_[-2]
    assert not _convergence_warnings(lambda: model.partial_fit(X, y))


def test_a_fixed_budget_the_user_chose_warns_while_the_loss_still_falls():
    # early_stopping=False and max_iter reached with the training loss still
    # falling by more than tol: a ConvergenceWarning, as MLPClassifier's.
    X, y = _data()
    model = CRClassifier(**{**FAST, "max_iter": 3, "early_stopping": False})
    found = _convergence_warnings(lambda: model.fit(X, y))
    assert len(found) == 1 and "still falling" in str(found[0].message)
    # Converged (a loss that stopped falling): no warning.
    long = CRClassifier(
        (4,),
        max_iter=400,
        early_stopping=False,
        dropout=0.0,
        tol=0.05,
        learning_rate_init=0.05,
        random_state=0,
    )
    assert not _convergence_warnings(lambda: long.fit(X, y))
    # partial_fit runs one epoch at a time: no convergence to speak of.
    assert not _convergence_warnings(lambda: model.partial_fit(X, y))


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
@pytest.mark.parametrize("estimator", [CRClassifier, CROrdinalRegressor])
def test_parameters_are_validated_once_per_fit(monkeypatch, estimator, method):
    calls = []
    original = estimator._validate_params

    def counted(self):
        calls.append(type(self).__name__)
        return original(self)

    monkeypatch.setattr(estimator, "_validate_params", counted)
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 3
    model = estimator(**{**FAST, "max_iter": 2})
    if method == "fit":
        model.fit(X, y)
    else:
        model.partial_fit(X, y, classes=np.arange(3))
    assert calls == [estimator.__name__]


def test_a_bad_parameter_still_fails_before_any_training():
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        CRClassifier(hidden_layer_sizes="wide").fit(X, np.arange(40) % 2)


def test_the_plan_resolves_the_fixed_budget_of_too_few_rows_for_the_folds():
    # The plan is the only authority: the fit no longer re-derives it after.
    plan = _plan(CRClassifier(early_stopping="cv", max_iter=7), 2 * CV_FOLDS - 1, 2)
    assert (plan.stopping, plan.max_epochs) == ("off", 7)
    plan = _plan(CRClassifier(early_stopping="cv", max_iter=7), 2 * CV_FOLDS, 2)
    assert plan.stopping == "cv"


@pytest.mark.parametrize("cls", [CRClassifier, CROrdinalRegressor])
def test_rows_of_weight_zero_count_toward_no_rule(cls):
    # 1,000 rows with 5 of weight 0 are 995 rows: one network and the bins
    # of fewer than 1,000 rows (they got 4 members and 16 bins).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(AUTO_LARGE_SAMPLES, 3))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=len(X)), [-0.5, 0.5])
    weight = np.ones(len(X))
    weight[rng.choice(len(X), 5, replace=False)] = 0.0
    keep = weight > 0
    params = {**FAST, "max_iter": 3}
    weighted = cls(**params).fit(X, y, sample_weight=weight)
    alone = cls(**params).fit(X[keep], y[keep])
    assert weighted._plan == alone._plan
    assert weighted._plan.n_samples == keep.sum() and weighted.n_members_ == 1
    np.testing.assert_array_equal(weighted.predict_proba(X), alone.predict_proba(X))


@pytest.mark.parametrize(
    ("params", "n_samples", "named"),
    [
        ({"hidden_layer_sizes": (10**6,)}, 300, "hidden_layer_sizes"),
        ({"encoding_bins": 10**6}, 20_000, "encoding_bins"),
        ({"hidden_layer_sizes": (2,) * 10_000}, 300, "hidden_layer_sizes"),
    ],
)
def test_a_fit_too_large_for_memory_or_time_is_refused_before_any_work(
    params, n_samples, named, monkeypatch
):
    # They failed in torch's allocator, or ran for minutes.
    def no_work(*args, **kwargs):
        raise AssertionError("the fit started working")

    monkeypatch.setattr(base.InputTransform, "fit", no_work)
    X = np.random.default_rng(0).normal(size=(n_samples, 50))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=f"^{named}[= ].*over the bound"):
        CRClassifier(**params).fit(X, y)


def test_the_memory_bound_is_half_the_memory_available_at_most_8_gib():
    est = CRClassifier(hidden_layer_sizes=(20_000,), encoding_bins=None)
    plan = _plan(est, 5000, 50)
    # 200 rows x 20,051 columns x (12 values + 4 directions) x 4 bytes.
    plan.check_memory(available=2**40)
    plan.check_memory(available=2**29)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        plan.check_memory(available=2**28)
    members = _plan(est.set_params(n_members=4), 5000, 50)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        members.check_memory(available=2**29)
    # Every default plan fits in a machine of 2 GiB available.
    for cls in (CRClassifier, CROrdinalRegressor):
        for n, d in ((100, 4), (5000, 100), (100_000, 768)):
            _plan(cls(), n, d).check_memory(available=2**31)


@pytest.mark.parametrize("weight", [1e-310, 5e-324])
def test_subnormal_sample_weight_is_refused(weight):
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="sample_weight.*subnormal"):
        CRClassifier(**FAST).fit(X, y, sample_weight=np.full(len(y), weight))
