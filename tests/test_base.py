"""Messages of the shared estimator base: progress output, warnings, HTML repr."""

import re
import warnings

import numpy as np
import pytest
import torch
from conftest import FAST
from sklearn.datasets import make_classification

from cr_sklearn import CRClassifier, CROrdinalRegressor

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_verbose_1_prints_an_epoch_table(pima, capsys):
    X, y = pima
    clf = CRClassifier((4,), max_iter=3, early_stopping=True, verbose=1)
    clf.set_params(random_state=0).fit(X, y)
    out = _ANSI.sub("", capsys.readouterr().out)
    header = out.splitlines()[0].split()
    assert header == [
        "epoch",
        "penalty",
        "train_loss",
        "valid_loss",
        "valid_score",
        "dur",
    ]
    rows = [line.split() for line in out.splitlines()[2:] if line.strip()]
    assert [row[0] for row in rows] == ["1", "2", "3"]


def test_verbose_0_prints_nothing(pima, capsys):
    X, y = pima
    CRClassifier((4,), max_iter=3, random_state=0).fit(X, y)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_verbose_2_adds_a_batch_progress_bar(pima, capsys):
    pytest.importorskip("tqdm")
    X, y = pima
    # 691 training rows in batches of 200: 4 batches an epoch (the held-out
    # rows are scored by the stopping callback; tqdm writes to stderr).
    clf = CRClassifier((4,), max_iter=2, early_stopping=True, verbose=2)
    clf.set_params(random_state=0).fit(X, y)
    captured = capsys.readouterr()
    assert re.search(r"\d+/4 \[", captured.err)
    assert "valid_score" in captured.out


def test_unstandardised_features_warn_only_without_standardize(pima):
    X, y = pima
    params = dict(hidden_layer_sizes=(4,), max_iter=2, random_state=0)
    with pytest.warns(UserWarning, match=r"not standardised.*StandardScaler") as rec:
        CRClassifier(standardize=False, **params).fit(X, y)
    # Pima's glucose (column 1) and insulin (column 4) are far from unit scale.
    assert "1" in str(rec[0].message) and "4" in str(rec[0].message)
    # The warning points at the caller's line, not inside the package.
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CRClassifier(**params).fit(X, y)
        Xs = (X - X.mean(0)) / X.std(0)
        CRClassifier(standardize=False, **params).fit(Xs, y)


def test_html_repr_renders():
    html = CRClassifier(hidden_layer_sizes=(8,), dreg_lambda=0.1)._repr_html_()
    assert "CRClassifier" in html
    assert "dreg_lambda" in html
    assert "<style" in html
    assert "CROrdinalRegressor" in CROrdinalRegressor()._repr_html_()


def test_html_repr_of_fitted_pipeline(pima):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = pima
    pipe = make_pipeline(
        StandardScaler(), CRClassifier((4,), max_iter=2, random_state=0)
    ).fit(X, y)
    html = pipe._repr_html_()
    assert "StandardScaler" in html and "CRClassifier" in html
    # The "fitted" status marker sklearn draws for fitted estimators.
    assert "fitted" in html.lower()
    assert np.isfinite(pipe.predict_proba(X[:3])).all()


@pytest.mark.parametrize(
    ("n_samples", "batch_size", "learning_rate_init", "batch", "lr"),
    [
        (300, "auto", 1e-3, 200, 1e-3),  # the defaults: MLPClassifier's rule
        (300, 300, "auto", 300, 1e-3 * 300 / 200),  # full batch, scaled step
        (150, "auto", "auto", 150, 1e-3),  # up to 200 rows the step is 1e-3
        (300, 50, 0.02, 50, 0.02),  # explicit values are used as given
    ],
)
def test_batch_size_and_learning_rate(
    n_samples, batch_size, learning_rate_init, batch, lr
):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = CRClassifier(
        (4,),
        max_iter=1,
        batch_size=batch_size,
        learning_rate_init=learning_rate_init,
        random_state=0,
    ).fit(X, y)
    assert clf.net_.batch_size == batch
    assert clf.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(lr)


