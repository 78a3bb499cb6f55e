"""Confidence signals: orientation, ordinal definitions, MC dropout."""

import copy
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from cr_sklearn import (
    CRClassifier,
    CROrdinalRegressor,
    confidence_signals,
    gradient_norms,
)

SMALL = dict(hidden_layer_sizes=(8,), max_iter=20, random_state=0)


@pytest.fixture(scope="module")
def data(pima):
    X, y = pima
    return X[:300], y[:300]


@pytest.fixture(scope="module")
def cr(data):
    return CRClassifier(**SMALL).fit(*data)


@pytest.fixture(scope="module")
def ordinal():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=300)
    y = np.digitize(latent, [-1.0, 0.0, 1.0]) * 2 + 1  # labels 1, 3, 5, 7
    model = CROrdinalRegressor(**SMALL, dropout=0.1).fit(X, y)
    return model, X, y


def test_cr_signals_and_their_orientation(cr, data):
    X, _ = data
    signals = confidence_signals(cr, X, random_state=0)
    assert list(signals) == [
        "max_proba",
        "input_sensitivity",
        "input_distance",
        "mc_dropout",
    ]
    proba = cr.predict_proba(X)
    np.testing.assert_allclose(signals["max_proba"], proba.max(axis=1))
    # Two classes: the margin ranks like max_proba, so "auto" leaves it out.
    margin = confidence_signals(cr, X, "margin")["margin"]
    np.testing.assert_allclose(margin, np.abs(proba[:, 1] - proba[:, 0]))
    np.testing.assert_allclose(signals["input_sensitivity"], -cr.input_sensitivity(X))
    np.testing.assert_allclose(signals["input_distance"], -cr.input_distance(X))
    assert np.all(signals["mc_dropout"] <= 0)
    assert signals["mc_dropout"].std() > 0


def test_mc_dropout_is_seeded_and_leaves_the_model_alone(cr, data):
    X, _ = data
    before = cr.predict_proba(X)
    mode = cr.module_.training
    rng_state = torch.get_rng_state()
    first = confidence_signals(cr, X, "mc_dropout", random_state=1)["mc_dropout"]
    again = confidence_signals(cr, X, "mc_dropout", random_state=1)["mc_dropout"]
    other = confidence_signals(cr, X, "mc_dropout", random_state=2)["mc_dropout"]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # The caller's torch stream, the module's mode and predictions are intact.
    assert torch.equal(torch.get_rng_state(), rng_state)
    assert cr.module_.training == mode
    np.testing.assert_array_equal(cr.predict_proba(X), before)
    few = confidence_signals(cr, X, "mc_dropout", n_passes=2, random_state=1)
    assert few["mc_dropout"].shape == (len(X),)


def test_seeded_mc_dropout_and_a_seeded_fit_beside_it_are_thread_safe(cr, data):
    # Seeded signals from 6 threads equal the serial ones, and a seeded fit
    # with dropout running beside them equals its serial self: the dropout
    # passes draw from a generator of their own, not torch's global one.
    X, y = data

    def signal(seed):
        return confidence_signals(cr, X, "mc_dropout", random_state=seed)["mc_dropout"]

    def fit():
        model = CRClassifier(**{**SMALL, "max_iter": 60}, dropout=0.3)
        return model.fit(X, y).predict_proba(X)

    serial = [signal(seed) for seed in range(3)]
    fitted = fit()
    start = threading.Barrier(7)
    done = threading.Event()

    def worker(first):
        start.wait()
        results, calls = [], 0
        # At least 3 calls each, and more while the fit runs.
        while calls < 3 or (not done.is_set() and calls < 200):
            seed = (first + calls) % 3
            results.append((seed, signal(seed)))
            calls += 1
        return results

    def fitter():
        start.wait()
        try:
            return fit()
        finally:
            done.set()

    with ThreadPoolExecutor(7) as pool:
        fitting = pool.submit(fitter)
        workers = [pool.submit(worker, i) for i in range(6)]
        results = [r for w in workers for r in w.result()]
    assert len(results) >= 18
    mismatched = [
        seed for seed, got in results if not np.array_equal(got, serial[seed])
    ]
    assert mismatched == []
    np.testing.assert_array_equal(fitting.result(), fitted)


def test_mc_dropout_needs_dropout(data):
    model = CRClassifier(**SMALL, dropout=0.0).fit(*data)
    assert "mc_dropout" not in confidence_signals(model, data[0])
    with pytest.raises(ValueError, match="dropout > 0"):
        confidence_signals(model, data[0], "mc_dropout")


def test_other_models_get_probability_and_gradient_signals(data):
    X, y = data
    logreg = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    signals = confidence_signals(logreg, X)
    assert list(signals) == ["max_proba", "gradient_norm"]
    np.testing.assert_allclose(
        signals["gradient_norm"], -gradient_norms(logreg, X, scale=1.0)
    )
    # A sample's signal does not depend on the batch it is scored in.
    alone = confidence_signals(logreg, X[:1], "gradient_norm")["gradient_norm"]
    np.testing.assert_allclose(alone, signals["gradient_norm"][:1])
    # A linear model's gradient norm is constant: one tie, not noise.
    assert len(np.unique(signals["gradient_norm"])) == 1
    with pytest.raises(ValueError, match="CR estimator"):
        confidence_signals(logreg, X, ["max_proba", "input_sensitivity"])
    # Without predict_proba: only the gradient signal.
    svc = make_pipeline(StandardScaler(), SVC()).fit(X, y)
    assert list(confidence_signals(svc, X)) == ["gradient_norm"]
    with pytest.raises(ValueError, match="predict_proba"):
        confidence_signals(svc, X, "max_proba")
    # A tree ensemble's finite-difference norms are (almost) all tied.
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    norms = confidence_signals(forest, X, "gradient_norm")["gradient_norm"]
    assert np.mean(norms == 0) > 0.5


