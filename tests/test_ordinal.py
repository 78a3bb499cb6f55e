"""CROrdinalRegressor and the ordinal heads of cr_sklearn.nn.ordinal."""

import copy

import numpy as np
import pytest
import torch
from conftest import FAST, make_ordinal_data
from sklearn.base import clone, is_classifier
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cr_sklearn import CROrdinalRegressor, load_model, save_model
from cr_sklearn.nn.ordinal import (
    ORDINAL_HEADS,
    CORALLoss,
    CumulativeLinkLoss,
    cumulative_link_log_proba,
    ordered_cutpoints,
)


@pytest.fixture(scope="module")
def fitted(ordinal_data):
    X, y = ordinal_data
    labels = np.array([1, 3, 7, 10])  # integers with gaps
    # More steps than FAST: the accuracy and rule tests read a learnt model.
    params = {**FAST, "max_iter": 40, "batch_size": 32}
    model = CROrdinalRegressor(**params).fit(X, labels[y])
    return model, X, labels[y]


# -- heads (plain torch) ---------------------------------------------------
def test_ordered_cutpoints_strictly_increase_for_any_parameters():
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        first = torch.randn(1, generator=gen) * 5
        gaps = torch.randn(6, generator=gen) * 10
        cut = ordered_cutpoints(first, gaps)
        assert cut.shape == (7,)
        assert torch.all(torch.diff(cut) > 0)


@pytest.mark.parametrize("n_classes", [2, 3, 6])
def test_cumulative_link_log_proba_matches_difference_of_sigmoids(n_classes):
    gen = torch.Generator().manual_seed(1)
    cut = torch.sort(torch.randn(n_classes - 1, generator=gen, dtype=torch.float64))[0]
    eta = torch.randn(50, generator=gen, dtype=torch.float64) * 3
    cum = torch.sigmoid(cut[None, :] - eta[:, None])
    cum = torch.cat([torch.zeros(50, 1), cum, torch.ones(50, 1)], 1).double()
    expected = torch.diff(cum, dim=1)
    got = cumulative_link_log_proba(eta, cut).exp()
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got.sum(1), torch.ones(50, dtype=torch.float64))


def test_cumulative_link_log_proba_is_finite_for_extreme_scores():
    cut = torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)
    eta = torch.tensor([-1e4, 1e4, 0.0], dtype=torch.float64, requires_grad=True)
    logp = cumulative_link_log_proba(eta, cut)
    assert torch.isfinite(logp[:, 0]).all() and torch.isfinite(logp[:, -1]).all()
    logp[[0, 1], [0, 3]].sum().backward()
    assert torch.isfinite(eta.grad).all()


def test_cumulative_link_gradcheck():
    cut_first = torch.tensor([-0.5], dtype=torch.float64, requires_grad=True)
    gaps = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    eta = torch.linspace(-2, 2, 5, dtype=torch.float64, requires_grad=True)

    def f(eta, first, gaps):
        return cumulative_link_log_proba(eta, ordered_cutpoints(first, gaps))

    assert torch.autograd.gradcheck(f, (eta, cut_first, gaps))


def test_heads_losses_match_their_definitions():
    gen = torch.Generator().manual_seed(2)
    init = [-1.0, 0.2, 1.5]
    output = torch.randn(30, 1, generator=gen)
    target = torch.randint(0, 4, (30,), generator=gen)
    nll = CumulativeLinkLoss(4, init_cutpoints=init)
    coral = CORALLoss(4, init_cutpoints=init)
    torch.testing.assert_close(nll.cutpoints().detach(), torch.tensor(init))
    logp = nll.log_proba(output[:, 0])
    torch.testing.assert_close(nll(output, target), -logp[torch.arange(30), target])
    expected = torch.zeros(30)
    for k, theta in enumerate(init):
        p = torch.sigmoid(output[:, 0] - theta)
        z = (target > k).float()
        expected -= z * torch.log(p) + (1 - z) * torch.log(1 - p)
    torch.testing.assert_close(coral(output, target), expected, rtol=1e-5, atol=1e-5)
    assert set(ORDINAL_HEADS) == {"cumulative", "coral"}
    assert all("cutpoint" in name for name, _ in nll.named_parameters())


