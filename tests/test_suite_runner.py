"""The benchmark suites' shared runner (``benchmarks/_suite_runner.py``).

``benchmarks`` is not a package: the module is imported by path. The tests
describe a toy task (small tables, scikit-learn models, a loss where lower
is better) and check what the runner does with it: the models, the cache,
the fits, the summary in either direction, the report and the command line.
"""

import dataclasses
import json
import types

import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

runner = load_benchmark("_suite_runner", "suite_runner")
Metric, ModelSpec = runner.Metric, runner.ModelSpec


def _table(name, n_rows, split="tune", reason=None):
    """What the runner reads of a registry entry, and why it is unavailable."""
    return types.SimpleNamespace(
        name=name,
        shape=(n_rows, 3, 2),
        n_rows=n_rows,
        n_columns=3,
        n_classes=2,
        split=split,
        reason=reason,
    )


TABLES = [
    _table("small", 60),
    _table("large", 1200, split="confirm"),
    _table("absent", 80, reason="needs a folder"),
]


def _get_tables(names=None, split="all"):
    return [
        t
        for t in TABLES
        if (names is None or t.name in names) and split in ("all", t.split)
    ]


def _load_table(table, data_dir=None):
    rng = np.random.RandomState(len(table.name))
    n = table.n_rows
    y = np.arange(n) % 2
    X = pd.DataFrame(
        {
            "signal": y + 0.5 * rng.randn(n),
            "noise": rng.randn(n),
            "colour": np.where(rng.rand(n) < 0.5, "red", "blue"),
        }
    )
    return X, y


REGISTRY = types.SimpleNamespace(
    get_tables=_get_tables,
    why_unavailable=lambda table, data_dir=None: table.reason,
    load_table=_load_table,
)


def _build_model(spec, seed):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression

    if spec.is_cr:
        return LogisticRegression(random_state=seed, **dict(spec.params))
    if spec.kind == "broken":
        return LogisticRegression(C=-1.0)  # refused at fit
    return DummyClassifier(strategy="most_frequent")


def _score(spec, model, Z_test, y_test):
    loss = float(np.mean(model.predict(Z_test) != y_test))
    return {"tau": 1.5 if spec.is_cr else np.nan, "loss": loss}


def _per_table_section(means, models, cr_models):
    return ["", "Toy losses:", ""] + runner.score_table(
        means, "loss", models, 3, best="min"
    )


def _differences_note(model, ratio):
    return [f"Toy differences of {model} at ratio {ratio:.2f}."]


def _list_markdown(tables):
    rows = [[t.name, t.n_rows] for t in tables]
    return runner.tables_markdown(TASK, tables, ["Toy note."], ["table", "rows"], rows)


TASK = runner.Task(
    name="toy",
    title="Toy suite",
    description="A toy suite.",
    registry=REGISTRY,
    estimator="ToyRegressor",
    models=("CR", "Dummy", "Broken"),
    kinds={"CR": "cr", "Broken": "broken"},
    build_model=_build_model,
    score=_score,
    metrics=(
        Metric("loss", "loss", higher_is_better=False, digits=3, difference_digits=3),
    ),
    summary_note=("Toy summary.",),
    per_table_section=_per_table_section,
    differences_note=_differences_note,
    list_markdown=_list_markdown,
    diagnostics=("tau",),
)
FRACTION_TASK = dataclasses.replace(TASK, fractions=True)


def _specs(*names, candidates=()):
    return runner.model_specs(TASK, names, list(candidates))


def test_model_specs_follow_the_task_order_and_kinds():
    specs = _specs("Broken", "CR", candidates=[("c1", {"C": 0.5, "tol": 1e-3})])
    assert [(s.name, s.kind) for s in specs] == [
        ("CR", "cr"),
        ("Broken", "broken"),
        ("c1", "cr"),
    ]
    assert specs[2].params == (("C", 0.5), ("tol", 1e-3))
    assert [s.is_cr for s in specs] == [True, False, True]
    with pytest.raises(SystemExit, match=r"Unknown models \['nope'\]"):
        _specs("nope")
    for taken in ("Dummy", "c1"):
        with pytest.raises(SystemExit, match="already taken"):
            _specs("CR", candidates=[("c1", {}), (taken, {})])


