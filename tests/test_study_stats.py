import numpy as np
import pytest
from scipy import stats

import cr_sklearn.study
from cr_sklearn.study import (
    adjust_pvalues,
    corrected_interval,
    corrected_ttest,
    paired_interval,
    paired_test,
    wilcoxon_interval,
    wilcoxon_test,
)


def test_corrected_ttest_matches_nadeau_bengio_formula():
    d = np.array([0.02, 0.03, -0.01, 0.04, 0.01, 0.02, 0.00, 0.05])
    t, p = corrected_ttest(d, test_train_ratio=0.25)
    k = len(d)
    expected_t = d.mean() / np.sqrt((1 / k + 0.25) * d.var(ddof=1))
    assert t == pytest.approx(expected_t)
    assert p == pytest.approx(2 * stats.t.sf(abs(expected_t), df=k - 1))


def test_corrected_ttest_without_overlap_is_the_paired_t_test():
    d = np.random.RandomState(0).normal(0.01, 0.02, size=25)
    t, p = corrected_ttest(d, test_train_ratio=0.0)
    ref = stats.ttest_1samp(d, 0.0)
    assert t == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue)


def test_corrected_ttest_is_more_conservative_than_plain():
    d = np.random.RandomState(1).normal(0.01, 0.02, size=25)
    assert corrected_ttest(d, 0.25)[1] > corrected_ttest(d, 0.0)[1]


def test_corrected_ttest_degenerate_cases():
    assert corrected_ttest(np.zeros(5), 0.25) == (0.0, 1.0)
    with pytest.raises(ValueError, match="at least 2"):
        corrected_ttest([0.1], 0.25)


@pytest.mark.parametrize(
    "differences",
    [
        [0.01, 0.01],
        np.full(5, 0.1),
        # Equal up to rounding noise: no spread to test against either.
        [0.01, 0.01 + 1e-17, 0.01 - 2e-17, 0.01],
        0.3 - np.array([0.29, 0.29, 0.29, 0.29]) + np.array([0, 1e-17, 0, -1e-17]),
    ],
)
def test_no_significance_from_a_degenerate_variance(differences):
    t, p = corrected_ttest(differences, 1.0)
    assert np.isnan(t) and np.isnan(p)
    mean, low, high = corrected_interval(differences, 1.0)
    assert mean == pytest.approx(np.mean(differences))
    assert np.isnan(low) and np.isnan(high)
    # A real spread, however small beside the mean, is tested.
    real = np.asarray(differences, dtype=float) + [
        1e-6 * i for i in range(len(differences))
    ]
    assert np.isfinite(corrected_ttest(real, 1.0)[1])


@pytest.mark.parametrize("ratio", [-0.2, np.nan, np.inf, "a"])
def test_the_test_train_ratio_is_checked(ratio):
    d = [0.01, 0.03, 0.02]
    with pytest.raises(ValueError, match="test_train_ratio"):
        corrected_ttest(d, ratio)
    with pytest.raises(ValueError, match="test_train_ratio"):
        corrected_interval(d, ratio)
    with pytest.raises(ValueError, match="test_train_ratio"):
        paired_test(d, "corrected_t", ratio)


@pytest.mark.parametrize("p", [[0.1, 1.5], [-0.01, 0.2], [0.2, np.inf]])
def test_p_values_outside_the_unit_interval_are_refused(p):
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        adjust_pvalues(p)
    with pytest.raises(ValueError, match="p-values"):
        adjust_pvalues(p, None)


def test_wilcoxon_matches_scipy_and_handles_all_zero():
    d = np.array([0.02, -0.01, 0.03, 0.05, 0.04, 0.01, 0.06])
    stat, p = wilcoxon_test(d)
    ref = stats.wilcoxon(d)
    assert (stat, p) == pytest.approx((ref.statistic, ref.pvalue))
    assert wilcoxon_test(np.zeros(4)) == (0.0, 1.0)


def test_paired_test_dispatch_and_errors():
    d = np.array([0.1, 0.2, 0.15, 0.3])
    assert paired_test(d, "wilcoxon") == wilcoxon_test(d)
    assert paired_test(d, "corrected_t", 0.2) == corrected_ttest(d, 0.2)
    with pytest.raises(ValueError, match="ratio"):
        paired_test(d, "corrected_t")
    with pytest.raises(ValueError, match="test must be"):
        paired_test(d, "sign")
    # The default everywhere is the corrected t-test, which needs the ratio.
    assert paired_test(d, test_train_ratio=0.2) == corrected_ttest(d, 0.2)
    with pytest.raises(ValueError, match="ratio"):
        paired_test(d)


