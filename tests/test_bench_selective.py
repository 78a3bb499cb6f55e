"""The selective benchmark's command line (``benchmarks/bench_selective.py``)."""

from conftest import load_benchmark

bench = load_benchmark("bench_selective")


def test_members_add_their_disagreement_signal():
    assert "member_disagreement" not in bench.cr_signals(1)
    assert bench.cr_signals(4)[-1] == "member_disagreement"


def test_a_quick_member_run_reports_the_disagreement(tmp_path):
    out = tmp_path / "selective.md"
    bench.main(
        [
            "--tables",
            "iris",
            "--ordinal",
            "",
            "--quick",
            "--n-members",
            "2",
            "--baselines",
            "",
            "--n-passes",
            "2",
            "--output",
            str(out),
        ]
    )
    text = out.read_text()
    assert "CR with n_members=2" in text
    header = next(line for line in text.splitlines() if line.startswith("| table"))
    assert "member_disagreement" in header
    row = next(line for line in text.splitlines() if line.startswith("| iris"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    column = [c.strip() for c in header.strip("|").split("|")].index(
        "member_disagreement"
    )
    assert float(cells[column]) > 0
