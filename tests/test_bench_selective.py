"""The selective configuration (``benchmarks/bench_selective.py``)."""

from conftest import load_benchmark

run = load_benchmark("run")
selective = load_benchmark("bench_selective")


def test_members_add_their_disagreement_signal():
    assert "member_disagreement" not in selective.cr_signals(1)
    assert selective.cr_signals(4)[-1] == "member_disagreement"


def _cells(text, start):
    line = next(line for line in text.splitlines() if line.startswith(start))
    return [c.strip() for c in line.strip("|").split("|")]


def test_a_quick_member_run_reports_every_section(tmp_path):
    out = tmp_path / "selective.md"
    argv = ["selective", "--tables", "iris", "--ordinal", "", "--quick"]
    argv += ["--n-members", "2", "--baselines", "LogisticRegression", "--n-passes", "2"]
    run.main([*argv, "--output", str(out)])
    text = out.read_text()
    assert "Command: `python benchmarks/run.py selective --tables iris" in text
    assert "CR with n_members=2" in text
    header = _cells(text, "| table | test rows")
    value = _cells(text, "| iris | 75 |")[header.index("member_disagreement")]
    assert float(value) > 0
    for section in ("## E-AURC", "## Flip rates", "## The guaranteed-risk threshold"):
        assert section in text
    assert _cells(text, "| table | CR | CR selective |")[-1] == "LogisticRegression"
    assert "Above the target on" in text