def test_models_of_a_missing_package_are_skipped_with_a_message(capsys):
    specs = _specs("CR", "Dummy", "Broken")
    missing = dataclasses.replace(TASK, optional={"broken": "no_such_package_cr"})
    kept = runner.skip_unavailable_models(missing, specs)
    assert [s.name for s in kept] == ["CR", "Dummy"]
    out = capsys.readouterr().out
    assert out == (
        "skip Broken: no_such_package_cr is not installed "
        "(pip install no_such_package_cr)\n"
    )
    installed = dataclasses.replace(TASK, optional={"broken": "numpy"})
    assert runner.skip_unavailable_models(installed, specs) == specs
    assert capsys.readouterr().out == ""


def test_a_fit_gives_the_task_columns_on_a_stratified_fraction():
    X, y = _load_table(TABLES[0])
    train, test = runner.make_splits(y, 1)[0]
    (spec,) = _specs("CR")
    scores = runner.fit_and_score(TASK, spec, X, y, train, test, 0.5, 0)
    assert list(scores) == ["loss", "fit_time", "tau", "n_train", "n_test"]
    assert (scores["n_train"], scores["n_test"]) == (15, 30)
    assert 0 <= scores["loss"] < 0.5 and scores["tau"] == 1.5
    assert scores["fit_time"] >= 0


def test_the_cache_key_follows_what_the_task_puts_in_it():
    table = TABLES[0]
    lr, c1 = _specs("CR", candidates=[("c1", {"C": 0.5})])
    key = runner.cache_key(TASK, table, lr, 0)
    assert len(key) == 12 and int(key, 16) >= 0
    assert key == runner.cache_key(TASK, table, lr, 0)
    assert key != runner.cache_key(TASK, table, lr, 1)
    assert key != runner.cache_key(TASK, table, c1, 0)
    # The fraction is in the key of the tasks with fractions only.
    assert key == runner.cache_key(TASK, table, lr, 0, 0.5)
    with_fraction = runner.cache_key(FRACTION_TASK, table, lr, 0, 1.0)
    assert with_fraction != key
    assert with_fraction != runner.cache_key(FRACTION_TASK, table, lr, 0, 0.5)
    scored = dataclasses.replace(TASK, scoring="v2")
    assert runner.cache_key(scored, table, lr, 0) != key
    levels = dataclasses.replace(TASK, table_key=lambda t: [t.name, ["a", "b"]])
    assert runner.cache_key(levels, table, lr, 0) != key
    assert runner.cache_key(TASK, _table("small", 61), lr, 0) != key


def test_baselines_are_cached_and_cr_models_never(tmp_path):
    table = TABLES[0]
    cr, dummy = _specs("CR", "Dummy")
    scores = {"loss": 0.25, "fit_time": 0.1}
    read, write = runner.read_cache, runner._write_cache
    assert read(TASK, tmp_path, table, dummy, 3, 1.0) is None
    write(TASK, tmp_path, table, dummy, 3, 1.0, scores)
    write(TASK, tmp_path, table, cr, 3, 1.0, scores)
    (path,) = (tmp_path / "small").iterdir()
    key = runner.cache_key(TASK, table, dummy, 3)
    assert path.name == f"Dummy-3-{key}.json"
    assert json.loads(path.read_text()) == scores
    assert read(TASK, tmp_path, table, dummy, 3, 1.0) == scores
    assert read(TASK, tmp_path, table, dummy, 3, 0.5) == scores  # not in the key
    assert read(FRACTION_TASK, tmp_path, table, dummy, 3, 1.0) is None
    assert read(TASK, tmp_path, table, cr, 3, 1.0) is None
    assert read(TASK, None, table, dummy, 3, 1.0) is None


def test_tables_are_selected_with_the_reasons_of_those_skipped():
    tables, skipped = runner.select_tables(TASK, None, "all", None)
    assert [t.name for t in tables] == ["small", "large"]
    assert skipped == {"absent": "needs a folder"}
    tables, skipped = runner.select_tables(TASK, None, "all", None, fraction=0.5)
    assert [t.name for t in tables] == ["large"]
    assert skipped["small"] == "under 1,000 rows (--fraction runs)"
    assert skipped["absent"] == "needs a folder"
    tables, _ = runner.select_tables(TASK, None, "confirm", None)
    assert [t.name for t in tables] == ["large"]