def test_head_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least 2"):
        CumulativeLinkLoss(1)
    with pytest.raises(ValueError, match="3 values"):
        CumulativeLinkLoss(4, init_cutpoints=[0.0, 1.0])


# -- the estimator -----------------------------------------------------------
def test_is_a_classifier_so_cv_stratifies():
    model = CROrdinalRegressor()
    assert is_classifier(model)
    X, y = make_ordinal_data(n=60)
    assert isinstance(check_cv(5, y, classifier=is_classifier(model)), StratifiedKFold)


def test_labels_with_gaps_and_probability_outputs(fitted):
    model, X, y = fitted
    np.testing.assert_array_equal(model.classes_, [1, 3, 7, 10])
    assert set(model.predict(X)) <= set(model.classes_)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    cum = model.predict_cumulative_proba(X)
    assert cum.shape == (len(X), 4)
    assert np.all(np.diff(cum, axis=1) >= 0)
    np.testing.assert_allclose(cum[:, -1], 1.0)
    np.testing.assert_allclose(np.cumsum(proba, axis=1), cum, atol=1e-10)
    assert np.all(np.diff(model.cutpoints_) > 0)
    # Learned something: well above the majority class, and a small MAE.
    assert np.mean(model.predict(X) == y) > 0.75
    assert model.score(X, y) > -0.3


def _with_rule(model, rule):
    """A copy of the fitted ``model`` predicting with ``rule`` (no refit)."""
    return copy.deepcopy(model).set_params(prediction=rule)


def test_prediction_rules_median_and_mode(fitted):
    model, X, _ = fitted
    assert model.prediction == "median"
    cum = model.predict_cumulative_proba(X)
    median = np.array([np.flatnonzero(row >= 0.5)[0] for row in cum])
    np.testing.assert_array_equal(model.predict(X), model.classes_[median])
    # The median is the cut-point interval that contains the latent score.
    eta = model.predict_latent(X)
    np.testing.assert_array_equal(median, np.searchsorted(model.cutpoints_, eta))
    mode = _with_rule(model, "mode")
    argmax = model.classes_[model.predict_proba(X).argmax(1)]
    np.testing.assert_array_equal(mode.predict(X), argmax)
    # The two rules differ somewhere on these data, or the test proves nothing.
    assert np.any(mode.predict(X) != model.predict(X))
    with pytest.raises(ValueError, match="prediction"):
        CROrdinalRegressor(**FAST, prediction="mean").fit(X, median)


def _skewed_data(n, seed):
    # Narrow middle grades under heavy noise: never the most probable class.
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.logistic(scale=0.8, size=n)
    return X, np.digitize(latent, [-1.0, -0.3, 0.0, 0.3, 1.0])


def test_median_rule_has_lower_mae_than_mode_on_narrow_middle_grades():
    X, y = _skewed_data(500, seed=0)
    X_test, y_test = _skewed_data(4000, seed=1)
    params = {**FAST, "max_iter": 40, "batch_size": 64}
    model = CROrdinalRegressor(**params).fit(X, y)
    median_mae = -model.score(X_test, y_test)
    mode_mae = -model.set_params(prediction="mode").score(X_test, y_test)
    assert median_mae < mode_mae - 0.05


def test_validation_score_follows_the_prediction_rule(fitted):
    model, X, y = fitted
    codes = torch.from_numpy(np.searchsorted(model.classes_, y))
    output = torch.from_numpy(model.predict_latent(X)).float()[:, None]
    for rule in ["median", "mode"]:
        est = _with_rule(model, rule)
        got = est._validation_score(model.net_, output, codes)
        assert got == pytest.approx(est.score(X, y), abs=2 / len(X))