def test_pipeline_ending_in_cr(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), CRClassifier(**SMALL)).fit(X, y)
    signals = confidence_signals(pipe, X, random_state=0)
    Xt = pipe[0].transform(X)
    np.testing.assert_allclose(signals["input_distance"], -pipe[-1].input_distance(Xt))
    np.testing.assert_allclose(signals["max_proba"], pipe.predict_proba(X).max(1))


def test_ordinal_probability_signals(ordinal):
    model, X, _ = ordinal
    signals = confidence_signals(model, X, random_state=0)
    assert "mc_dropout" in signals
    proba = model.predict_proba(X)
    pred = np.searchsorted(model.classes_, model.predict(X))
    k = proba.shape[1]
    # max_proba is the mass within one class of the (median) prediction.
    within = [proba[i, max(p - 1, 0) : min(p + 2, k)].sum() for i, p in enumerate(pred)]
    np.testing.assert_allclose(signals["max_proba"], within)
    # margin: distance of the cumulative probabilities around it to 0.5.
    cumulative = model.predict_cumulative_proba(X)
    below = np.array(
        [cumulative[i, p - 1] if p > 0 else 0.0 for i, p in enumerate(pred)]
    )
    at = np.array([cumulative[i, p] if p < k - 1 else 1.0 for i, p in enumerate(pred)])
    np.testing.assert_allclose(signals["margin"], np.minimum(at - 0.5, 0.5 - below))
    assert np.all(signals["margin"] >= -1e-12)
    # loss="zero_one" switches to the classification definitions.
    flat = confidence_signals(model, X, "max_proba", loss="zero_one")["max_proba"]
    np.testing.assert_allclose(flat, proba[np.arange(len(X)), pred])


def test_bad_signal_requests(cr, data):
    X, _ = data
    with pytest.raises(ValueError, match="Unknown signal"):
        confidence_signals(cr, X, "entropy")
    with pytest.raises(ValueError, match="empty"):
        confidence_signals(cr, X, [])
    with pytest.raises(ValueError, match="duplicates"):
        confidence_signals(cr, X, ["margin", "margin"])
    with pytest.raises(ValueError, match="n_passes"):
        confidence_signals(cr, X, "mc_dropout", n_passes=1)
    with pytest.raises(ValueError, match="loss"):
        confidence_signals(cr, X, loss="hinge")
    with pytest.raises(ValueError, match="no confidence method"):
        confidence_signals(cr, X, "confidence")


def test_member_disagreement_is_the_spread_of_the_members_probabilities(data):
    X, y = data
    ensemble = CRClassifier(**SMALL, n_members=3).fit(X, y)
    signals = confidence_signals(ensemble, X, random_state=0)
    assert "member_disagreement" in signals
    module = copy.deepcopy(ensemble.module_).eval()
    with torch.no_grad():
        out = module(torch.as_tensor(X, dtype=torch.float32)).double()
    member_p1 = torch.sigmoid(out[..., 0]).numpy()  # (members, rows)
    pred = np.searchsorted(ensemble.classes_, ensemble.predict(X))
    picked = np.where(pred == 1, member_p1, 1.0 - member_p1)
    np.testing.assert_allclose(
        signals["member_disagreement"], -picked.std(axis=0), atol=1e-6
    )
    assert signals["member_disagreement"].std() > 0
    # The ensemble's own probability is the members' mean.
    np.testing.assert_allclose(
        ensemble.predict_proba(X)[:, 1], member_p1.mean(axis=0), atol=1e-6
    )


def test_member_disagreement_needs_members(cr, data):
    X, _ = data
    assert "member_disagreement" not in confidence_signals(cr, X, random_state=0)
    with pytest.raises(ValueError, match="n_members > 1"):
        confidence_signals(cr, X, "member_disagreement")


def test_member_disagreement_of_an_ordinal_ensemble():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 4))
    y = np.digitize(X[:, 0] + rng.normal(scale=0.7, size=200), [-1.0, 0.0, 1.0])
    model = CROrdinalRegressor(**SMALL, n_members=2).fit(X, y)
    values = confidence_signals(model, X, "member_disagreement")["member_disagreement"]
    assert values.shape == (200,) and np.all(values <= 0) and values.std() > 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", [CRClassifier, CROrdinalRegressor])
def test_signals_of_a_member_model(estimator, data):
    # The members' averaged probabilities, as predict_proba gives them; the
    # dropout passes thin every member.
    X, y = data
    model = estimator(**SMALL, n_members=3, dropout=0.2).fit(X, y)
    signals = confidence_signals(model, X, random_state=0)
    if estimator is CRClassifier:  # the ordinal's is the within-one probability
        proba = model.predict_proba(X)
        np.testing.assert_allclose(signals["max_proba"], proba.max(axis=1))
    assert np.all(signals["mc_dropout"] <= 0) and signals["mc_dropout"].std() > 0
    assert np.all(np.isfinite(signals["input_sensitivity"]))
