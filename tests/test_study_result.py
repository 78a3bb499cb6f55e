"""Tests of StudyResult (summaries, paired tests, exports) and StudyDisplay."""

import io

import matplotlib
import numpy as np
import pytest

from cr_sklearn.study import StudyDisplay, StudyResult
from cr_sklearn.study._stats import corrected_ttest

matplotlib.use("Agg")
pd = pytest.importorskip("pandas")

N_SPLITS = 10
FRACTIONS = [0.1, 1.0]


def _result(shift=0.05, noise=0.01):
    """Model 'better' beats 'ref' by ``shift`` on every split (plus noise)."""
    rng = np.random.RandomState(0)
    base = rng.uniform(0.6, 0.8, size=(len(FRACTIONS), N_SPLITS))
    values = {
        "ref": base,
        "better": base + shift + rng.normal(0, noise, base.shape),
        "same": base + rng.normal(0, noise, base.shape),
    }
    records = []
    for model, table in values.items():
        for i, fraction in enumerate(FRACTIONS):
            for s in range(N_SPLITS):
                records.append(
                    {
                        "model": model,
                        "fraction": fraction,
                        "split": s,
                        "repeat": s // 5,
                        "fold": s % 5,
                        "n_train": int(400 * fraction),
                        "n_test": 100,
                        "metric": "accuracy",
                        "value": float(table[i, s]),
                        "fit_time": 0.1 * (i + 1),
                        "score_time": 0.01,
                    }
                )
    return StudyResult(
        records, models=list(values), fractions=FRACTIONS, metrics=["accuracy"]
    ), values


def test_to_frame_is_tidy():
    result, _ = _result()
    frame = result.to_frame()
    assert frame.shape == (3 * 2 * N_SPLITS, 11)
    assert list(frame.columns[:3]) == ["model", "fraction", "split"]
    assert result.n_splits == N_SPLITS


def test_summary_mean_std():
    result, values = _result()
    summary = result.summary()
    assert list(summary.index.get_level_values("model").unique()) == [
        "ref",
        "better",
        "same",
    ]
    row = summary.loc[("better", 1.0)]
    assert row["mean"] == pytest.approx(values["better"][1].mean())
    assert row["std"] == pytest.approx(values["better"][1].std(ddof=1))
    assert row["n_splits"] == N_SPLITS and row["n_train"] == 400
    assert row["fit_time"] == pytest.approx(0.2)


def test_compare_wilcoxon_holm():
    result, values = _result()
    cmp = result.compare("ref", test="wilcoxon")
    assert len(cmp) == 4 and set(cmp["model"]) == {"better", "same"}
    better = cmp[(cmp.model == "better") & (cmp.fraction == 0.1)].iloc[0]
    assert better["mean_diff"] == pytest.approx(
        (values["better"][0] - values["ref"][0]).mean()
    )
    # all ten differences positive: the exact two-sided p is 2 / 2**10
    assert better["p_value"] == pytest.approx(2 / 2**10)
    assert better["p_adjusted"] >= better["p_value"]
    same = cmp[cmp.model == "same"]
    assert (same["p_adjusted"] > 0.05).all()
    assert (cmp["n_pairs"] == N_SPLITS).all()


def test_compare_corrected_t_uses_test_train_ratio():
    result, values = _result()
    cmp = result.compare("ref", test="corrected_t", correction=None)
    row = cmp[(cmp.model == "better") & (cmp.fraction == 0.1)].iloc[0]
    diff = values["better"][0] - values["ref"][0]
    t, p = corrected_ttest(diff, 100 / 40)
    assert row["statistic"] == pytest.approx(t)
    assert row["p_value"] == pytest.approx(p) and row["p_adjusted"] == row["p_value"]


def test_compare_pairs_only_shared_splits():
    result, _ = _result()
    records = [
        r for r in result.records if not (r["model"] == "same" and r["split"] == 0)
    ]
    partial = StudyResult(
        records, models=result.models, fractions=FRACTIONS, metrics=["accuracy"]
    )
    cmp = partial.compare("ref")
    assert set(cmp.loc[cmp.model == "same", "n_pairs"]) == {N_SPLITS - 1}


