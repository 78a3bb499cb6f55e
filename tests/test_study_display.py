"""The figures the Displays draw: structure a reader relies on.

The legend stays outside the data, nothing is cut off at the figure's edge,
the title names the data and the protocol, the reference model stands out,
and the study's difference intervals agree with its corrected t-tests.
"""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from conftest import FAST  # noqa: E402

from cr_sklearn import CRClassifier  # noqa: E402
from cr_sklearn.plotting import LossCurveDisplay  # noqa: E402
from cr_sklearn.study import StudyDisplay, StudyResult, corrected_ttest  # noqa: E402

pytest.importorskip("pandas")

MODELS = ["CR", "LogisticRegression", "SVC", "RandomForest", "MLP"]
FRACTIONS = [0.05, 0.1, 0.25, 0.5, 1.0]


def _study(n_repeats=5, n_folds=5, fractions=FRACTIONS):
    rng = np.random.RandomState(0)
    n_splits = n_repeats * n_folds
    records = []
    for m, model in enumerate(MODELS):
        for i, fraction in enumerate(fractions):
            shift = 0.1 * (m == 1)  # LogisticRegression better than CR
            for s in range(n_splits):
                records.append(
                    {
                        "model": model,
                        "fraction": fraction,
                        "split": s,
                        "repeat": s // n_folds,
                        "fold": s % n_folds,
                        "n_train": int(614 * fraction),
                        "n_test": 154,
                        "metric": "accuracy",
                        "value": 0.7 + 0.01 * i + shift + rng.normal(0, 0.01),
                        "fit_time": 0.1,
                        "score_time": 0.01,
                    }
                )
    return StudyResult(
        records, models=MODELS, fractions=list(fractions), metrics=["accuracy"]
    )


def _overlaps(a, b):
    return not (a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0)


def _check_layout(figure, legend, axes):
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    for ax in axes:
        # The legend is outside every axes' data area.
        assert not _overlaps(box, ax.get_window_extent(renderer)), ax
    # Everything drawn (labels, ticks, legend, titles) lies inside the
    # figure: saving without bbox_inches="tight" cuts nothing off.
    tight = figure.get_tightbbox(renderer)  # in inches
    width, height = figure.get_size_inches()
    assert tight.x0 >= -0.01 and tight.y0 >= -0.01
    assert tight.x1 <= width + 0.01 and tight.y1 <= height + 0.01


def test_study_figure_structure():
    display = StudyDisplay.from_result(_study(), dataset="pima")
    figure = display.figure_
    assert display.diff_ax_ is not None
    _check_layout(figure, display.legend_, [display.ax_, display.diff_ax_])
    title = figure.get_suptitle()
    assert title.startswith("pima")
    assert "5 x 5-fold cross-validation (25 splits)" in title
    assert "corrected" in title
    # The reference is drawn distinctly: bold, black, above the others.
    ref = display.lines_["CR"]
    others = [line for name, line in display.lines_.items() if name != "CR"]
    assert ref.get_color() == "black"
    assert all(ref.get_linewidth() > line.get_linewidth() for line in others)
    assert all(ref.get_zorder() > line.get_zorder() for line in others)
    assert "CR" not in display.errorbars_
    assert "difference" in display.diff_ax_.get_title().lower()
    plt.close(figure)


def _in_view(display):
    """Every plotted point lies inside its axes' x-limits."""
    for ax in (display.ax_, display.diff_ax_):
        lo, hi = ax.get_xlim()
        lines = [c.lines[0] for c in display.errorbars_.values()]
        for line in lines if ax is display.diff_ax_ else display.lines_.values():
            x = np.asarray(line.get_xdata())
            assert np.all((x > lo) & (x < hi)), (x, lo, hi)


@pytest.mark.parametrize(
    "models, fractions",
    [(MODELS, FRACTIONS), (MODELS[:3], FRACTIONS), (MODELS[:3], [0.25, 1.0])],
)
def test_every_difference_is_in_view(models, fractions):
    result = _study(fractions=fractions)
    display = StudyDisplay.from_result(result, models=models)
    _in_view(display)
    plt.close(display.figure_)


def test_one_fraction_titles_the_fraction():
    display = StudyDisplay.from_result(_study(fractions=[1.0]), dataset="pima")
    assert display.figure_.get_suptitle().startswith(
        "pima: accuracy at 100% of each training fold"
    )
    _in_view(display)
    plt.close(display.figure_)