def test_a_run_orders_its_rows_records_errors_and_reuses_the_cache(tmp_path, capsys):
    tables = TABLES[:2]
    specs = _specs("CR", "Dummy", "Broken")
    kwargs = dict(cache_dir=tmp_path, progress=False)
    results = runner.run(TASK, tables, specs, 1, **kwargs)
    keys = list(zip(results["table"], results["model"], results["split"], strict=True))
    assert keys == [(t.name, s.name, i) for t in tables for s in specs for i in (0, 1)]
    broken = results[results["model"] == "Broken"]
    assert broken["error"].str.startswith("InvalidParameterError").all()
    assert broken[["loss", "fit_time", "tau"]].isna().all().all()
    assert results.loc[results["model"] != "Broken", "error"].isna().all()
    assert "error {'table': 'small', 'model': 'Broken'" in capsys.readouterr().err
    assert not results["cached"].any()
    # Only the baseline that fitted is cached, once per table and split.
    assert (
        sorted(p.name.split("-")[0] for p in tmp_path.rglob("*.json")) == ["Dummy"] * 4
    )
    again = runner.run(TASK, tables, specs, 1, **kwargs)
    assert list(again["cached"]) == [s == "Dummy" for _, s, _ in keys]
    columns = ["table", "model", "split", "loss", "n_train", "n_test"]
    fitted = results["model"] != "Broken"
    pd.testing.assert_frame_equal(
        again.loc[fitted, columns], results.loc[fitted, columns]
    )


def _hand_made_results():
    rows = []
    for table, offset in (("a", 0.0), ("b", 0.1)):
        for split in range(3):
            for model, loss in (("CR", 0.2), ("LR", 0.3), ("Dummy", 0.5)):
                rows.append(
                    dict(table=table, model=model, split=split, tau=1.0)
                    | dict(loss=loss + offset + 0.01 * split * (model == "CR"))
                    | dict(fit_time=1.0 + split, n_train=40, n_test=40, cached=False)
                )
    return pd.DataFrame(rows)


def test_the_summary_follows_the_direction_of_the_first_metric():
    results = _hand_made_results()
    models = ["CR", "LR", "Dummy"]
    means = runner.per_table(TASK, results)
    assert list(means.columns) == ["loss", "fit_time", "tau", "n_splits"]
    assert means.loc[("a", "CR"), "loss"] == pytest.approx(0.21)
    assert means.loc[("a", "CR"), "fit_time"] == 2.0  # the median
    summary = runner.overall(TASK, means, models)
    assert list(summary["rank"]) == [1.0, 2.0, 3.0]
    assert list(summary["gap"].round(6)) == [0.0, 0.09, 0.29]
    assert runner._wins(TASK, means, "CR", "Dummy") == (2, 0, 0)
    higher = dataclasses.replace(TASK, metrics=(Metric("loss", "loss", scale=100),))
    summary = runner.overall(higher, runner.per_table(higher, results), models)
    assert list(summary["rank"]) == [3.0, 2.0, 1.0]
    assert list(summary["gap"].round(6)) == [-29.0, -20.0, 0.0]
    assert summary.loc["CR", "loss"] == pytest.approx(100 * 0.26)
    assert runner._wins(higher, means, "CR", "Dummy") == (0, 0, 2)


def test_paired_differences_are_scaled_with_their_interval():
    results = _hand_made_results()
    diffs = runner.paired_differences(TASK, results, "CR", "LR", 1.0)
    mean, low, high = diffs["a"]
    assert mean == pytest.approx(-0.09) and low < mean < high < 0
    scaled = dataclasses.replace(TASK, metrics=(Metric("loss", "loss", scale=100),))
    mean100, low100, high100 = runner.paired_differences(
        scaled, results, "CR", "LR", 1.0
    )["a"]
    assert (mean100, low100, high100) == pytest.approx(
        (100 * mean, 100 * low, 100 * high)
    )
    one_split = results[results["split"] == 0]
    mean, low, high = runner.paired_differences(TASK, one_split, "CR", "LR", 1.0)["b"]
    assert mean == pytest.approx(-0.1) and np.isnan(low) and np.isnan(high)


def test_interval_cells_are_bold_only_where_the_interval_excludes_zero():
    cell = runner._interval_cell
    assert cell((0.5, 0.1, 0.9), 1) == "**+0.5 [+0.1, +0.9]**"
    assert cell((-0.5, -0.9, -0.1), 1) == "**-0.5 [-0.9, -0.1]**"
    assert cell((0.5, -0.1, 0.9), 1) == "+0.5 [-0.1, +0.9]"
    assert cell((0.5, 0.5, 0.5), 3) == "+0.500 [+0.500, +0.500]"
    assert cell((0.25, np.nan, np.nan), 2) == "+0.25"