def test_residual_architecture_carries_the_stream_on_stream_rows(monkeypatch):
    from cr_sklearn.nn import ResidualCRNetwork

    seen = []
    original = ResidualCRNetwork.forward_stream

    def spy(self, x, jacobian=None, **kwargs):
        result = original(self, x, jacobian, **kwargs)
        if result.jacobians is not None:
            seen.append(result.jacobians[0].shape[0])
        return result

    monkeypatch.setattr(ResidualCRNetwork, "forward_stream", spy)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    y = (X[:, 0] > 0).astype(int)
    CRClassifier(
        (8, 8), architecture="residual", stream_rows=4, max_iter=2, random_state=0
    ).fit(X, y)
    assert seen and set(seen) == {4}


# -- every fit reads the current parameters --------------------------------


def _warm_data(n=240, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    return X, y


def _first_fit(**params):
    X, y = _warm_data()
    base = dict(hidden_layer_sizes=(8,), max_iter=3, random_state=0)
    return CRClassifier(**{**base, **params}).fit(X, y), X, y


def _weights(est):
    return np.concatenate(
        [p.detach().numpy().ravel() for p in est.module_.parameters()]
    )


# (parameter, value of the first fit, value of the warm-start fit): each
# changes what the next training steps do.
_TRAINING_PARAMS = [
    ("dreg_lambda", 1e-2, 1.0),
    ("learning_rate_init", 1e-3, 3e-2),
    ("weight_decay", 0.0, 0.5),
    ("beta_1", 0.9, 0.0),
    ("beta_2", 0.999, 0.5),
    ("igpen_lambda", 0.0, 1.0),
    ("stream_rows", 64, 4),
    ("n_projections", "auto", 1),
    ("batch_size", "auto", 16),
    ("dreg", "stream", "local"),
    ("max_iter", 3, 5),
]


@pytest.mark.parametrize(
    ("method", "name", "first", "second"),
    [
        (method, *case)
        for method in ("warm_start", "partial_fit")
        for case in _TRAINING_PARAMS
        # partial_fit runs one epoch whatever max_iter is.
        if not (method == "partial_fit" and case[0] == "max_iter")
    ],
)
def test_changed_parameters_are_honoured_on_the_next_fit(method, name, first, second):
    runs = {}
    for value in (first, second):
        est, X, y = _first_fit(**{name: first})
        est.set_params(**{name: value})
        if method == "warm_start":
            est.set_params(warm_start=True).fit(X, y)
        else:
            est.partial_fit(X, y)
        runs[value] = _weights(est)
    # The same first fit, then one continuation per value: only the changed
    # parameter can make them differ.
    assert not np.array_equal(runs[first], runs[second])


def test_warm_start_builds_net_and_objective_from_current_parameters():
    est, X, y = _first_fit(early_stopping=True)
    est.set_params(
        warm_start=True,
        dreg_lambda=0.5,
        learning_rate_init=2e-2,
        n_iter_no_change=3,
        tol=0.25,
        batch_size=32,
        verbose=0,
    ).fit(X, y)
    net = est.net_
    assert net.objective.dreg_lambda == 0.5
    assert net.optimizer_.param_groups[0]["lr"] == pytest.approx(2e-2)
    assert net.batch_size == 32
    stopping = dict(net.callbacks_)["early_stopping"]
    assert (stopping.patience, stopping.tol) == (3, 0.25)


def test_warm_start_runs_new_callbacks_and_verbosity(capsys):
    from skorch.callbacks import Callback

    class Count(Callback):
        def initialize(self):
            self.epochs = 0
            return self

        def on_epoch_end(self, net, **kwargs):
            self.epochs += 1

    est, X, y = _first_fit()
    counter = Count()
    est.set_params(warm_start=True, callbacks=[counter], verbose=1).fit(X, y)
    assert counter.epochs == est.max_iter
    assert "train_loss" in _ANSI.sub("", capsys.readouterr().out)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("architecture", "residual"),
        ("hidden_layer_sizes", (9,)),
        ("activation", "relu"),
        ("degree", 2),
        ("dropout", 0.2),
        ("spectral_norm", True),
        ("standardize", False),
    ],
)
@pytest.mark.parametrize("method", ["warm_start", "partial_fit"])
def test_network_parameters_cannot_change_under_a_warm_start(method, name, value):
    est, X, y = _first_fit()
    est.set_params(**{name: value})
    with pytest.raises(ValueError, match=f"{name}=.*cannot change"):
        if method == "warm_start":
            est.set_params(warm_start=True).fit(X, y)
        else:
            est.partial_fit(X, y)
    # A cold fit rebuilds the network with the new value.
    est.set_params(warm_start=False).fit(X, y)