def test_holm_and_bonferroni_known_values():
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(
        adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02]
    )
    np.testing.assert_allclose(adjust_pvalues([0.5, 0.6], "bonferroni"), [1.0, 1.0])
    np.testing.assert_allclose(adjust_pvalues(p, None), p)


def test_holm_ignores_nan_in_the_family():
    out = adjust_pvalues([0.01, np.nan, 0.02], "holm")
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.02])
    with pytest.raises(ValueError, match="correction"):
        adjust_pvalues([0.1], "sidak")


def test_corrected_interval_matches_a_hand_computation():
    d = np.array([0.02, 0.03, -0.01, 0.04, 0.01, 0.02, 0.00, 0.05, 0.03, -0.02])
    k = len(d)
    se = np.sqrt((1 / k + 1.0) * d.var(ddof=1))
    half = stats.t.ppf(0.975, df=k - 1) * se
    mean, low, high = corrected_interval(d, test_train_ratio=1.0)
    assert mean == pytest.approx(d.mean())
    assert (low, high) == pytest.approx((d.mean() - half, d.mean() + half))
    half90 = stats.t.ppf(0.95, df=k - 1) * se
    _, low90, high90 = corrected_interval(d, 1.0, confidence=0.9)
    assert (low90, high90) == pytest.approx((d.mean() - half90, d.mean() + half90))


def test_corrected_interval_agrees_with_the_corrected_ttest():
    rng = np.random.RandomState(3)
    for ratio in (0.0, 0.25, 1.0):
        d = rng.normal(0.02, 0.03, size=10)
        _, low, high = corrected_interval(d, ratio, confidence=0.95)
        _, p = corrected_ttest(d, ratio)
        assert (low > 0 or high < 0) == (p < 0.05)
    # Without overlap it is the plain one-sample t interval.
    d = rng.normal(0.0, 1.0, size=12)
    ref = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert corrected_interval(d, 0.0)[1:] == pytest.approx(ref)


def test_corrected_interval_degenerate_cases_and_errors():
    assert corrected_interval(np.zeros(4), 1.0) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="at least 2"):
        corrected_interval([0.1], 1.0)
    with pytest.raises(ValueError, match="confidence"):
        corrected_interval([0.1, 0.2], 1.0, confidence=1.0)


def test_the_tests_are_exported_from_cr_sklearn_study():
    names = [
        "adjust_pvalues",
        "corrected_interval",
        "corrected_ttest",
        "paired_interval",
        "paired_test",
        "wilcoxon_interval",
        "wilcoxon_test",
    ]
    assert set(names) <= set(cr_sklearn.study.__all__)
    assert cr_sklearn.study.__all__ == sorted(cr_sklearn.study.__all__)


def test_wilcoxon_interval_inverts_the_exact_signed_rank_test():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = rng.normal(0.3, 1.0, size=rng.integers(6, 30))
        estimate, low, high = wilcoxon_interval(d)
        walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
        assert estimate == pytest.approx(np.median(walsh))
        assert low <= estimate <= high
        rejects = stats.wilcoxon(d, method="exact").pvalue <= 0.05
        assert (low > 0 or high < 0) == rejects


def test_wilcoxon_interval_small_samples_and_errors():
    # 5 pairs: the exact test never reaches 0.05 two-sided, nothing to bound.
    estimate, low, high = wilcoxon_interval([0.1, 0.2, 0.3, 0.4, 0.5])
    assert estimate == pytest.approx(0.3) and np.isnan(low) and np.isnan(high)
    assert np.isfinite(wilcoxon_interval(np.arange(1.0, 7.0))[1])
    # Above 100 pairs the normal approximation: close to the exact bound.
    d = np.random.default_rng(1).normal(size=101)
    _, low, high = wilcoxon_interval(d)
    _, low_exact, high_exact = wilcoxon_interval(d[:100])
    assert low < high and abs(low - low_exact) < 0.1
    with pytest.raises(ValueError, match="at least 1"):
        wilcoxon_interval([])
    with pytest.raises(ValueError, match="confidence"):
        wilcoxon_interval([0.1, 0.2], confidence=0)


def test_paired_interval_dispatch():
    d = np.array([0.1, 0.2, 0.15, 0.3, 0.25, 0.2])
    assert paired_interval(d, test_train_ratio=0.25) == corrected_interval(d, 0.25)
    assert paired_interval(d, "wilcoxon", confidence=0.9) == wilcoxon_interval(d, 0.9)
    with pytest.raises(ValueError, match="ratio"):
        paired_interval(d)
    with pytest.raises(ValueError, match="test must be"):
        paired_interval(d, "sign", 0.25)
