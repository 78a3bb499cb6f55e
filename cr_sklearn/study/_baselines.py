"""Baseline classifiers for studies."""

import warnings

from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

__all__ = ["default_baselines"]


class _LabelEncodedClassifier(ClassifierMixin, BaseEstimator):
    """Fit ``estimator`` on labels encoded as 0..K-1, answer in the labels.

    XGBoost only accepts contiguous integer classes; wrapping it lets a study
    use any labels (strings, wine quality scores 3..8).
    """

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y, **fit_params):
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        self.estimator_ = clone(self.estimator).fit(
            X, encoder.transform(y), **fit_params
        )
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[self.estimator_.predict(X).astype(int)]

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)


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
        ``"HistGradientBoosting"`` with a warning when xgboost is not
        installed; ``"MLP"`` (MLPClassifier with two layers of 64 after a
        StandardScaler). Unfitted, in this order.

    Notes
    -----
    XGBoost is wrapped so that it accepts any class labels (it needs
    0..K-1); the wrapper's ``estimator`` is the ``XGBClassifier``.

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
        warnings.warn(
            "xgboost is not installed; HistGradientBoostingClassifier replaces "
            "XGBoost in the baselines (install the 'xgboost' extra to use it).",
            UserWarning,
            stacklevel=2,
        )
        baselines["HistGradientBoosting"] = HistGradientBoostingClassifier(
            random_state=random_state
        )
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
