"""Baseline classifiers for studies."""

import logging

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

__all__ = ["default_baselines"]

logger = logging.getLogger("cr_sklearn.study")

# The name of HistGradientBoosting when it stands in for XGBoost: the name
# is what tables and plots show.
STAND_IN = "HistGradientBoosting (XGBoost stand-in)"


class _LabelEncodedClassifier(ClassifierMixin, BaseEstimator):
    """Fit ``estimator`` on labels encoded as 0..K-1, answer in the labels.

    XGBoost accepts only contiguous integer classes, and a DataFrame reaches
    it as an array (it refuses column names with ``[``, ``]`` or ``<``).
    """

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y, **fit_params):
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        self.estimator_ = clone(self.estimator).fit(
            _values(X), encoder.transform(y), **fit_params
        )
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[self.estimator_.predict(_values(X)).astype(int)]

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.estimator_.predict_proba(_values(X))


def _values(X):
    return X.to_numpy() if hasattr(X, "to_numpy") else X


class _LeafScaledHistGradientBoosting(ClassifierMixin, BaseEstimator):
    """HistGradientBoostingClassifier whose leaf size follows the training size.

    The default ``min_samples_leaf=20`` leaves no split on the 31 rows of a 5%
    Pima fold; here it is ``n_samples // 10`` clipped to ``[3, 20]``
    (``min_samples_leaf_``), so that boosting behaves on tiny folds roughly as
    XGBoost's default does. The fitted booster is ``estimator_``.
    """

    def __init__(self, random_state=None):
        self.random_state = random_state

    @staticmethod
    def leaf_size(n_samples):
        return int(np.clip(n_samples // 10, 3, 20))

    def fit(self, X, y, sample_weight=None):
        self.min_samples_leaf_ = self.leaf_size(len(y))
        self.estimator_ = HistGradientBoostingClassifier(
            min_samples_leaf=self.min_samples_leaf_, random_state=self.random_state
        ).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.estimator_.classes_
        self.n_features_in_ = self.estimator_.n_features_in_
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    def decision_function(self, X):
        check_is_fitted(self)
        return self.estimator_.decision_function(X)


def default_baselines(*, random_state=None, n_jobs=1):
    """The classifiers CR is compared with in studies.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=None
        Seed of the randomised baselines. Studies replace ``None`` by a seed
        derived from the study's ``random_state`` and the split.
    n_jobs : int, default=1
        Threads of RandomForest and XGBoost. Keep 1 when the study itself
        runs fits in parallel, so workers do not oversubscribe the cores.

    Returns
    -------
    baselines : dict of str to estimator
        ``"LogisticRegression"`` and ``"SVC"`` (RBF kernel), each after a
        StandardScaler; ``"RandomForest"`` (500 trees); ``"XGBoost"``, or
        without xgboost ``"HistGradientBoosting (XGBoost stand-in)"``;
        ``"MLP"`` (MLPClassifier with two layers of 64 after a
        StandardScaler). Unfitted, in this order.

    Notes
    -----
    XGBoost is wrapped so that it accepts any class labels; the wrapper's
    ``estimator`` is the ``XGBClassifier``. Without xgboost (the ``xgboost``
    extra), scikit-learn's HistGradientBoostingClassifier stands in for it,
    ``min_samples_leaf`` scaled to the training size (``n // 10`` clipped to
    ``[3, 20]``; the default of 20 predicts the majority class on a few
    dozen rows). Its name says it is a stand-in, and a one-line note is
    logged (logger ``"cr_sklearn.study"``, level WARNING).

    Examples
    --------
    >>> from cr_sklearn.study import default_baselines
    >>> list(default_baselines())[:3]
    ['LogisticRegression', 'SVC', 'RandomForest']
    """
    baselines = {
        "LogisticRegression": make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=1000)
        ),
        "SVC": make_pipeline(StandardScaler(), SVC(kernel="rbf")),
        "RandomForest": RandomForestClassifier(
            n_estimators=500, n_jobs=n_jobs, random_state=random_state
        ),
    }
    try:
        from xgboost import XGBClassifier
    except ImportError:
        # A note, not a warning: no source line, once per call.
        logger.warning(
            "Note: xgboost is not installed; HistGradientBoosting (leaf size "
            "scaled to the data) stands in for XGBoost. For XGBoost: "
            "pip install 'cr_sklearn[xgboost]'."
        )
        baselines[STAND_IN] = _LeafScaledHistGradientBoosting(random_state=random_state)
    else:
        baselines["XGBoost"] = _LabelEncodedClassifier(
            XGBClassifier(n_jobs=n_jobs, random_state=random_state)
        )
    baselines["MLP"] = make_pipeline(
        StandardScaler(),
        MLPClassifier(
            hidden_layer_sizes=(64, 64), max_iter=500, random_state=random_state
        ),
    )
    return baselines