def test_compare_errors():
    result, _ = _result()
    with pytest.raises(ValueError, match="reference"):
        result.compare("nope")
    with pytest.raises(ValueError, match="metric"):
        result.compare(metric="f1")
    with pytest.raises(ValueError, match="correction"):
        result.compare(correction="sidak")


def test_to_markdown_has_scores_and_pvalues():
    result, _ = _result()
    text = result.to_markdown("ref", details=True)
    lines = text.splitlines()
    assert lines[0] == (
        "| model (p: corrected t (Nadeau-Bengio); *: Holm-adjusted p ≤ 0.05) "
        "| 10% | 100% | fit time (s) |"
    )
    assert lines[2].startswith("| ref (reference) |")
    better = next(line for line in lines if line.startswith("| better |"))
    assert "±" in better and "(p=" in better
    assert "unadjusted two-sided corrected t (Nadeau-Bengio) test" in text
    assert "after Holm's correction over the 4 comparisons" in text
    assert "| better | 10% | +0.0" in text


def test_csv_round_trip(tmp_path):
    result, _ = _result()
    text = result.to_csv()
    assert text.splitlines()[0].startswith("model,fraction,split,repeat,fold")
    result.to_csv(tmp_path / "r.csv")
    back = StudyResult.from_frame(pd.read_csv(tmp_path / "r.csv"))
    assert back.models == result.models and back.fractions == FRACTIONS
    pd.testing.assert_frame_equal(back.summary(), result.summary())
    buf = io.StringIO()
    result.to_csv(buf)
    assert buf.getvalue() == text
    with pytest.raises(ValueError, match="lacks the columns"):
        StudyResult.from_frame(pd.DataFrame({"model": ["a"]}))


def test_display_draws_lines_and_differences():
    import matplotlib.pyplot as plt

    result, values = _result()
    display = StudyDisplay.from_result(result)  # draws, as from_estimator does
    assert display.figure_ is display.ax_.figure
    assert list(display.lines_) == ["ref", "better", "same"]
    assert len(display.ax_.get_lines()) == 3
    line = display.lines_["better"]
    np.testing.assert_allclose(line.get_xdata(), FRACTIONS)
    np.testing.assert_allclose(line.get_ydata(), values["better"].mean(axis=1))
    assert line.get_label() == "better"
    # No std bands by default: the differences carry the uncertainty.
    assert display.fill_between_ == {} and len(display.ax_.collections) == 0
    assert list(display.errorbars_) == ["better", "same"]
    assert display.ax_.get_ylabel() == "accuracy"
    assert "fraction" in display.ax_.get_xlabel().lower()
    ticks = [t.get_text() for t in display.ax_.get_xticklabels()]
    assert ticks == ["10%\n40", "100%\n400"]  # the mean rows fitted below
    legend = [t.get_text() for t in display.legend_.get_texts()]
    assert legend == ["ref (reference)", "better", "same"]
    plt.close("all")


def test_display_bands_on_request():
    import matplotlib.pyplot as plt

    result, _ = _result()
    display = StudyDisplay.from_result(result, bands=True)
    assert len(display.fill_between_) == 3 and len(display.ax_.collections) == 3
    assert "std" in display.ax_.get_title()
    plt.close("all")


def test_display_on_given_axes_with_subset_and_no_bands():
    import matplotlib.pyplot as plt

    result, _ = _result()
    fig, ax = plt.subplots()
    display = StudyDisplay.from_result(result, models=["same"], ax=ax, bands=False)
    assert display.ax_ is ax and display.figure_ is fig
    assert len(ax.get_lines()) == 1 and display.fill_between_ == {}
    with pytest.raises(ValueError, match="Unknown models"):
        StudyDisplay.from_result(result, models=["other"])
    plt.close("all")


