"""scikit-learn's estimator checks over every public estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from cr_sklearn import CRClassifier

# Fast settings in one place: small nets, few epochs, still accurate on blobs.
FAST = dict(hidden_layer_sizes=(16,), max_iter=60, random_state=0)


def _estimators():
    return [CRClassifier(**FAST)]


def _expected_failed_checks(estimator):
    return {
        "check_sample_weight_equivalence_on_dense_data": (
            "Minibatch Adam with shuffling: weighting a sample by 2 and "
            "repeating it visit different batches, so the fits differ (sklearn "
            "runs this check only on MLP with lbfgs)."
        ),
    }


@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
