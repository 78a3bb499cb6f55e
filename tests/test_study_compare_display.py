"""The Displays of a ComparisonResult: axes, labels, lines and markers."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from cr_sklearn.study import (  # noqa: E402
    ComparisonResult,
    CriticalDifferenceDisplay,
    GapHeatmapDisplay,
    RankCurveDisplay,
)

pytest.importorskip("pandas")

MODELS = ["a", "b", "c", "d", "e"]
TABLES = [f"t{i}" for i in range(10)]


@pytest.fixture(scope="module")
def result():
    """Model ``a`` best, ``e`` worst, ``b``-``d`` close, on 10 tables x 3 splits."""
    rng = np.random.default_rng(0)
    shift = {"a": 0.1, "b": 0.03, "c": 0.02, "d": 0.01, "e": -0.2}
    records = []
    for t, table in enumerate(TABLES):
        for fraction in (0.25, 1.0):
            for s in range(3):
                for model in MODELS:
                    value = 0.7 + 0.01 * t + shift[model] + rng.normal(0, 0.02)
                    records.append(
                        {
                            "table": table,
                            "model": model,
                            "fraction": fraction,
                            "split": s,
                            "repeat": 0,
                            "fold": s,
                            "n_train": int(200 * fraction),
                            "n_test": 100,
                            "metric": "accuracy",
                            "value": value,
                            "greater_is_better": True,
                            "fit_time": 0.1,
                            "score_time": 0.01,
                            "error": "",
                        }
                    )
    return ComparisonResult(
        records,
        tables=TABLES,
        models=MODELS,
        fractions=[0.25, 1.0],
        metrics=["accuracy"],
    )


def test_critical_difference_diagram_structure(result):
    display = CriticalDifferenceDisplay.from_result(result)
    ax = display.ax_
    assert display.figure_ is ax.figure
    # one elbow line and one marker per model, at its mean rank
    ranks = result.summary().loc[1.0]["mean_rank"]
    assert set(display.lines_) == set(display.markers_) == set(MODELS)
    for model, marker in display.markers_.items():
        assert marker.get_xdata()[0] == pytest.approx(ranks[model])
        assert marker.get_marker() == "o"
    # labels name each model with its rank
    texts = [t.get_text() for t in ax.texts]
    for model in MODELS:
        assert f"{model} ({ranks[model]:.2f})" in texts
    # the CD bar is as long as Nemenyi's critical difference
    nemenyi = result.nemenyi()
    cd = nemenyi[nemenyi["fraction"] == 1.0]["critical_difference"].iloc[0]
    x = display.cd_line_.get_xdata()
    assert x[1] - x[0] == pytest.approx(cd)
    assert f"CD = {cd:.2f}" in texts
    # a bar per clique; e is apart from a
    assert len(display.cliques_) == len(display.cliques())
    assert not any({"a", "e"} <= set(c) for c in display.cliques())
    assert "Nemenyi" in ax.get_title() and "10 tables" in ax.get_title()
    assert ax.get_xlabel() == "mean rank (1 = best)"
    plt.close(display.figure_)


def test_cliques_follow_the_critical_difference():
    display = CriticalDifferenceDisplay(
        mean_ranks={"a": 1.0, "b": 1.5, "c": 2.4, "d": 3.9},
        critical_difference=1.0,
        n_tables=20,
    )
    assert display.cliques() == [("a", "b"), ("b", "c")]
    display.plot()
    assert len(display.cliques_) == 2
    assert len(display.ax_.lines) == 4 + 4 + 2 + 1  # lines, markers, cliques, CD
    plt.close(display.figure_)


def test_critical_difference_by_group_needs_the_group(result):
    with pytest.raises(ValueError, match="group="):
        CriticalDifferenceDisplay.from_result(result, by="size")
    display = CriticalDifferenceDisplay.from_result(
        result, by="size", group="< 1,000 rows", fraction=0.25
    )
    assert "< 1,000 rows" in display.ax_.get_title()
    plt.close(display.figure_)


def test_rank_curves_structure(result):
    display = RankCurveDisplay.from_result(result, reference="c")
    assert set(display.lines_) == set(MODELS)
    assert set(display.errorbars_) == set(MODELS) - {"c"}
    assert np.allclose(display.lines_["a"].get_ydata(), [1.0, 1.0])
    assert display.ax_.yaxis_inverted()  # rank 1 on top
    assert display.diff_ax_.get_ylabel() == "accuracy: model − c"
    assert [t.get_text() for t in display.ax_.get_xticklabels()] == ["25%", "100%"]
    # e's difference to c is about -0.22, its interval excludes 0
    (line, _, (bars,)) = display.errorbars_["e"]
    assert np.all(line.get_ydata() < -0.15)
    plt.close(display.figure_)


def test_gap_heatmap_structure(result):
    display = GapHeatmapDisplay.from_result(result, normalize=True)
    assert display.texts_.shape == (len(TABLES), len(MODELS))
    assert [t.get_text() for t in display.ax_.get_xticklabels()] == MODELS
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == TABLES
    values = display.image_.get_array()
    assert values.shape == (10, 5)
    assert np.allclose(values[:, MODELS.index("e")], 1.0)  # the worst everywhere
    assert np.allclose(values[:, MODELS.index("a")], 0.0)  # the best everywhere
    assert display.colorbar_.ax.get_ylabel() == "normalised gap"
    plt.close(display.figure_)