def test_prediction_rule_survives_save_and_load(fitted, tmp_path):
    model, X, _ = fitted
    mode = _with_rule(model, "mode")
    save_model(mode, tmp_path / "mode.safetensors")
    loaded = load_model(tmp_path / "mode.safetensors")
    assert loaded.prediction == "mode"
    np.testing.assert_array_equal(loaded.predict(X), mode.predict(X))


def test_latent_score_jacobian_matches_finite_differences(fitted):
    model, X, _ = fitted
    eta = model.predict_latent(X[:5])
    assert eta.shape == (5,)
    jac = model.jacobian(X[:5])
    assert jac.shape == (5, 1, X.shape[1])
    h = 1e-6
    for j in range(X.shape[1]):
        step = np.zeros(X.shape[1])
        step[j] = h
        fd = (
            model.predict_latent(X[:5] + step) - model.predict_latent(X[:5] - step)
        ) / (2 * h)
        np.testing.assert_allclose(jac[:, 0, j], fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        model.input_gradient_norms(X[:5]),
        np.linalg.norm(jac[:, 0] * model.input_scale_, axis=1),
    )
    # Higher latent score -> higher predicted class distribution.
    order = np.argsort(model.predict_latent(X))
    cum = model.predict_cumulative_proba(X)[order]
    assert np.all(np.diff(cum[:, 0]) <= 1e-12)


def test_score_is_negative_mae_in_ranks(fitted):
    model, X, y = fitted
    ranks = {label: i for i, label in enumerate(model.classes_)}
    true = np.array([ranks[v] for v in y])
    pred = np.array([ranks[v] for v in model.predict(X)])
    assert model.score(X, y) == pytest.approx(-np.mean(np.abs(true - pred)))


def test_string_labels_with_no_order_raise():
    pd = pytest.importorskip("pandas", reason="the Categorical cases need pandas")
    X, codes = make_ordinal_data(n=60)
    names = np.array(["None", "Some", "Marked"])[codes % 3]
    unordered = pd.Categorical(names, categories=["None", "Some", "Marked"])
    for y in (names, names.astype(object), unordered, pd.Series(unordered)):
        with pytest.raises(ValueError, match=r"order.*classes=.*ordered pandas"):
            CROrdinalRegressor(**FAST).fit(X, y)


def test_classes_is_the_order_exactly_as_given():
    X, codes = make_ordinal_data(n=160)
    names = np.array(["low", "mid", "high", "top"])
    ordered = CROrdinalRegressor(**FAST, classes=list(names)).fit(X, names[codes])
    np.testing.assert_array_equal(ordered.classes_, names)
    # With the right order the latent score increases with the true grade.
    assert np.corrcoef(ordered.predict_latent(X), codes)[0, 1] > 0.5
    assert ordered.predict(X).dtype.kind == "U"
    # Numbers too: the given order wins over their values.
    reverse = CROrdinalRegressor(**FAST, classes=[3, 2, 1, 0]).fit(X, codes)
    np.testing.assert_array_equal(reverse.classes_, [3, 2, 1, 0])
    assert np.corrcoef(reverse.predict_latent(X), codes)[0, 1] < -0.5
    # Labels the data lacks keep their place in the order.
    wider = CROrdinalRegressor(**FAST, classes=[-1, 0, 1, 2, 3]).fit(X, codes)
    np.testing.assert_array_equal(wider.classes_, [-1, 0, 1, 2, 3])


def test_ordered_categorical_gives_the_order():
    pd = pytest.importorskip("pandas", reason="Categorical labels need pandas")
    X, codes = make_ordinal_data(n=160)
    order = ["top", "high", "mid", "low", "unused"]  # not alphabetical
    names = np.array(["low", "mid", "high", "top"])[codes]
    y = pd.Categorical(names, categories=order[::-1], ordered=True)
    for labels in (y, pd.Series(y)):
        model = CROrdinalRegressor(**FAST).fit(X, labels)
        np.testing.assert_array_equal(model.classes_, order[::-1])
        assert np.corrcoef(model.predict_latent(X), codes)[0, 1] > 0.5
    # The classes parameter agreeing with the Categorical's order is fine; a
    # contradicting one raises, on a fresh fit as under a warm start.
    given = CROrdinalRegressor(**FAST, classes=order[::-1]).fit(X, y)
    np.testing.assert_array_equal(given.classes_, order[::-1])
    with pytest.raises(ValueError, match="differ from the classes parameter"):
        CROrdinalRegressor(**FAST, classes=order).fit(X, y)


