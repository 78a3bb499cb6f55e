"""Studies: data-fraction and factorial experiments, paired tests, plots.

The functions here fit many estimators over cross-validation splits with
joblib (any backend, Dask included) and return plain-data results with
pandas summaries, paired statistical tests and matplotlib Displays.
"""

from ._baselines import default_baselines
from ._display import StudyDisplay
from ._factorial import FactorialResult, factorial_study
from ._fraction import data_fraction_study
from ._noise import add_gaussian_noise, corrupt_labels
from ._result import StudyResult

__all__ = [
    "FactorialResult",
    "StudyDisplay",
    "StudyResult",
    "add_gaussian_noise",
    "corrupt_labels",
    "data_fraction_study",
    "default_baselines",
    "factorial_study",
]
