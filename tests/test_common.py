"""scikit-learn's estimator checks over every public estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from cr_sklearn import CRClassifier, CROrdinalRegressor, DepthGrowth

# Fast settings in one place: small nets, few epochs, still accurate on blobs.
FAST = dict(hidden_layer_sizes=(16,), max_iter=60, random_state=0)


def _estimators():
    residual = dict(FAST, hidden_layer_sizes=(16, 16), architecture="residual")
    return [
        CRClassifier(**FAST),
        CRClassifier(**residual),
        DepthGrowth(
            CRClassifier(**dict(residual, hidden_layer_sizes=(16,))),
            max_blocks=1,
            random_state=0,
        ),
        # A higher rate: the 1-d latent must fold 3 blobs onto a line in 60 epochs.
        CROrdinalRegressor(**FAST, learning_rate_init=1e-2),
    ]


def _expected_failed_checks(estimator):
    expected = {
        "check_sample_weight_equivalence_on_dense_data": (
            "Minibatch Adam with shuffling: weighting a sample by 2 and "
            "repeating it visit different batches, so the fits differ (sklearn "
            "runs this check only on MLP with lbfgs)."
        ),
    }
    if isinstance(estimator, CROrdinalRegressor):
        reason = (
            "decision_function is the 1-d latent score of the ordinal model "
            "(thresholded by cutpoints_, not by 0), not per-class scores, and "
            "the default prediction='median' is not the argmax of predict_proba; "
            "tests/test_ordinal.py runs this check with decision_function hidden "
            "and prediction='mode'."
        )
        expected["check_classifiers_train"] = reason
        expected["check_classifiers_classes"] = reason
    return expected


@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