def test_bad_labels_raise():
    X, codes = make_ordinal_data(n=60)
    with pytest.raises(ValueError, match=r"labels \[3\] that are not in the classes"):
        CROrdinalRegressor(**FAST, classes=[0, 1, 2]).fit(X, codes)
    with pytest.raises(ValueError, match=r"once.*\[1\] appear"):
        CROrdinalRegressor(**FAST, classes=[0, 1, 1, 2, 3]).fit(X, codes)
    with pytest.raises(ValueError, match="1-d"):
        CROrdinalRegressor(**FAST, classes=[[0, 1], [2, 3]]).fit(X, codes)
    with pytest.raises(ValueError, match="one class"):
        CROrdinalRegressor(**FAST).fit(X, np.zeros(60, dtype=int))
    with pytest.raises(ValueError, match="head"):
        CROrdinalRegressor(head="corn").fit(X, codes)


def test_coral_head_and_partial_fit():
    X, codes = make_ordinal_data(n=160)
    params = {**FAST, "max_iter": 40, "batch_size": 32, "head": "coral"}
    coral = CROrdinalRegressor(**params)
    coral.fit(X, codes)
    assert type(coral.net_.criterion_).__name__ == "CORALLoss"
    assert np.mean(coral.predict(X) == codes) > 0.7
    inc = CROrdinalRegressor(**FAST)
    with pytest.raises(ValueError, match="classes must be passed"):
        inc.partial_fit(X, codes)
    inc.partial_fit(X[:80], codes[:80], classes=[0, 1, 2, 3])
    before = inc.cutpoints_.copy()
    inc.partial_fit(X[80:], codes[80:])
    assert not np.allclose(before, inc.cutpoints_)


def test_partial_fit_classes_are_the_order_as_given():
    X, codes = make_ordinal_data(n=160)
    names = np.array(["low", "mid", "high", "top"])
    inc = CROrdinalRegressor(**FAST).partial_fit(X, codes, classes=[3, 2, 1, 0])
    np.testing.assert_array_equal(inc.classes_, [3, 2, 1, 0])
    # The same classes again are fine; any other order or set raises.
    inc.partial_fit(X, codes, classes=[3, 2, 1, 0])
    for other in ([0, 1, 2, 3], [3, 2, 1], [3, 2, 1, 0, 4]):
        with pytest.raises(ValueError, match="differ from the fitted classes_"):
            inc.partial_fit(X, codes, classes=other)
    assert inc.n_iter_ == 2
    strings = CROrdinalRegressor(**FAST).partial_fit(
        X, names[codes], classes=list(names)
    )
    np.testing.assert_array_equal(strings.classes_, names)
    with pytest.raises(ValueError, match="once"):
        CROrdinalRegressor(**FAST).partial_fit(X, codes, classes=[0, 1, 2, 3, 3])
    with pytest.raises(ValueError, match=r"labels \[3\] that are not in the classes"):
        CROrdinalRegressor(**FAST).partial_fit(X, codes, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="differ from the classes parameter"):
        CROrdinalRegressor(**FAST, classes=[0, 1, 2, 3]).partial_fit(
            X, codes, classes=[3, 2, 1, 0]
        )


def test_ordered_categorical_starts_partial_fit():
    pd = pytest.importorskip("pandas", reason="Categorical labels need pandas")
    X, codes = make_ordinal_data(n=160)
    y = pd.Categorical(codes, categories=[3, 2, 1, 0], ordered=True)
    inc = CROrdinalRegressor(**FAST).partial_fit(X, y)
    np.testing.assert_array_equal(inc.classes_, [3, 2, 1, 0])
    with pytest.raises(ValueError, match="Categorical y.*differ from the fitted"):
        inc.partial_fit(X, pd.Categorical(codes, categories=range(4), ordered=True))


