"""Studies: data-fraction, factorial and many-table experiments, tests, plots.

Many fits over cross-validation splits with joblib (any backend), returned as
plain data with pandas summaries, paired tests and matplotlib Displays.
"""

from ._baselines import default_baselines
from ._bayes import bayesian_correlated_ttest, bayesian_signed_rank
from ._compare import compare_study
from ._compare_display import (
    CriticalDifferenceDisplay,
    GapHeatmapDisplay,
    RankCurveDisplay,
)
from ._comparison import ComparisonResult
from ._datasets import load_study_dataset, tabular_preprocessor
from ._deps import check_dependencies
from ._display import StudyDisplay
from ._factorial import PRESETS as FACTORIAL_PRESETS
from ._factorial import FactorialResult, factorial_study
from ._fraction import data_fraction_study
from ._multi_stats import friedman_test, holm_test, nemenyi_test, table_ranks
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
    "ComparisonResult",
    "CriticalDifferenceDisplay",
    "FACTORIAL_PRESETS",
    "FactorialResult",
    "GapHeatmapDisplay",
    "RankCurveDisplay",
    "StudyDisplay",
    "StudyResult",
    "add_gaussian_noise",
    "adjust_pvalues",
    "bayesian_correlated_ttest",
    "bayesian_signed_rank",
    "check_dependencies",
    "compare_study",
    "corrected_interval",
    "corrected_ttest",
    "corrupt_labels",
    "data_fraction_study",
    "default_baselines",
    "factorial_study",
    "friedman_test",
    "holm_test",
    "load_study_dataset",
    "nemenyi_test",
    "paired_interval",
    "paired_test",
    "table_ranks",
    "tabular_preprocessor",
    "wilcoxon_interval",
    "wilcoxon_test",
]