def _adam_steps(est):
    return {int(s["step"]) for s in est.net_.optimizer_.state.values()}


def test_partial_fit_keeps_the_optimizer_state_and_warm_start_renews_it():
    X, y = _warm_data(n=200)
    # batch 50: 4 steps an epoch.
    est = CRClassifier((8,), batch_size=50, max_iter=2, random_state=0)
    est.partial_fit(X, y, classes=[0, 1])
    est.partial_fit(X, y)
    assert _adam_steps(est) == {8}
    est.set_params(warm_start=True).fit(X, y)
    # A fresh optimizer, as MLPClassifier's warm start: only this fit's steps.
    assert _adam_steps(est) == {8}
    est.partial_fit(X, y)
    assert _adam_steps(est) == {12}


@pytest.mark.parametrize("method", ["warm_start", "partial_fit"])
def test_a_halved_learning_rate_does_not_leak_into_the_next_fit(method):
    est, X, y = _first_fit(learning_rate_init=1e-2)
    # What the finite-step guard does after a diverged epoch.
    for group in est.net_.optimizer_.param_groups:
        group["lr"] *= 0.5
    if method == "warm_start":
        est.set_params(warm_start=True).fit(X, y)
    else:
        est.partial_fit(X, y)
    assert est.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(1e-2)


def test_history_and_epoch_count_carry_over_a_warm_start():
    est, X, y = _first_fit(max_iter=3)
    est.set_params(warm_start=True, max_iter=2).fit(X, y)
    assert est.n_iter_ == len(est.loss_curve_) == 5
    assert [row["epoch"] for row in est.net_.history] == [1, 2, 3, 4, 5]


# -- early stopping returns one model --------------------------------------


def _ordinal_stopping_run(**params):
    from skorch.callbacks import Callback

    class Record(Callback):
        def initialize(self):
            self.cutpoints, self.weights = [], []
            return self

        def on_epoch_end(self, net, **kwargs):
            self.cutpoints.append(net.criterion_.cutpoints().detach().clone())
            self.weights.append(
                {k: v.clone() for k, v in net.module_.state_dict().items()}
            )

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    y = np.digitize(X[:, 0] + 0.5 * rng.standard_normal(400), [-1.0, 0.0, 1.0])
    record = Record()
    est = CROrdinalRegressor(
        (16,),
        early_stopping=True,
        learning_rate_init=0.05,
        n_iter_no_change=4,
        max_iter=60,
        validation_fraction=0.3,
        callbacks=[record],
        random_state=0,
        **params,
    ).fit(X, y)
    return est, record


def test_ordinal_early_stopping_restores_weights_and_cutpoints_together():
    import torch

    est, record = _ordinal_stopping_run()
    best = est.best_epoch_
    assert best is not None and best < est.n_iter_
    np.testing.assert_array_equal(est.cutpoints_, record.cutpoints[best - 1].double())
    for k, v in est.net_.module_.state_dict().items():
        torch.testing.assert_close(v, record.weights[best - 1][k], rtol=0, atol=0)
    # The fitted float64 network holds exactly those weights.
    for k, v in est.net_.module_.state_dict().items():
        if k not in ("input_mean", "input_scale"):
            torch.testing.assert_close(
                est.module_.state_dict()[k], v.double(), rtol=0, atol=0
            )
    # The returned model's validation loss is the selected epoch's.
    X_held, y_held, _ = dict(est.net_.callbacks_)["early_stopping"].data
    with torch.no_grad():
        est.net_.module_.eval()
        output = est.net_.module_(X_held)
        loss = est.net_.criterion_(output, y_held).mean().item()
    assert loss == pytest.approx(est.net_.history[best - 1, "valid_loss"], rel=1e-5)


def test_best_epoch_follows_the_threshold_not_the_argmin():
    # A large relative tol: later small improvements do not count, so the
    # kept epoch is not the argmin of the validation loss.
    est, _ = _ordinal_stopping_run(tol=0.05)
    valid_loss = np.array(est.net_.history[:, "valid_loss"])
    assert est.best_epoch_ != int(np.argmin(valid_loss)) + 1

    from cr_sklearn.plotting import LossCurveDisplay

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    display = LossCurveDisplay.from_estimator(est)
    assert display.best_epoch == est.best_epoch_
    matplotlib.pyplot.close("all")


