"""The recipe exploration script's encodings and command line
(``benchmarks/explore_recipes.py``, imported by path)."""

import json

import numpy as np
import pytest
from conftest import load_benchmark

explore = load_benchmark("explore_recipes")


def test_piecewise_linear_encoding_ramps_through_quantile_bins():
    x = np.arange(9.0).reshape(-1, 1)  # quantile edges 0, 2, 4, 6, 8
    binary = np.array([0.0, 1.0] * 4 + [0.0]).reshape(-1, 1)
    encoding = explore.PiecewiseLinearEncoding(n_bins=4).fit(np.hstack([x, binary]))
    np.testing.assert_allclose(encoding.edges_[0], [0, 2, 4, 6, 8])
    assert encoding.edges_[1] is None  # binary columns pass through
    out = encoding.transform(np.array([[-1.0, 1.0], [3.0, 0.0], [9.0, 1.0]]))
    np.testing.assert_allclose(
        out,
        [
            [0, 0, 0, 0, 1],  # below every bin
            [1, 0.5, 0, 0, 0],  # half-way through the second
            [1, 1, 1, 1, 1],  # above every bin
        ],
    )
    kept = explore.PiecewiseLinearEncoding(n_bins=4, keep_raw=True).fit(x)
    np.testing.assert_allclose(kept.transform([[3.0]]), [[3.0, 1, 0.5, 0, 0]])


def test_spline_encoding_spans_the_same_piecewise_linear_functions():
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(200, 2)), rng.integers(0, 2, (200, 1))])
    ramps = explore.PiecewiseLinearEncoding(n_bins=4).fit(X).transform(X)
    splines = explore._SplineEncoding(n_bins=4).fit(X).transform(X)
    # Each basis (with a constant) is a linear map of the other: least squares
    # reproduces the ramps from the splines exactly.
    design = np.hstack([splines, np.ones((len(X), 1))])
    coef, *_ = np.linalg.lstsq(design, ramps, rcond=None)
    np.testing.assert_allclose(design @ coef, ramps, atol=1e-8)


def test_only_names_recipes_of_the_round():
    with pytest.raises(SystemExit):
        explore.main(["--round", "encode", "--only", "no-such-recipe"])


def test_report_from_saved_scores_needs_no_fit(tmp_path):
    score = {"acc": 0.8, "ll": 0.4, "time": 0.1, "tau": 1.2, "epochs": 100}
    rows = {"default": {"iris": [score, score]}, "ple4": {"iris": [score, score]}}
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps(rows))
    output = tmp_path / "report.md"
    explore.main(
        ["--round", "encode", "--from-scores", str(scores), "--output", str(output)]
    )
    text = output.read_text()
    assert "| iris | 80.00 / 0.400 | 80.00 / 0.400 |" in text
