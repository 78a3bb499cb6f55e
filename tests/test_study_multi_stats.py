"""Tests over tables against independent references.

scipy's Friedman test, autorank's mean ranks and critical difference,
scikit-posthocs' Nemenyi and Siegel-Friedman (Holm's z) tests and baycomp's
Bayesian tests.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from cr_sklearn.study import (
    bayesian_correlated_ttest,
    bayesian_signed_rank,
    compare_study,
    friedman_test,
    holm_test,
    nemenyi_test,
    table_ranks,
)

pd = pytest.importorskip("pandas")


def _scores(n=14, k=5, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.8, 0.05, (n, k)) + np.linspace(0.06, 0, k)
    return np.round(s, 2) if ties else s


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape", [(2, 3), (10, 4), (30, 7)])
def test_friedman_equals_scipy(shape, ties):
    s = _scores(*shape, ties=ties)
    ours = friedman_test(s)
    ref = stats.friedmanchisquare(*s.T)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert np.allclose(ours.mean_ranks, stats.rankdata(-s, axis=1).mean(axis=0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_ranks_critical_difference_and_friedman_equal_autorank(seed):
    autorank = pytest.importorskip("autorank")
    s = _scores(seed=seed)
    frame = pd.DataFrame(s, columns=list("abcde"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = autorank.autorank(
            frame,
            alpha=0.05,
            order="descending",
            force_mode="nonparametric",
            verbose=False,
        )
    pvalues, cd, ranks = nemenyi_test(s, alpha=0.05)
    assert ref.omnibus == "friedman"
    assert dict(zip("abcde", ranks, strict=True)) == pytest.approx(
        ref.rankdf["meanrank"].to_dict(), rel=1e-12
    )
    # autorank's studentized range quantile is computed to about 1e-5
    assert cd == pytest.approx(ref.cd, rel=1e-4)
    assert friedman_test(s).pvalue == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("seed", [0, 3])
def test_nemenyi_and_holm_equal_scikit_posthocs(seed):
    sp = pytest.importorskip("scikit_posthocs")
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    s = _scores(n=20, k=5, seed=seed)
    pvalues, _, _ = nemenyi_test(s)
    assert np.allclose(pvalues, sp.posthoc_nemenyi_friedman(s).to_numpy(), atol=1e-10)
    # Holm against a reference: the unadjusted z-tests of Siegel and Castellan
    # (Demšar's), then Holm's step-down over the k - 1 comparisons.
    for reference in (0, 2):
        raw = sp.posthoc_siegel_friedman(s, p_adjust=None).to_numpy()[reference]
        z, p, adjusted = holm_test(s, reference)
        others = np.arange(5) != reference
        assert np.allclose(p[others], raw[others], atol=1e-12)
        holm = multitest.multipletests(raw[others], method="holm")[1]
        assert np.allclose(adjusted[others], holm, atol=1e-12)
        assert np.isnan(z[reference]) and np.isnan(adjusted[reference])


def test_critical_difference_matches_demsar_table():
    # Demšar (2006), Table 5(a): q_0.05 for k = 2..6, times sqrt(k(k+1)/6N)
    q = {2: 1.960, 3: 2.343, 4: 2.569, 5: 2.728, 6: 2.850}
    for k, value in q.items():
        _, cd, _ = nemenyi_test(_scores(n=10, k=k))
        assert cd == pytest.approx(value * np.sqrt(k * (k + 1) / 60), abs=2e-3)


@pytest.mark.parametrize("rope", [0.0, 0.01, 0.03])
@pytest.mark.parametrize("n", [3, 12, 40])
def test_bayesian_signed_rank_equals_baycomp(rope, n):
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(n)
    a = rng.normal(0.8, 0.05, n)
    b = a - rng.normal(0.01, 0.02, n)
    ours = bayesian_signed_rank(a - b, rope, random_state=1)
    # baycomp's differences are y - x; its left is x better
    ref = baycomp.SignedRankTest.probs(b, a, rope=rope, random_state=2)
    if rope == 0:
        ref = (ref[1], 0.0, ref[0])
    else:
        ref = (ref[2], ref[1], ref[0])
    assert np.allclose(ours, ref, atol=0.01)
    assert sum(ours) == pytest.approx(1.0)


@pytest.mark.parametrize("rope", [0.0, 0.005, 0.02])
@pytest.mark.parametrize("runs", [1, 3])
def test_bayesian_correlated_ttest_equals_baycomp(rope, runs):
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(runs)
    folds = 5
    d = rng.normal(0.01, 0.02, folds * runs)
    ours = bayesian_correlated_ttest(d, rho=1 / folds, rope=rope)
    ref = baycomp.CorrelatedTTest.probs(np.zeros_like(d), d, rope=rope, runs=runs)
    if rope == 0:
        ref = (ref[1], 0.0, ref[0])
    else:
        ref = (ref[2], ref[1], ref[0])
    assert np.allclose(ours, ref, atol=1e-10)


def test_signed_rank_is_seeded():
    d = _scores(n=10, k=1)[:, 0] - 0.8
    first = bayesian_signed_rank(d, 0.01, random_state=3, n_samples=5000)
    assert first == bayesian_signed_rank(d, 0.01, random_state=3, n_samples=5000)


def test_table_ranks_share_ties():
    assert table_ranks([[0.9, 0.8, 0.8]]).tolist() == [[1.0, 2.5, 2.5]]


@pytest.mark.parametrize(
    "scores, match",
    [
        ([[0.9, 0.8, 0.7]], "at least 2 tables"),
        ([[0.9], [0.8]], "at least 3 models"),
        ([[0.9, 0.8], [0.8, 0.7]], "at least 3 models.*paired test"),
        ([[0.5, 0.5, 0.5], [0.7, 0.7, 0.7]], "ties every model"),
        ([[0.9, np.nan, 0.7], [0.8, 0.7, 0.6]], "NaN"),
        ([0.9, 0.8], "2-D"),
    ],
)
def test_friedman_refuses_what_it_cannot_test(scores, match):
    with pytest.raises(ValueError, match=match):
        friedman_test(scores)


def test_other_tests_refuse_bad_input():
    with pytest.raises(ValueError, match="at least 2 models"):
        nemenyi_test([[0.9], [0.8]])
    with pytest.raises(ValueError, match="reference"):
        holm_test(_scores(k=3), reference=3)
    with pytest.raises(ValueError, match="rope"):
        bayesian_signed_rank([0.1, 0.2], rope=-1)
    with pytest.raises(ValueError, match="rho"):
        bayesian_correlated_ttest([0.1, 0.2], rho=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        bayesian_signed_rank([0.1])


# --- the result's statistics are these tests on the per-table means ---------


@pytest.fixture(scope="module")
def study():
    from sklearn.datasets import make_classification
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.tree import DecisionTreeClassifier

    tables = [
        (f"t{i}", *make_classification(80 + 300 * i, n_features=6, random_state=i))
        for i in range(6)
    ]
    models = {
        "logreg": LogisticRegression(),
        "tree": DecisionTreeClassifier(max_depth=3),
        "nb": GaussianNB(),
        "dummy": DummyClassifier(),
    }
    return compare_study(
        models,
        tables,
        cv=4,
        fractions=(0.3, 1.0),
        scoring=["accuracy", "neg_log_loss"],
        progress=False,
    )


def test_result_statistics_match_the_functions(study):
    for metric, sign in (("accuracy", 1), ("log_loss", -1)):
        scores = study.table_scores(metric)
        for fraction in study.fractions:
            good = sign * scores.loc[fraction].to_numpy()
            friedman = study.friedman(metric).loc[fraction]
            ref = stats.friedmanchisquare(*good.T)
            assert friedman["statistic"] == pytest.approx(ref.statistic)
            p, cd, ranks = nemenyi_test(good)
            pairs = study.nemenyi(metric)
            pairs = pairs[pairs["fraction"] == fraction]
            assert pairs["critical_difference"].iloc[0] == pytest.approx(cd)
            assert pairs["p_value"].to_numpy() == pytest.approx(
                p[np.triu_indices(4, 1)]
            )
            summary = study.summary(metric).loc[fraction]
            assert summary["mean_rank"].to_numpy() == pytest.approx(ranks)
            holm = study.holm("nb", metric=metric).loc[fraction]
            _, _, adjusted = holm_test(good, 2)
            assert holm["p_adjusted"].to_numpy() == pytest.approx(adjusted[[0, 1, 3]])


def test_gap_to_best_and_grouping(study):
    gap = study.gap_to_best()
    assert (gap.min(axis=1) == 0).all() and (gap >= 0).all().all()
    normalized = study.gap_to_best(normalize=True)
    assert (normalized.max(axis=1) == 1).all()
    by_size = study.summary(by="size")
    assert set(by_size.index.get_level_values("group")) == {
        "< 1,000 rows",
        "1,000-9,999 rows",
    }
    labels = {t: ("even" if int(t[1]) % 2 == 0 else "odd") for t in study.tables}
    friedman = study.friedman(by=labels)
    assert friedman["n_tables"].tolist() == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="no label"):
        study.summary(by={"t0": "a"})


def test_wins_ties_losses_follow_the_paired_tests(study):
    pairs = study.pairwise("logreg", test="corrected_t")
    wtl = study.wins_ties_losses("logreg")
    for (fraction, model), row in wtl.iterrows():
        sel = pairs[(pairs["fraction"] == fraction) & (pairs["model"] == model)]
        assert row["wins"] + row["ties"] + row["losses"] == len(study.tables)
        significant = sel["p_value"] <= 0.05
        assert row["wins"] == int((significant & (sel["mean_diff"] > 0)).sum())
        assert row["losses"] == int((significant & (sel["mean_diff"] < 0)).sum())
    # the dummy loses everywhere; with log-loss (lower better) too
    assert (wtl.xs("dummy", level="model")["losses"] == 6).all()
    loss = study.wins_ties_losses("logreg", metric="log_loss")
    assert (loss.xs("dummy", level="model")["losses"] >= 5).all()
    assert (loss.xs("dummy", level="model")["effect"] > 0).all()  # more loss


def test_bayesian_tests_of_the_result(study):
    signed = study.bayesian_signed_rank("logreg", rope=0.01, random_state=0)
    assert np.allclose(
        signed[["p_model_better", "p_equivalent", "p_reference_better"]].sum(axis=1), 1
    )
    assert (signed.xs("dummy", level="model")["p_reference_better"] > 0.9).all()
    per_table = study.bayesian_correlated_ttest("logreg", rope=0.01)
    assert len(per_table) == 2 * 6 * 3
    # the dummy is worse on every table
    dummy = per_table[per_table["model"] == "dummy"]
    assert (dummy["p_reference_better"] > 0.9).all()


def test_markdown_names_each_test_and_refusals(study):
    text = study.to_markdown("logreg", rope=0.01)
    for name in (
        "Friedman",
        "Holm",
        "Nemenyi",
        "Wins / ties / losses",
        "corrected t (Nadeau-Bengio)",
        "Bayesian signed-rank",
    ):
        assert name in text
    two = study.to_markdown("logreg", by={t: t for t in study.tables})
    assert "not run" in two and "at least 2 tables" in two
