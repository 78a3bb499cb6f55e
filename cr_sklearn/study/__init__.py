"""Studies: data-fraction and factorial experiments, paired tests, plots.

Many fits over cross-validation splits with joblib (any backend), returned as
plain data with pandas summaries, paired tests and matplotlib Displays.
"""

from ._baselines import default_baselines
from ._datasets import load_study_dataset, tabular_preprocessor
from ._deps import check_dependencies
from ._display import StudyDisplay
from ._factorial import PRESETS as FACTORIAL_PRESETS
from ._factorial import FactorialResult, factorial_study
from ._fraction import data_fraction_study
from ._noise import add_gaussian_noise, corrupt_labels
from ._result import StudyResult
from ._stats import (
    adjust_pvalues,
    corrected_interval,
    corrected_ttest,
    paired_interval,
    paired_test,
    wilcoxon_interval,
    wilcoxon_test,
)

__all__ = [
    "FACTORIAL_PRESETS",
    "FactorialResult",
    "StudyDisplay",
    "StudyResult",
    "add_gaussian_noise",
    "adjust_pvalues",
    "check_dependencies",
    "corrected_interval",
    "corrected_ttest",
    "corrupt_labels",
    "data_fraction_study",
    "default_baselines",
    "factorial_study",
    "load_study_dataset",
    "paired_interval",
    "paired_test",
    "tabular_preprocessor",
    "wilcoxon_interval",
    "wilcoxon_test",
]