def test_warm_start_keeps_the_order():
    X, codes = make_ordinal_data(n=100)
    model = CROrdinalRegressor(**FAST, classes=[0, 1, 2, 3], warm_start=True)
    model.fit(X, codes).set_params(classes=[3, 2, 1, 0])
    with pytest.raises(ValueError, match="classes parameter.*differ from the fitted"):
        model.fit(X, codes)
    with pytest.raises(ValueError, match=r"y contains labels \[7\]"):
        model.set_params(classes=None).fit(X, np.where(codes == 0, 7, codes))


def test_cutpoints_are_trained_without_weight_decay():
    X, codes = make_ordinal_data(n=100)
    model = CROrdinalRegressor(**FAST, weight_decay=0.1).fit(X, codes)
    decays = {}
    for group in model.net_.optimizer_.param_groups:
        for p in group["params"]:
            decays[id(p)] = group["weight_decay"]
    for _, p in model.net_.criterion_.named_parameters():
        assert decays[id(p)] == 0.0


def test_reproducible_and_in_a_pipeline():
    X, codes = make_ordinal_data(n=120)
    a = CROrdinalRegressor(**FAST).fit(X, codes)
    b = clone(a).fit(X, codes)
    np.testing.assert_array_equal(a.predict_latent(X), b.predict_latent(X))
    pipe = make_pipeline(StandardScaler(), CROrdinalRegressor(**FAST)).fit(X, codes)
    assert pipe.predict_proba(X).shape == (120, 4)
    sens = a.input_sensitivity(X)
    assert sens.mean() == pytest.approx(1.0, rel=0.02)


def test_non_integer_labels_point_to_classes_and_work_with_it():
    # 10.5, 20.5, ...: a regression target to scikit-learn; the message says
    # how to make them ordered labels, and with classes= they are (R13).
    X, codes = make_ordinal_data(n=160)
    grades = np.array([10.5, 20.5, 30.5, 40.5])[codes]
    with pytest.raises(ValueError, match=r"Unknown label type.*classes=\[\.\.\.\]"):
        CROrdinalRegressor(**FAST).fit(X, grades)
    model = CROrdinalRegressor(**FAST, classes=[10.5, 20.5, 30.5, 40.5]).fit(X, grades)
    np.testing.assert_array_equal(model.classes_, [10.5, 20.5, 30.5, 40.5])
    assert set(model.predict(X)) <= {10.5, 20.5, 30.5, 40.5}


def test_a_classes_parameter_against_the_categoricals_order_raises_on_any_fit():
    # A fresh fit and a warm start alike (R14).
    pd = pytest.importorskip("pandas")
    X, codes = make_ordinal_data(n=160)
    order = ["low", "mid", "high", "top"]
    y = pd.Categorical(np.array(order)[codes], categories=order, ordered=True)
    contrary = CROrdinalRegressor(**FAST, classes=order[::-1])
    with pytest.raises(ValueError, match="differ from the classes parameter"):
        contrary.fit(X, y)
    fitted = CROrdinalRegressor(**FAST).fit(X, y)
    fitted.set_params(warm_start=True, classes=order[::-1])
    with pytest.raises(ValueError, match="differ"):
        fitted.fit(X, y)


def test_per_class_scores_serve_calibration_and_ranking():
    # decision_function: one score per class (items 11 and 12 of issue 37).
    X, codes = make_ordinal_data(n=240)
    model = CROrdinalRegressor(**{**FAST, "prediction": "mode"}).fit(X, codes)
    scores = model.decision_function(X)
    assert scores.shape == (240, 4)
    np.testing.assert_allclose(scores.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_array_equal(scores.argmax(axis=1), model.predict(X))
    binary = CROrdinalRegressor(**FAST).fit(X, codes > 1)
    latent = binary.predict_latent(X)
    np.testing.assert_allclose(
        binary.decision_function(X), latent - binary.cutpoints_[0], atol=1e-10
    )
