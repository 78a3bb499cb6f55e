"""The ordinal benchmark's report header (``benchmarks/bench_ordinal.py``)."""

from conftest import load_benchmark

from cr_sklearn import CROrdinalRegressor

bench = load_benchmark("bench_ordinal")


def test_header_names_the_command_and_the_defaults_measured():
    lines = bench.provenance(["--skip", "yelp"])
    assert lines[0] == "Command: `python benchmarks/bench_ordinal.py --skip yelp`"
    text = " ".join(lines)
    defaults = CROrdinalRegressor().get_params()
    assert f"`early_stopping={defaults['early_stopping']!r}`" in text
    assert f"`max_iter={defaults['max_iter']!r}`" in text
    assert "commit " in text and "CRClassifier `dreg_lambda=" in text