def test_score_tables_bold_the_best_and_count_the_splits():
    means = runner.per_table(TASK, _hand_made_results())
    lines = runner.score_table(means, "loss", ["CR", "Dummy"], 2, best="min")
    assert lines == [
        "| table | splits | CR | Dummy |",
        "| --- | --- | --- | --- |",
        "| a | 3 | **0.21** | 0.50 |",
        "| b | 3 | **0.31** | 0.60 |",
    ]
    lines = runner.score_table(
        means, "loss", ["CR", "Dummy"], 0, 100, best="max", splits=False
    )
    assert lines[2:] == ["| a | 21 | **50** |", "| b | 31 | **60** |"]


def test_the_report_has_the_task_wording_and_the_shared_sections():
    results = _hand_made_results()
    results.loc[0, "cached"] = True
    specs = [ModelSpec(name, "baseline") for name in ("LR", "Dummy")]
    specs.insert(0, ModelSpec("CR", "cr"))
    text = runner.report(TASK, results, specs, {"c": "why"}, ["# head"])
    assert text.startswith("# head\n\nFits: 18, of which 1 from the cache.\n")
    assert "Skipped tables:\n\n- c: why\n" in text
    assert "Failed fits" not in text
    assert "## Summary\n\nToy summary.\n\n| model | mean loss | mean rank |" in text
    assert "| CR | 0.260 | 1.00 | 0.000 | 2.00 | 2 |" in text
    assert "## Wins of CR (mean loss per table)" in text
    assert "| Dummy | 2 | 0 | 0 | 2/2 |" in text
    assert "## Per table\n\nToy losses:\n\n| table | splits | CR | LR | Dummy |" in text
    assert "## CR minus each model, per table\n\nToy differences of CR" in text
    assert "at ratio 1.00.\n\n| table | LR | Dummy |\n" in text
    assert "| a | **-0.090 [" in text
    empty = runner.report(TASK, results.iloc[:0], specs, {}, ["# head"])
    assert empty == "# head\n\nNo results.\n"


def test_failed_fits_are_listed_and_left_out_of_the_scores():
    results = _hand_made_results()
    results["error"] = None
    results.loc[2, ["loss", "fit_time", "error"]] = [np.nan, np.nan, "ValueError: x"]
    specs = [ModelSpec("CR", "cr"), ModelSpec("Dummy", "baseline")]
    text = runner.report(TASK, results, specs, {}, ["# head"])
    assert "Failed fits (1; their scores are left out):\n\n" in text
    assert "- a, Dummy, split 0: ValueError: x\n" in text
    means = runner.per_table(TASK, results)
    assert means.loc[("a", "Dummy"), ["loss", "fit_time"]].tolist() == [0.5, 2.5]


def test_a_model_failed_on_every_split_leaves_the_report_whole():
    results = _hand_made_results()
    results["error"] = None
    failed = results["model"] == "Dummy"
    results.loc[failed, ["loss", "fit_time"]] = np.nan
    results.loc[failed, "error"] = "ValueError: x"
    specs = [ModelSpec("CR", "cr"), ModelSpec("Dummy", "baseline")]
    text = runner.report(TASK, results, specs, {}, ["# head"])
    assert "- a, Dummy, split 0: ValueError: x\n" in text
    assert runner.paired_differences(TASK, results, "CR", "Dummy", 1.0) == {}
    means = runner.per_table(TASK, results)
    assert means.loc[("a", "Dummy"), "n_splits"] == 0
    assert means.loc[("a", "CR"), "n_splits"] == 3


def test_fraction_is_an_option_of_the_tasks_with_fractions_only(capsys):
    args = runner.parse_args(TASK, [])
    assert (args.fraction, args.split, args.repeats) == (1.0, "tune", 5)
    assert runner.parse_args(TASK, ["--list"]).split == "all"
    assert args.models == ["CR", "Dummy", "Broken"]
    assert args.cache_dir == runner.CACHE / "toy"
    with pytest.raises(SystemExit):
        runner.parse_args(TASK, ["--fraction", "0.5"])
    assert runner.parse_args(FRACTION_TASK, ["--fraction", "0.5"]).fraction == 0.5
    with pytest.raises(SystemExit):
        runner.parse_args(FRACTION_TASK, ["--fraction", "0"])
    with pytest.raises(SystemExit):
        runner.parse_args(TASK, ["--repeats", "0"])
    assert "must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        runner.parse_args(TASK, ["--help"])
    help_text = capsys.readouterr().out
    assert "A toy suite." in help_text and "a ToyRegressor variant" in help_text
    assert "--fraction" not in help_text
    args = runner.parse_args(TASK, ["--models", "CR, Dummy,", "--tables", "small"])
    assert (args.models, args.tables) == (["CR", "Dummy"], ["small"])


