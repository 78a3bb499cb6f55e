"""The ordinal scorers and metrics rank labels in one order, never guessed."""

import numpy as np
import pytest
from conftest import FAST, make_ordinal_data
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from cr_sklearn import (
    ORDINAL_SCORERS,
    CROrdinalRegressor,
    OrdinalScorer,
    get_ordinal_scorer,
    macro_averaged_mean_absolute_error,
)

ORDER = ["None", "Some", "Marked"]  # alphabetically: Marked, None, Some


def _predicting(labels):
    """A fitted classifier predicting ``labels`` on ``X = [[0], [1], ...]``."""
    X = np.arange(len(labels), dtype=float)[:, None]
    return DecisionTreeClassifier().fit(X, labels), X


def test_scorer_ranks_by_the_given_order_not_alphabetically():
    # Truth: None, Marked. One model is one grade off on both rows, the other
    # two grades off on both; sorted alphabetically the second looks better.
    y = np.array(["None", "Marked"])
    close, X = _predicting(np.array(["Some", "Some"]))
    far, _ = _predicting(np.array(["Marked", "None"]))
    mae = get_ordinal_scorer("neg_mean_absolute_error", labels=ORDER)
    assert mae(close, X, y) == -1.0
    assert mae(far, X, y) == -2.0
    alphabetical = get_ordinal_scorer("neg_mean_absolute_error", labels=sorted(ORDER))
    assert alphabetical(far, X, y) > alphabetical(close, X, y)  # the old ranking
    qwk = get_ordinal_scorer("quadratic_weighted_kappa", labels=ORDER)
    assert qwk(close, X, y) > qwk(far, X, y)


@pytest.mark.parametrize("name", sorted(set(ORDINAL_SCORERS) - {"accuracy"}))
def test_scorers_refuse_to_guess_the_order_of_strings(name):
    close, X = _predicting(np.array(["Some", "Some"]))
    with pytest.raises(ValueError, match=r"order.*labels=.*ordered pandas"):
        get_ordinal_scorer(name)(close, X, np.array(["None", "Marked"]))


def test_ordered_categorical_y_gives_the_order():
    pd = pytest.importorskip("pandas", reason="Categorical labels need pandas")
    close, X = _predicting(np.array(["Some", "Some"]))
    far, _ = _predicting(np.array(["Marked", "None"]))
    y = pd.Categorical(["None", "Marked"], categories=ORDER, ordered=True)
    mae = get_ordinal_scorer("neg_mean_absolute_error")
    assert mae(close, X, y) == -1.0
    assert mae(far, X, pd.Series(y)) == -2.0


def test_ordinal_estimator_classes_are_the_order():
    X, codes = make_ordinal_data(n=120)
    y = np.array(ORDER)[codes % 3]
    model = CROrdinalRegressor(**FAST, classes=ORDER).fit(X, y)
    ranks = {label: i for i, label in enumerate(ORDER)}
    pred = np.array([ranks[v] for v in model.predict(X)])
    true = codes % 3
    mae = get_ordinal_scorer("neg_mean_absolute_error")
    assert mae(model, X, y) == pytest.approx(-np.mean(np.abs(pred - true)))
    assert mae(model, X, y) == pytest.approx(model.score(X, y))
    # Through a pipeline and a fitted search too.
    pipe = make_pipeline(StandardScaler(), CROrdinalRegressor(**FAST, classes=ORDER))
    search = GridSearchCV(pipe, {"crordinalregressor__degree": [2]}, cv=2)
    search.fit(X, y)
    assert np.isfinite(mae(search, X, y))
    # An order that contradicts the model's is refused.
    with pytest.raises(ValueError, match="differ from the classes_"):
        get_ordinal_scorer("accuracy", labels=ORDER[::-1])(model, X, y)
    assert get_ordinal_scorer("accuracy", labels=ORDER)(model, X, y) >= 0


def test_labels_are_checked():
    close, X = _predicting(np.array(["Some", "Some"]))
    with pytest.raises(ValueError, match="once"):
        get_ordinal_scorer("accuracy", labels=["None", "Some", "None"])
    scorer = get_ordinal_scorer("accuracy", labels=["None", "Marked"])
    with pytest.raises(ValueError, match=r"y_pred contains labels \['Some'\]"):
        scorer(close, X, np.array(["None", "Marked"]))
    assert repr(scorer) == (
        "OrdinalScorer('accuracy', sign=1, labels=['None', 'Marked'])"
    )
    with pytest.raises(ValueError, match="1-d"):
        OrdinalScorer("accuracy", labels=[["a", "b"]])


def test_qwk_weighs_by_distance_in_the_whole_order():
    # Grade "mild" appears in neither truth nor prediction: the quadratic
    # weights still count "severe" three grades above "none", not two.
    order = ["none", "mild", "some", "severe"]
    y = np.array(["none", "some", "severe", "none", "severe"])
    model, X = _predicting(np.array(["none", "severe", "severe", "some", "none"]))
    codes = {label: i for i, label in enumerate(order)}
    expected = cohen_kappa_score(
        [codes[v] for v in y],
        [codes[v] for v in model.predict(X)],
        labels=range(4),
        weights="quadratic",
    )
    qwk = get_ordinal_scorer("quadratic_weighted_kappa", labels=order)
    assert qwk(model, X, y) == pytest.approx(expected)


def test_macro_mae_takes_the_order():
    y_true, y_pred = ["None", "None", "Marked"], ["None", "Some", "Some"]
    # Per class: None (0 + 1) / 2, Marked 1 -> 0.75.
    assert macro_averaged_mean_absolute_error(y_true, y_pred, labels=ORDER) == 0.75
    with pytest.raises(ValueError, match=r"order.*labels="):
        macro_averaged_mean_absolute_error(y_true, y_pred)
    with pytest.raises(ValueError, match="not in labels"):
        macro_averaged_mean_absolute_error(y_true, y_pred, labels=["None", "Some"])
    # Numbers are compared by value without an order, by rank with one.
    assert macro_averaged_mean_absolute_error([1, 5], [5, 5]) == 2.0
    assert macro_averaged_mean_absolute_error([1, 5], [5, 5], labels=[1, 5]) == 0.5
    pd = pytest.importorskip("pandas", reason="Categorical labels need pandas")
    y = pd.Categorical(y_true, categories=ORDER, ordered=True)
    assert macro_averaged_mean_absolute_error(y, y_pred) == 0.75


def test_accuracy_needs_no_order():
    from sklearn.linear_model import LogisticRegression

    X, codes = make_ordinal_data(n=120)
    y = np.array(ORDER)[codes % 3]
    model = LogisticRegression(max_iter=500).fit(X, y)
    accuracy = get_ordinal_scorer("accuracy")
    assert accuracy(model, X, y) == pytest.approx(model.score(X, y))
    weights = np.linspace(0.5, 2.0, len(y))
    assert accuracy(model, X, y, sample_weight=weights) == pytest.approx(
        model.score(X, y, sample_weight=weights)
    )
    # The order-based metrics still ask for it.
    with pytest.raises(ValueError, match="labels="):
        get_ordinal_scorer("neg_mean_absolute_error")(model, X, y)