def test_one_fraction_is_a_row_per_model_not_a_fraction_axis():
    display = StudyDisplay.from_result(_study(fractions=[1.0]), dataset="pima")
    figure = display.figure_
    title = figure.get_suptitle().replace("\n", " ")
    assert "nested" not in title and "614 training rows on average" in title
    labels = [t.get_text() for t in display.ax_.get_yticklabels()]
    assert labels == ["CR (reference)", *MODELS[1:]]
    assert display.ax_.get_xlabel() == "accuracy" and display.legend_ is None
    # LogisticRegression is 0.1 better on every split: marked, in view.
    assert len(display.marks_["LogisticRegression"]) == 1
    assert display.diff_ax_.get_xlabel() == "accuracy: model - CR"
    # The scores' axis spans the data, not the rounding of one point.
    low, high = display.ax_.get_xlim()
    assert high - low > 0.1
    figure.canvas.draw()
    tight = figure.get_tightbbox(figure.canvas.get_renderer())
    width, height = figure.get_size_inches()
    assert tight.x0 >= -0.01 and tight.x1 <= width + 0.01
    assert tight.y0 >= -0.01 and tight.y1 <= height + 0.01
    plt.close(figure)


def test_column_layout_for_narrow_pages():
    display = StudyDisplay.from_result(_study(), dataset="pima", layout="column")
    figure = display.figure_
    assert figure.get_figwidth() < 8
    top, bottom = display.ax_.get_position(), display.diff_ax_.get_position()
    assert bottom.y1 <= top.y0
    _check_layout(figure, display.legend_, [display.ax_, display.diff_ax_])
    assert figure.get_suptitle().startswith("pima")
    with pytest.raises(ValueError, match="layout"):
        StudyDisplay.from_result(_study(), layout="grid")
    plt.close(figure)


def test_from_result_draws_like_from_estimator():
    before = set(plt.get_fignums())
    display = StudyDisplay.from_result(_study(), dataset="pima")
    # One new figure, drawn: no .plot() call needed (nor a second figure).
    assert set(plt.get_fignums()) - before == {display.figure_.number}
    assert display.ax_.get_lines() and display.errorbars_
    # plot() draws it again elsewhere, as a Display's plot does.
    fig, ax = plt.subplots()
    assert display.plot(ax=ax, differences=False).ax_ is ax
    plt.close("all")


def test_study_intervals_agree_with_the_corrected_t_test():
    result = _study()
    display = StudyDisplay.from_result(result)
    cmp = result.compare("CR", test="corrected_t", correction=None)
    for row in cmp.itertuples():
        i = FRACTIONS.index(row.fraction)
        mean, low, high = display.differences[row.model][i]
        assert mean == pytest.approx(row.mean_diff)
        assert (low > 0 or high < 0) == (row.p_value < 0.05)
    # The better model is detected, at every fraction.
    mean, low, _ = display.differences["LogisticRegression"].T
    assert np.all(low > 0)
    t, p = corrected_ttest([0.01, 0.02, 0.03], 0.25)
    assert np.isfinite(t) and 0 < p < 1


def test_study_display_without_a_comparison_has_one_panel():
    result = _study()
    display = StudyDisplay.from_result(result, models=["SVC"])
    assert display.diff_ax_ is None and display.errorbars_ == {}
    _check_layout(display.figure_, display.legend_, [display.ax_])
    assert display.figure_.get_suptitle().startswith("Accuracy against")
    plt.close(display.figure_)


def test_study_display_on_a_pair_of_axes():
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    display = StudyDisplay.from_result(_study(), reference="SVC", ax=axes)
    assert display.ax_ is axes[0] and display.diff_ax_ is axes[1]
    assert "SVC" in display.diff_ax_.get_ylabel()
    assert display.lines_["SVC"].get_color() == "black"
    # The caller's figure keeps its own title.
    assert fig.get_suptitle() == ""
    with pytest.raises(ValueError, match="Unknown reference"):
        StudyDisplay.from_result(_study(), models=["CR"], reference="SVC")
    plt.close(fig)


@pytest.fixture(scope="module")
def fitted():
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    return CRClassifier(**{**FAST, "max_iter": 15, "early_stopping": True}).fit(X, y)


def test_loss_curve_figure_structure(fitted):
    display = LossCurveDisplay.from_estimator(fitted)
    legend = display.ax_.get_legend()
    assert display.score_ax_ is not None
    # The legend sits above the axes, over no curve; the right axis label
    # is inside the figure.
    _check_layout(display.figure_, legend, [display.ax_, display.score_ax_])
    labels = [t.get_text() for t in legend.get_texts()]
    assert any("dreg_lambda x penalty" in label for label in labels)
    assert any("right axis" in label for label in labels)
    plt.close(display.figure_)


@pytest.mark.parametrize("which", ["study", "loss"])
def test_plots_without_matplotlib_name_the_extra(monkeypatch, which, fitted):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"cr_sklearn\[study\]"):
        if which == "study":
            StudyDisplay.from_result(_study())
        else:
            LossCurveDisplay.from_estimator(fitted)