def _cell_p(text, model, column):
    """The p-value text and mark of a model's cell of the to_markdown table."""
    line = next(row for row in text.splitlines() if row.startswith(f"| {model} |"))
    cell = line.split(" | ")[column]
    return cell[cell.index("(p=") + 3 : cell.index(")")]


def test_table_shows_unadjusted_p_marked_where_holm_rejects():
    from cr_sklearn.study._records import _format_p

    result, _ = _result(shift=0.03, noise=0.005)
    cmp = result.compare("ref")
    text = result.to_markdown("ref")
    for row in cmp.itertuples():
        column = 1 + FRACTIONS.index(row.fraction)
        mark = "*" if row.p_adjusted <= 0.05 else ""
        assert _cell_p(text, row.model, column) == _format_p(row.p_value) + mark
    # The data make the two differ: a cell whose unadjusted p is below 0.05
    # without a mark, and a marked one.
    assert cmp["reject"].any()
    assert ((cmp["p_value"] <= 0.05) & ~cmp["reject"]).any()
    assert list(cmp["reject"]) == list(cmp["p_adjusted"] <= 0.05)


def test_one_test_by_default_for_table_plot_and_api():
    import matplotlib.pyplot as plt

    from cr_sklearn.study import corrected_interval, wilcoxon_interval

    result, values = _result(shift=0.03, noise=0.005)
    cmp = result.compare("ref")
    assert cmp.equals(result.compare("ref", test="corrected_t", correction="holm"))
    assert result.to_markdown("ref") == result.to_markdown("ref", test="corrected_t")
    display = StudyDisplay.from_result(result)
    assert "corrected t" in display.diff_ax_.get_title()
    assert "corrected t (Nadeau-Bengio) test, unadjusted" in (
        display.figure_.get_suptitle().replace("\n", " ")
    )
    for test, interval in (
        ("corrected_t", lambda d: corrected_interval(d, 100 / 400)),
        ("wilcoxon", wilcoxon_interval),
    ):
        display = StudyDisplay.from_result(result, test=test)
        cmp = result.compare("ref", test=test)
        d = values["better"][1] - values["ref"][1]
        np.testing.assert_allclose(display.differences["better"][1], interval(d))
        for model in ("better", "same"):
            rows = cmp[cmp.model == model]
            np.testing.assert_array_equal(display.rejected[model], rows["reject"])
            # One * per rejected difference, as in the table.
            assert len(display.marks_[model]) == rows["reject"].sum()
    assert "Wilcoxon signed-rank" in result.to_markdown("ref", test="wilcoxon")
    assert "Wilcoxon" in display.diff_ax_.get_title()
    plt.close("all")


def test_compare_intervals_and_errors_of_the_new_options():
    result, values = _result()
    cmp = result.compare("ref", test="wilcoxon", alpha=0.1)
    row = cmp[(cmp.model == "better") & (cmp.fraction == 1.0)].iloc[0]
    from cr_sklearn.study import wilcoxon_interval

    d = values["better"][1] - values["ref"][1]
    assert (row.estimate, row.ci_low, row.ci_high) == pytest.approx(
        wilcoxon_interval(d, confidence=0.9)
    )
    with pytest.raises(ValueError, match="alpha"):
        result.compare(alpha=1.5)
    with pytest.raises(ValueError, match="test must be one of"):
        result.compare(test="sign")
    text = result.to_markdown("ref", correction=None)
    assert "*: p ≤ 0.05 (no multiple-testing correction)" in text


def test_equal_differences_on_every_split_are_not_significant():
    # 'better' is 'ref' + 0.05 on every split, up to rounding: no variance.
    result, _ = _result(shift=0.05, noise=0.0)
    cmp = result.compare("ref")
    better = cmp[cmp.model == "better"]
    assert better["p_value"].isna().all() and not better["reject"].any()
    text = result.to_markdown("ref")
    assert _cell_p(text, "better", 1) == "n/a"
    assert "p=n/a: the differences to ref are the same on every split" in text
    # Without such a comparison, no note.
    assert "p=n/a" not in _result()[0].to_markdown("ref")
