"""The tau benchmark's restated claim (``benchmarks/bench_tau.py``, by path)."""

from conftest import load_benchmark

bench = load_benchmark("bench_tau")


def test_the_rows_below_the_lowest_other_family_are_told_apart():
    # Row names hold commas: the list of them is separated by semicolons.
    medians = {
        'CR poly, dreg="stream"': 1.6,
        'CR poly, dreg="stream", no encoding': 1.2,
        'CR poly, dreg="local"': 1.8,
        "MLPClassifier(64,64)": 1.7,
        "SVC (RBF)": 1.75,
    }
    lines = bench.restate_claim(medians)
    assert "CR networks 1.20-1.80; the other families 1.70-1.75." in lines[0]
    assert lines[1].endswith(
        'CR rows below it: CR poly, dreg="stream"; CR poly, dreg="stream", no encoding.'
    )


def test_every_cr_row_below_the_others_is_said_so():
    lines = bench.restate_claim({"CR poly, a": 1.2, "CR poly, b": 1.3, "SVC": 1.7})
    assert lines[1] == (
        "Every CR network's tau is below every other family's, as the papers "
        "say, but not at their values: none is within [1.01, 1.02]."
    )
