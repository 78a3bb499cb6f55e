"""The ensembles rounds script's command lines (``benchmarks/ensemble_rounds.py``)."""

import json

import pytest
from conftest import load_benchmark

rounds = load_benchmark("ensemble_rounds")


def _candidates(argv):
    found = {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--candidate":
            name, params = value.split("=", 1)
            found[name] = json.loads(params)
    return found


def test_round_runs_its_candidates_on_the_tuning_half():
    argv = rounds.round_argv("members", n_jobs=2)
    assert argv[argv.index("--split") + 1] == "tune"
    assert argv[argv.index("--n-jobs") + 1] == "2"
    assert _candidates(argv) == rounds.ROUNDS["members"]
    assert argv[argv.index("--output") + 1] == (
        "benchmarks/results/ensembles_members_tune.md"
    )


def test_confirmation_runs_only_the_named_finalists():
    argv = rounds.round_argv("members", only=["m4"], split="confirm")
    assert _candidates(argv) == {"m4": rounds.ROUNDS["members"]["m4"]}
    assert argv[argv.index("--output") + 1].endswith("ensembles_members_confirm_m4.md")
    assert argv[argv.index("--tables") + 1].split(",") == list(rounds.SMALL_CONFIRM)
    with pytest.raises(ValueError, match="not in round"):
        rounds.round_argv("members", only=["nope"])


def test_the_rounds_run_the_small_tables_of_each_half():
    suite = load_benchmark("suite")
    for split, small in (
        ("tune", rounds.SMALL_TUNE),
        ("confirm", rounds.SMALL_CONFIRM),
    ):
        listed = suite.TASK.registry.get_tables(None, split)
        below = {t.name for t in listed if t.n_rows < 2000}
        assert set(small) == below


def test_ordinal_rounds_run_the_ordinal_suite_on_its_small_tables(monkeypatch):
    ordinal = load_benchmark("ordinal_suite")
    for split, small in (
        ("tune", rounds.SMALL_ORDINAL_TUNE),
        ("confirm", rounds.SMALL_ORDINAL_CONFIRM),
    ):
        listed = ordinal.TASK.registry.get_tables(None, split)
        assert set(small) == {t.name for t in listed if t.n_rows < 2000}
        argv = rounds.round_argv("ordinal_members", split=split)
        assert argv[argv.index("--tables") + 1].split(",") == list(small)
    assert (
        _candidates(rounds.round_argv("ordinal_members"))
        == (rounds.ORDINAL_ROUNDS["ordinal_members"])
    )
    # The ordinal rounds go to the ordinal suite's runner, the others to suite's.
    called = []
    monkeypatch.setattr(rounds.ordinal_suite, "main", lambda a: called.append("o"))
    monkeypatch.setattr(rounds.suite, "main", lambda a: called.append("s"))
    rounds.main(["--round", "ordinal_members"])
    rounds.main(["--round", "members"])
    assert called == ["o", "s"]