def test_verbose_table_and_n_iter_agree_under_early_stopping(capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] > 0).astype(int)
    est = CRClassifier(
        (8,),
        early_stopping=True,
        n_iter_no_change=2,
        learning_rate_init=0.1,
        max_iter=200,
        verbose=1,
        random_state=0,
    ).fit(X, y)
    assert est.n_iter_ < 200
    out = _ANSI.sub("", capsys.readouterr().out)
    rows = [line.split()[0] for line in out.splitlines() if line.split()[:1] != []]
    rows = [row for row in rows if row.isdigit()]
    assert rows == [str(i) for i in range(1, est.n_iter_ + 1)]
    assert "Stopping since valid_loss has not improved" in out


# -- what the fitted summaries describe -------------------------------------


def test_partial_fit_summaries_describe_every_row_since_fit():
    X, y = _warm_data(n=300, d=4)
    est = CRClassifier((8,), random_state=0)
    est.partial_fit(X[:100], y[:100], classes=[0, 1])
    est.partial_fit(X[100:], y[100:])
    np.testing.assert_allclose(est.input_mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(est.input_scale_, X.std(axis=0), rtol=1e-12)
    # Fewer rows than the reservoir holds: the quantiles are exact, under the
    # current network (of the norms input_sensitivity divides).
    norms = est.input_sensitivity(X) * est.gradient_norm_mean_
    np.testing.assert_allclose(est.gradient_norm_mean_, norms.mean(), rtol=1e-12)
    np.testing.assert_allclose(
        est.gradient_norm_quantiles_, np.percentile(norms, np.arange(101))
    )
    # A full fit describes its own data only.
    est.fit(X[:50], y[:50])
    np.testing.assert_allclose(est.input_mean_, X[:50].mean(axis=0))


def test_partial_fit_summaries_use_a_bounded_uniform_sample():
    from cr_sklearn._summaries import RESERVOIR_ROWS

    rng = np.random.default_rng(0)
    est = CRClassifier((4,), random_state=0)
    chunks = [rng.standard_normal((1000, 3)) + i for i in range(4)]
    for i, chunk in enumerate(chunks):
        est.partial_fit(chunk, (chunk[:, 0] > i).astype(int), classes=[0, 1])
    sample = est._stream_rows
    assert sample.shape == (RESERVOIR_ROWS, 3)
    # Every chunk is represented about in proportion (a quarter each).
    shares = np.bincount(np.round(sample[:, 1:].mean(axis=1)).clip(0, 3).astype(int))
    assert shares.min() > 0.15 * RESERVOIR_ROWS
    np.testing.assert_allclose(
        est.input_mean_, np.vstack(chunks).mean(axis=0), rtol=1e-10
    )


def test_fit_summaries_run_under_the_fits_thread_bound(monkeypatch):
    # The summaries' Jacobian pass over every training row is the largest
    # step of a small fit: it must not escape n_threads.
    import cr_sklearn._fit as fit_module

    seen = []
    original = fit_module.set_summaries

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(fit_module, "set_summaries", recording)
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        CRClassifier(**{**FAST, "max_iter": 2}, n_threads=1).fit(X, y)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)
    assert seen == [1]


@pytest.mark.parametrize("cls", [CRClassifier, CROrdinalRegressor])
def test_adam_betas_reach_every_parameter_group(cls):
    X, y = _warm_data()
    est = cls(
        hidden_layer_sizes=(8,),
        max_iter=2,
        beta_1=0.8,
        beta_2=0.95,
        weight_decay=0.1,  # two parameter groups
        random_state=0,
    ).fit(X, y)
    groups = est.net_.optimizer_.param_groups
    assert len(groups) >= 2
    assert all(group["betas"] == (0.8, 0.95) for group in groups)
    # The default is torch's and scikit-learn's Adam.
    default = cls(hidden_layer_sizes=(8,), max_iter=1, random_state=0).fit(X, y)
    assert default.net_.optimizer_.param_groups[0]["betas"] == (0.9, 0.999)


@pytest.mark.parametrize("name", ["beta_1", "beta_2"])
@pytest.mark.parametrize("value", [1.0, -0.1, 1.5])
def test_betas_outside_zero_one_are_rejected(name, value):
    X, y = _warm_data()
    with pytest.raises(ValueError, match=name):
        CRClassifier(**{name: value}).fit(X, y)