def test_the_output_names_and_the_header_follow_the_task():
    out = runner.default_output
    assert out(TASK, "tune", 5) == runner.RESULTS / "toy_tune.md"
    assert out(TASK, "all", 1) == runner.RESULTS / "toy_all_repeats1.md"
    path = out(FRACTION_TASK, "confirm", 2, 0.1)
    assert path.name == "toy_confirm_fraction0.1_repeats2.md"
    specs = _specs("CR", "Dummy", candidates=[("c1", {"C": 0.5})])
    lines = runner.run_header(TASK, ["--x", "a b"], specs, 1)
    assert lines[:3] == [
        "# Toy suite",
        "",
        "Command: `python benchmarks/toy.py --x 'a b'`",
    ]
    assert lines[6].startswith(
        "Splits: RepeatedStratifiedKFold(n_splits=2, n_repeats=1"
    )
    assert "training fraction" not in lines[6]
    assert lines[8].startswith("CR: ToyRegressor with the defaults; all: {")
    assert lines[10].startswith("c1: ToyRegressor with {'C': 0.5}; all: {")
    assert "'random_state': \"the split's index\"" in lines[10]
    assert len(lines) == 11
    lines = runner.run_header(FRACTION_TASK, [], specs[1:2], 1, 0.5)
    assert "; training fraction 0.5 (tables with >= 1,000 rows)." in lines[6]


def test_the_listing_counts_the_halves(tmp_path, monkeypatch, capsys):
    assert runner.list_lines(TABLES[:2]) == [
        "small 60 3 2 tune",
        "large 1200 3 2 confirm",
    ]
    text = _list_markdown(TABLES)
    assert text.startswith("# Toy suite tables\n\nToy note.\n\n")
    assert "2 tuning and 1 confirmation tables." in text
    assert text.endswith("| absent | 80 |\n")
    monkeypatch.setattr(runner, "RESULTS", tmp_path)
    runner.main(TASK, ["--list", "--markdown"])
    assert (tmp_path / "toy_tables.md").read_text() == text
    assert capsys.readouterr().out == text
    runner.main(TASK, ["--list", "--split", "tune"])
    captured = capsys.readouterr()
    assert captured.out == "small 60 3 2 tune\nabsent 80 3 2 tune\n"
    assert captured.err == "unavailable absent: needs a folder\n"


def test_main_runs_the_task_end_to_end(tmp_path, capsys):
    output = tmp_path / "toy.md"
    argv = ["--split", "all", "--models", "CR,Dummy", "--repeats", "1"]
    argv += ["--n-jobs", "1", "--no-cache", "--no-progress", "--output", str(output)]
    runner.main(TASK, argv)
    out = capsys.readouterr().out
    assert "skip absent: needs a folder" in out
    assert out.endswith(f"written to {output}\n")
    text = output.read_text()
    assert text.startswith("# Toy suite\n\nCommand: `python benchmarks/toy.py --split")
    assert "Fits: 8, of which 0 from the cache." in text
    assert "Skipped tables:\n\n- absent: needs a folder" in text
    assert "| small | 2 | " in text and "| large | 2 | " in text


def test_a_candidate_with_encode_bins_is_an_encoder_pipeline():
    from cr_sklearn import CRClassifier, PiecewiseLinearEncoder

    plain = runner.build_cr(CRClassifier, {"max_iter": 3}, seed=7)
    assert isinstance(plain, CRClassifier)
    assert (plain.random_state, plain.n_threads, plain.max_iter) == (7, 1, 3)
    encoded = runner.build_cr(
        CRClassifier, {runner.ENCODE_BINS: 3, "max_iter": 3}, seed=7
    )
    assert isinstance(encoded[0], PiecewiseLinearEncoder) and encoded[0].n_bins == 3
    assert encoded[-1].get_params() == plain.get_params()
    rng = np.random.default_rng(0)
    Z, y = rng.normal(size=(60, 2)), np.arange(60) % 2
    network, inputs = runner.cr_network(encoded.fit(Z, y))
    assert network is encoded[-1]
    assert inputs(Z).shape == (60, 6)  # 3 ramps per column
    network, inputs = runner.cr_network(plain.fit(Z, y))
    assert network is plain and inputs(Z) is Z
