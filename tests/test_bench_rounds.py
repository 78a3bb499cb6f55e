"""Issue 46's rounds read back from their reports (``benchmarks/bench_rounds.py``)."""

import pytest
from conftest import load_benchmark

rounds = load_benchmark("bench_rounds")


def test_every_round_is_read_on_both_halves():
    rows = rounds.collect()
    found = {(r["half"], r["name"]) for r in rows}
    names = [n for names in rounds.ROUND_CANDIDATES.values() for n in names]
    assert found == {(h, n) for h in ("tune", "confirm") for n in names}
    x = next(r for r in rows if r["half"] == "tune" and r["name"] == "X")
    # round_46_tune_3.md's rule section, as the report prints it.
    assert x["accuracy"] == (-0.22, -0.72, 0.28)
    assert x["log_loss"] == (0.004, -0.003, 0.011)
    assert x["below"] == (27, 36, 8) and x["ratio"] == (0.91, 1.23)


def test_a_report_without_the_rule_or_a_row_is_refused():
    with pytest.raises(ValueError, match="no adoption-rule section"):
        rounds.read_rule_section("# Benchmark suite\n")
    with pytest.raises(ValueError, match="'Z' has no ratio row"):
        text = (rounds.RESULTS / "round_46_tune_3.md").read_text()
        cut = text.split("## Adoption rule (issue 46)")[1].split("### X3")[0]
        cut = cut.replace("### X\n", "### Z\n").split("| (c) median tau")[0]
        rounds.read_rule_section("## Adoption rule (issue 46)" + cut)


def test_the_figure_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "frontier.png"
    rounds.plot_frontier(rounds.collect(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 20_000
