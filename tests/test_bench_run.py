"""The benchmark runner (``benchmarks/run.py``): one command, named configurations."""

import pytest
from conftest import load_benchmark

run = load_benchmark("run")

CONFIGS = (
    "suite",
    "ordinal",
    "pima",
    "fraction",
    "factorial",
    "tau",
    "reliability",
    "selective",
    "text",
    "text-cache",
    "growth",
    "speed",
    "threads",
    "load",
    "members",
    "gpu",
    "rounds46",
)


def test_every_configuration_is_found_once():
    assert tuple(run.configs()) == CONFIGS


@pytest.mark.parametrize("name", CONFIGS)
def test_every_configuration_parses_its_options(name, capsys):
    with pytest.raises(SystemExit) as done:
        run.main([name, "--help"])
    assert done.value.code == 0
    assert "--output" in capsys.readouterr().out


def test_a_configuration_is_required(capsys):
    with pytest.raises(SystemExit) as done:
        run.main([])
    assert done.value.code == 2
    assert "config" in capsys.readouterr().err


def test_the_default_outputs_are_the_result_files():
    import argparse

    found = run.configs()
    args = argparse.Namespace(list=False, split=None, repeats=5, fraction=1.0)
    assert found["suite"].output(args) == "suite_tune.md"
    assert found["ordinal"].output(args) == "ordinal_suite_tune.md"
    for name, file in (
        ("pima", "pima.md"),
        ("fraction", "data_fraction.md"),
        ("speed", "speed.md"),
        ("gpu", "gpu_check.md"),
        ("rounds46", "round_46_rounds.md"),
    ):
        assert found[name].output(args) == file
