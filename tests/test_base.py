"""Messages of the shared estimator base: progress output, warnings, HTML repr."""

import re
import warnings

import numpy as np
import pytest

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
    # 691 training rows in batches of 200 and 77 validation rows: 4 + 1
    # batches an epoch (tqdm writes the bar to stderr).
    clf = CRClassifier((4,), max_iter=2, early_stopping=True, verbose=2)
    clf.set_params(random_state=0).fit(X, y)
    captured = capsys.readouterr()
    assert re.search(r"\d+/5 \[", captured.err)
    assert "valid_score" in captured.out


def test_unstandardised_features_warn_only_without_standardize(pima):
    X, y = pima
    params = dict(hidden_layer_sizes=(4,), max_iter=2, random_state=0)
    with pytest.warns(UserWarning, match=r"not standardised.*StandardScaler") as rec:
        CRClassifier(standardize=False, **params).fit(X, y)
    # Pima's glucose (column 1) and insulin (column 4) are far from unit scale.
    assert "1" in str(rec[0].message) and "4" in str(rec[0].message)
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
