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

# The name tables and plots show for the XGBoost stand-in.
STAND_IN = "HistGradientBoosting (XGBoost stand-in)"


class _LabelEncodedClassifier(ClassifierMixin, BaseEstimator):
    """Fit on codes 0..K-1 and arrays (as XGBoost needs), answer in the labels."""

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
    """HistGradientBoosting with a leaf size of ``n_samples // 10`` in [3, 20]."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        self.min_samples_leaf_ = int(np.clip(len(y) // 10, 3, 20))
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
        Seed of the randomised baselines (studies derive one from theirs).
    n_jobs : int, default=1
        Threads of RandomForest and XGBoost; keep 1 when the study runs fits in
        parallel.

    Returns
    -------
    baselines : dict of str to estimator
        Unfitted, in this order: ``"LogisticRegression"`` and ``"SVC"`` (RBF)
        after a StandardScaler, ``"RandomForest"`` (500 trees), ``"XGBoost"``
        (any labels; ``estimator`` is the ``XGBClassifier``), ``"MLP"`` (two
        layers of 64 after a StandardScaler).

    Notes
    -----
    Without the ``xgboost`` extra a HistGradientBoosting classifier with its
    leaf size scaled to the data stands in, named ``"HistGradientBoosting
    (XGBoost stand-in)"``, and a note is logged (logger ``"cr_sklearn.study"``).
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
