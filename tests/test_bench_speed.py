"""The speed configurations (``benchmarks/bench_speed.py``): the table, not speeds.

No test here asserts a speed; the benchmarks run outside the test suite.
"""

import argparse

import pytest
from conftest import load_benchmark

speed = load_benchmark("bench_speed")


def test_a_row_is_met_against_its_limit_or_its_check():
    assert speed.row("m", "c", "a", 0.9, "<= 1", 1.0) == [
        "m",
        "c",
        "a",
        "0.90x",
        "<= 1",
        "yes",
    ]
    assert speed.row("m", "c", "a", 1.2, "<= 1", 1.0)[-1] == "no"
    assert speed.row("m", "c", "a", 1.2)[3:] == ["1.20x", "", ""]
    assert speed.row("m", "c", "a", "400 / 400", "equal", ok=True)[-1] == "yes"
    assert speed.row("m", "c", "a", "0.3 s")[3] == "0.3 s"


def test_rows_are_stamped_and_targets_come_first():
    rec = speed.Rows()
    with rec.case("1") as rows:
        rows.append(speed.row("m", "detail", "a", 2.0))
        rows.append(speed.row("m", "target", "a", 0.5, "<= 1", 1.0))
    lines = rec.table()
    assert lines[0].startswith("| measure | case | against | value | target | met |")
    assert "| target |" in lines[2] and "| detail |" in lines[3]
    assert lines[2].split("|")[7].strip() == "1" and " / " in lines[2].split("|")[8]


def test_the_cli_probe_sees_that_help_does_not_import_torch():
    import subprocess
    import sys

    probe = speed._TORCH_PROBE.format(argv=["--help"])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "TORCH_IMPORTED=False" in done.stdout


@pytest.mark.parametrize("d", [8, 384])
def test_every_train_variant_runs_a_tiny_epoch(d):
    variants = speed._train_variants(d)
    assert {"relu", "poly", "local", "stream (default)", "IGPen"} <= set(variants)
    assert ("stream k=1, every row" in variants) == (d == 384)
    for spec in variants.values():
        times = speed.epoch_time(d, 8, 16, *spec, repeats=2, rows=32)
        assert len(times) == 2 and min(times) > 0


def test_the_speed_report_names_its_sections(tmp_path, monkeypatch):
    run = load_benchmark("run")

    def section_fake(rec, args):
        with rec.case(1) as rows:
            rows.append(speed.row("fake", "case", "ref", 0.5, "<= 1", 1.0))

    monkeypatch.setattr(speed, "section_fit", section_fake)
    output = tmp_path / "speed.md"
    run.main(["speed", "--sections", "fit", "--output", str(output)])
    text = output.read_text()
    assert "Command: `python benchmarks/run.py speed --sections fit" in text
    assert "seconds per section: fit 0" in text
    assert "| fake | case | ref | 0.50x | <= 1 | yes | 1 |" in text


def test_the_gpu_check_says_when_cuda_is_absent(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: the check itself runs")
    assert speed.run_gpu(argparse.Namespace(argv=["gpu"])) == (None, 0)
    assert "CUDA is not available" in capsys.readouterr().out


def test_the_study_section_times_the_readme_command(monkeypatch):
    # A stand-in for the command: it checks the arguments the README gives.
    import sys

    check = "import sys; assert sys.argv[1:3] == ['study', '--out'], sys.argv"
    monkeypatch.setattr(speed, "_console_script", lambda: [sys.executable, "-c", check])
    rec = speed.Rows()
    speed.section_study(rec, argparse.Namespace())
    (row,) = rec.rows
    assert row[0] == "cr-sklearn study" and row[3].endswith(" s")
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    monkeypatch.setattr(speed, "_console_script", lambda: failing)
    with pytest.raises(Exception, match="exit status 3"):
        speed.section_study(speed.Rows(), argparse.Namespace())
