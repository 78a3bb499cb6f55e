"""The benchmark harness (``benchmarks/harness.py``) on a toy suite.

``benchmarks`` is not a package: its modules are imported by path. A toy task
(small tables, scikit-learn models, a loss where lower is better) is run
through the harness: models, the cache, the fits, tau on shared test rows and
its cache, the summaries by size band, the paired differences, the adoption
rules of issues 39 and 46, the report and the listing.
"""

import argparse
import dataclasses
import json
import re
import types

import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

harness = load_benchmark("harness")
Metric, ModelSpec = harness.Metric, harness.ModelSpec


def _table(name, n_rows, split="tune", reason=None):
    return types.SimpleNamespace(
        name=name, shape=(n_rows, 3, 2), n_rows=n_rows, n_columns=3, n_classes=2,
        split=split, reason=reason, group="first", target="t", origin="o",
        licence="l",
    )  # fmt: skip


TABLES = [
    _table("small", 60),
    _table("large", 2400, split="confirm"),
    _table("absent", 80, reason="needs a folder"),
]


def _get_tables(names=None, split="all"):
    chosen = [t for t in TABLES if names is None or t.name in names]
    return [t for t in chosen if split in ("all", t.split)]


def _load_table(table, data_dir=None):
    rng = np.random.RandomState(len(table.name))
    y = np.arange(table.n_rows) % 2
    X = pd.DataFrame({
        "signal": y + 0.5 * rng.randn(table.n_rows),
        "noise": rng.randn(table.n_rows),
        "colour": np.where(rng.rand(table.n_rows) < 0.5, "red", "blue"),
    })  # fmt: skip
    return X, y


REGISTRY = types.SimpleNamespace(
    __name__="toy_tables",
    get_tables=_get_tables,
    why_unavailable=lambda table, data_dir=None: table.reason,
    load_table=_load_table,
)


def _build_model(spec, seed):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    if spec.is_cr:
        return LogisticRegression(random_state=seed, **dict(spec.params))
    if spec.kind == "broken":
        return LogisticRegression(C=-1.0)  # refused at fit
    if spec.kind == "curved":  # gradient norms that differ from row to row
        return SVC()
    return DummyClassifier(strategy="most_frequent")


def _score(spec, model, Z_test, y_test):
    return {"loss": float(np.mean(model.predict(Z_test) != y_test))}


TASK = harness.Task(
    name="toy",
    config="toy",
    title="Toy suite",
    registry=REGISTRY,
    estimator="ToyRegressor",
    models=("CR", "Dummy", "Broken", "Curved", "Twin"),
    kinds={"CR": "cr", "Broken": "broken", "Curved": "curved", "Twin": "curved"},
    build_model=_build_model,
    score=_score,
    metrics=(Metric("loss", "loss", higher_is_better=False, digits=3),),
    margin=0.01,
    diagnostics=("tau",),
    tau_baselines=("Curved", "Twin"),
)
FRACTION_TASK = dataclasses.replace(TASK, fractions=True)


def _specs(*names, candidates=()):
    return harness.model_specs(TASK, names, list(candidates))


def test_size_bands_have_inclusive_middle_bounds():
    bands = [harness.size_band(n) for n in (1999, 2000, 20_000, 20_001)]
    assert bands == ["under 2,000", "2,000-20,000", "2,000-20,000", "above 20,000"]
    assert tuple(dict.fromkeys(bands)) == harness.BANDS


def test_model_specs_follow_the_task_order_and_kinds():
    specs = _specs("Broken", "CR", candidates=[("c1", {"C": 0.5, "tol": 1e-3})])
    assert [(s.name, s.kind) for s in specs] == [
        ("CR", "cr"),
        ("Broken", "broken"),
        ("c1", "cr"),
    ]
    assert specs[2].params == (("C", 0.5), ("tol", 1e-3))
    with pytest.raises(SystemExit, match=r"Unknown models \['nope'\]"):
        _specs("nope")
    for taken in ("Dummy", "c1"):
        with pytest.raises(SystemExit, match="already taken"):
            _specs("CR", candidates=[("c1", {}), (taken, {})])


def test_candidates_parse_from_json_or_a_dict_literal():
    assert harness.parse_candidate('long={"max_iter": 500}') == (
        "long",
        {"max_iter": 500},
    )
    assert harness.parse_candidate("d0={'dropout': 0.0}") == ("d0", {"dropout": 0.0})
    for bad in ("no-equals", "x=[1, 2]", "x={oops"):
        with pytest.raises(argparse.ArgumentTypeError):
            harness.parse_candidate(bad)


def test_models_of_a_missing_package_are_skipped_with_a_message(capsys):
    specs = _specs("CR", "Dummy", "Broken")
    missing = dataclasses.replace(TASK, optional={"broken": "no_such_package_cr"})
    kept = harness.skip_unavailable_models(missing, specs)
    assert [s.name for s in kept] == ["CR", "Dummy"]
    assert capsys.readouterr().out == (
        "skip Broken: no_such_package_cr is not installed\n"
    )
    installed = dataclasses.replace(TASK, optional={"broken": "numpy"})
    assert harness.skip_unavailable_models(installed, specs) == specs


def test_a_fit_gives_the_task_columns_on_a_fraction_and_under_a_cap():
    X, y = _load_table(TABLES[0])
    train, test = harness.make_splits(y, 1)[0]
    (spec,) = _specs("CR")
    scores = harness.fit_and_score(TASK, spec, X, y, train, test, 0.5, 0)
    assert list(scores)[:5] == ["loss", "fit_time", "tau", "n_train", "n_test"]
    assert set(list(scores)[5:]) == {"norms", "tau_time"}
    assert (scores["n_train"], scores["n_test"]) == (15, 30)
    # A linear model: the same gradient everywhere, tau 1.
    assert 0 <= scores["loss"] < 0.5 and scores["tau"] == pytest.approx(1, abs=1e-6)
    assert len(scores["norms"]) == 30
    capped = dataclasses.replace(TASK, max_train_rows={"CR": 10})
    scores = harness.fit_and_score(capped, spec, X, y, train, test, 1.0, 0)
    assert (scores["n_train"], scores["n_test"]) == (10, 30)


def test_subsamples_are_stratified_sorted_and_whole_when_asked_for_all():
    y = np.arange(100) % 2
    train = np.arange(0, 100, 2) + (np.arange(50) % 2)
    part = harness.subsample(train, y, 10, seed=0)
    assert len(part) == 10 and np.all(np.diff(part) > 0)
    assert set(part) <= set(train) and y[part].sum() == 5
    assert harness.subsample(train, y, 1.0, 0) is train
    assert harness.subsample(train, y, 500, 0) is train


def test_the_cache_key_follows_what_the_run_depends_on():
    table = TABLES[0]
    lr, c1 = _specs("CR", candidates=[("c1", {"C": 0.5})])
    key = harness.cache_key(TASK, table, lr, 0)
    assert len(key) == 12 and key == harness.cache_key(TASK, table, lr, 0)
    assert key != harness.cache_key(TASK, table, lr, 1)
    assert key != harness.cache_key(TASK, table, c1, 0)
    assert key != harness.cache_key(TASK, table, lr, 0, 0.5)
    assert (
        harness.cache_key(dataclasses.replace(TASK, scoring="v2"), table, lr, 0) != key
    )
    capped = dataclasses.replace(TASK, max_train_rows={"CR": 10})
    assert harness.cache_key(capped, table, lr, 0) != key
    assert harness.cache_key(TASK, _table("small", 61), lr, 0) != key


def test_a_model_outside_scikit_learn_has_a_cache_key_of_its_params():
    # CatBoost's repr takes no N_CHAR_MAX: its parameters name it instead.
    class Foreign:
        def __init__(self, depth=6):
            self.depth = depth

        def __repr__(self):
            return "Foreign()"

        def get_params(self):
            return {"depth": self.depth}

    def build(spec, split):
        return Foreign(depth=dict(spec.params).get("depth", 6))

    task = dataclasses.replace(TASK, build_model=build)
    table = TABLES[0]
    (spec,) = _specs("CR")
    key = harness.cache_key(task, table, spec, 0)
    other = dataclasses.replace(spec, params=(("depth", 8),))
    assert harness.cache_key(task, table, other, 0) != key


def test_baselines_are_cached_and_cr_models_never(tmp_path):
    table = TABLES[0]
    cr, dummy = _specs("CR", "Dummy")
    scores = {"loss": 0.25, "fit_time": 0.1}
    assert harness.read_cache(TASK, tmp_path, table, dummy, 3, 1.0) is None
    harness.write_cache(TASK, tmp_path, table, dummy, 3, 1.0, scores)
    harness.write_cache(TASK, tmp_path, table, cr, 3, 1.0, scores)
    (path,) = (tmp_path / "small").iterdir()
    assert path.name == f"Dummy-3-{harness.cache_key(TASK, table, dummy, 3)}.json"
    assert json.loads(path.read_text()) == scores
    assert harness.read_cache(TASK, tmp_path, table, dummy, 3, 1.0) == scores
    assert harness.read_cache(TASK, tmp_path, table, dummy, 3, 0.5) is None
    assert harness.read_cache(TASK, tmp_path, table, cr, 3, 1.0) is None
    assert harness.read_cache(TASK, None, table, dummy, 3, 1.0) is None


def test_tables_are_selected_with_the_reasons_of_those_skipped():
    tables, skipped = harness.select_tables(TASK, None, "all", None)
    assert [t.name for t in tables] == ["small", "large"]
    assert skipped == {"absent": "needs a folder"}
    tables, skipped = harness.select_tables(TASK, None, "all", None, fraction=0.5)
    assert [t.name for t in tables] == ["large"]
    assert skipped["small"] == "under 1,000 rows (--fraction runs)"


def test_a_run_orders_its_rows_records_errors_and_reuses_the_cache(tmp_path, capsys):
    tables = TABLES[:2]
    specs = _specs("CR", "Dummy", "Broken")
    kwargs = dict(cache_dir=tmp_path, progress=False)
    results = harness.run_suite(TASK, tables, specs, 1, **kwargs)
    keys = list(zip(results["table"], results["model"], results["split"], strict=True))
    assert keys == [(t.name, s.name, i) for t in tables for s in specs for i in (0, 1)]
    assert set(results.loc[results["table"] == "large", "band"]) == {"2,000-20,000"}
    broken = results[results["model"] == "Broken"]
    assert broken["error"].str.startswith("InvalidParameterError").all()
    assert broken[["loss", "fit_time", "tau"]].isna().all().all()
    assert "error {'table': 'small', 'model': 'Broken'" in capsys.readouterr().err
    assert (
        sorted(p.name.split("-")[0] for p in tmp_path.rglob("*.json")) == ["Dummy"] * 4
    )
    again = harness.run_suite(TASK, tables, specs, 1, **kwargs)
    assert list(again["cached"]) == [s == "Dummy" for _, s, _ in keys]
    columns = ["table", "model", "split", "loss", "n_train", "n_test"]
    fitted = results["model"] != "Broken"
    pd.testing.assert_frame_equal(
        again.loc[fitted, columns], results.loc[fitted, columns]
    )


def _results(shift=None):
    """Three tables, one per band; ``cand`` is better than CR by ``shift``."""
    shift = shift or {"a": 0.03, "b": 0.02, "c": 0.01}
    rows = []
    for table, band, offset in (("a", "under 2,000", 0.0),
                                ("b", "2,000-20,000", 0.1),
                                ("c", "above 20,000", 0.2)):  # fmt: skip
        for split in range(4):
            noise = 0.002 * (split % 2)
            for model, loss in (("CR", 0.2), ("LR", 0.3), ("cand", 0.2 - shift[table])):
                rows.append(
                    dict(table=table, band=band, model=model, split=split, tau=1.0)
                    | dict(loss=loss + offset + (noise if model == "cand" else 0))
                    | dict(fit_time=1.0 + split, n_train=40, n_test=40, cached=False)
                )
    return pd.DataFrame(rows)


def test_the_summary_is_overall_and_per_band_in_the_metric_direction():
    results = _results()
    models = ["CR", "LR", "cand"]
    means = harness.per_table(TASK, results)
    assert list(means.columns) == ["loss", "fit_time", "tau", "n_splits", "band"]
    assert means.loc[("a", "CR"), "fit_time"] == 2.5  # the median
    summary = harness.overall(TASK, means, models)
    assert list(summary["rank"]) == [2.0, 3.0, 1.0]
    assert summary.loc["CR", "gap"] == pytest.approx(0.019)
    assert list(summary["tables"]) == [3, 3, 3]
    band = harness.overall(TASK, means, models, "2,000-20,000")
    assert band.loc["CR", "gap"] == pytest.approx(0.02 - 0.001)
    assert list(band["tables"]) == [1, 1, 1]
    higher = dataclasses.replace(TASK, metrics=(Metric("loss", "loss", scale=100),))
    summary = harness.overall(higher, harness.per_table(higher, results), models)
    assert list(summary["rank"]) == [2.0, 1.0, 3.0]
    assert summary.loc["LR", "gap"] == 0.0


def test_paired_differences_per_table_and_per_band():
    results = _results()
    diffs = harness.paired_differences(TASK, results, "cand", "CR", 1.0)
    mean, low, high = diffs["a"]
    assert mean == pytest.approx(-0.029) and low < mean < high
    bands = harness.band_differences(TASK, results, "cand", "CR", 1.0)
    assert list(bands) == [*harness.BANDS, "all"]
    assert bands["under 2,000"]["mean"] == pytest.approx(-0.029)
    assert bands["all"]["mean"] == pytest.approx(-0.019)
    assert bands["all"]["tables"] == 3 and bands["all"]["better"] == 3
    # Per table var = (1/4 + 1) * s^2; the band's: their sum over T^2 tables.
    s2 = np.var([0, 0.002, 0, 0.002], ddof=1)
    half = 1.959964 * np.sqrt(3 * (0.25 + 1) * s2 / 9)
    assert bands["all"]["high"] - bands["all"]["mean"] == pytest.approx(half)


def test_the_adoption_rule_checks_gap_bands_and_fit_time():
    checks, adopted = harness.adoption(TASK, _results(), "cand")
    assert adopted and [ok for *_, ok in checks] == [True] * 6
    assert checks[0][0] == "mean gap overall improves by >= 0.01 loss"
    assert checks[0][1] == "+0.019"
    assert checks[-1][1] == "1.00x"
    # Better overall, not in the 2,000-20,000 band: refused.
    checks, adopted = harness.adoption(
        TASK, _results({"a": 0.05, "b": 0, "c": 0.02}), "cand"
    )
    assert not adopted and not checks[1][2]
    # A band worse beyond its noise: refused.
    worse = _results({"a": 0.06, "b": 0.03, "c": -0.01})
    checks, adopted = harness.adoption(TASK, worse, "cand")
    assert not adopted and checks[4][0].startswith("band above 20,000")
    assert not checks[4][2]
    # Slower fits on the small tables: refused.
    slow = _results()
    slow.loc[
        (slow["model"] == "cand") & (slow["band"] == "under 2,000"), "fit_time"
    ] *= 2
    assert harness.adoption(TASK, slow, "cand")[0][-1][1:] == ("2.00x", False)


def test_interval_cells_are_bold_only_where_the_interval_excludes_zero():
    cell = harness._interval
    assert cell((0.5, 0.1, 0.9), 1) == "**+0.5 [+0.1, +0.9]**"
    assert cell((0.5, -0.1, 0.9), 1) == "+0.5 [-0.1, +0.9]"
    assert cell((0.5, 0.5, 0.5), 3) == "+0.500 [+0.500, +0.500]"
    assert cell((0.25, np.nan, np.nan), 2) == "+0.25"


def test_the_report_has_band_summaries_differences_and_the_verdict():
    results = _results()
    results.loc[0, "cached"] = True
    specs = [ModelSpec("CR", "cr"), ModelSpec("LR", "baseline")]
    specs.append(ModelSpec("cand", "cr", (("C", 2.0),)))
    text = harness.suite_report(TASK, results, specs, {"d": "why"}, ["# head"])
    assert text.startswith("# head\n\nSkipped tables:\n\n- d: why\n")
    assert "Fits: 36, of which 1 from the cache." in text
    for band in ("All tables", *(f"{b} rows" for b in harness.BANDS)):
        assert f"### {band}\n\n| model | mean loss | mean rank |" in text
    assert "| table | band | splits | CR | LR | cand |" in text
    assert "## CR minus each model, per table" in text
    assert "## cand minus each model, per table" in text
    assert "## Candidates against the defaults, by size band" in text
    assert "| cand | above 20,000 | 1 | -0.009 [" in text
    assert text.rstrip().endswith("| median fit under 2,000 rows <= 1.5x the defaults' "
                                  "| 1.00x | yes |")  # fmt: skip
    assert "cand: **adopted**" in text
    empty = harness.suite_report(TASK, results.iloc[:0], specs, {}, ["# head"])
    assert empty == "# head\n\nNo results.\n"


def test_failed_fits_are_listed_and_left_out_of_the_scores():
    results = _results()
    results["error"] = None
    results.loc[1, ["loss", "fit_time", "error"]] = [np.nan, np.nan, "ValueError: x"]
    specs = [ModelSpec("CR", "cr"), ModelSpec("LR", "baseline")]
    text = harness.suite_report(TASK, results, specs, {}, ["# head"])
    assert "Failed fits (1; their scores are left out):\n\n" in text
    assert "- a, LR, split 0: ValueError: x\n" in text
    assert harness.per_table(TASK, results).loc[("a", "LR"), "n_splits"] == 3


def _parse(task, argv):
    parser = argparse.ArgumentParser()
    harness.add_suite_arguments(parser, task)
    args = parser.parse_args(argv)
    args.argv = [task.config, *argv]
    return args


def test_the_options_and_output_names_follow_the_task():
    args = _parse(TASK, [])
    assert (args.split, args.repeats, args.models) == (None, 5, list(TASK.models))
    assert args.cache_dir == harness.CACHE / "toy" and not hasattr(args, "fraction")
    assert harness.suite_output(TASK, args) == "toy_tune.md"
    assert harness.suite_output(TASK, _parse(TASK, ["--list"])) == "toy_tables.md"
    args = _parse(
        FRACTION_TASK, ["--split", "all", "--fraction", "0.1", "--repeats", "1"]
    )
    assert (
        harness.suite_output(FRACTION_TASK, args) == "toy_all_fraction0.1_repeats1.md"
    )
    with pytest.raises(SystemExit, match="--fraction"):
        harness.suite_command(FRACTION_TASK, _parse(FRACTION_TASK, ["--fraction", "0"]))


def test_the_listing_counts_each_band_of_each_half(capsys):
    text = harness.list_tables(TASK, None, "all", True, None)
    assert "`python benchmarks/run.py toy --list --markdown`" in text
    assert "| under 2,000 | 2 | 0 |\n| 2,000-20,000 | 0 | 1 |" in text
    assert "| large | 2400 | 2,000-20,000 | 3 | 2 | confirm | first | t |" in text
    assert harness.list_tables(TASK, None, "tune", False, None) is None
    captured = capsys.readouterr()
    assert captured.out == "small 60 3 2 tune\nabsent 80 3 2 tune\n"
    assert captured.err == "unavailable absent: needs a folder\n"


def test_a_suite_command_runs_the_task_end_to_end(capsys):
    argv = ["--split", "all", "--models", "CR,Dummy", "--repeats", "1", "--n-jobs", "1"]
    argv += ["--no-cache", "--no-progress", "--candidate", "c={'C': 0.1}"]
    text = harness.suite_command(TASK, _parse(TASK, argv))
    assert "skip absent: needs a folder" in capsys.readouterr().out
    assert text.startswith(
        "# Toy suite\n\nCommand: `python benchmarks/run.py toy --split"
    )
    assert "Fits: 12, of which 0 from the cache." in text
    assert "c: ToyRegressor with {'C': 0.1}; all: {" in text
    assert "## Adoption rule (issue 39)" in text


def test_records_and_a_run_against_them(tmp_path):
    # A second run on the same splits and seeds: CR against the records'
    # CR is identical on every table, and the records' rows are no fits.
    records = tmp_path / "before.csv"
    argv = ["--split", "all", "--models", "CR", "--repeats", "1", "--n-jobs", "1"]
    argv += ["--no-cache", "--no-progress"]
    harness.suite_command(TASK, _parse(TASK, [*argv, "--records", str(records)]))
    # round_trip: the values written back are the records' own (pandas < 2)
    before = pd.read_csv(records, float_precision="round_trip")
    assert len(before) == 4 and set(before["model"]) == {"CR"}
    text = harness.suite_command(TASK, _parse(TASK, [*argv, "--against", str(records)]))
    assert text.startswith("# Toy suite: CR against earlier records\n")
    assert "Fits: 4, of which 0 from the cache." in text
    assert "## CR against earlier records (before.csv)" in text
    zero = r"[-+]0\.000"
    assert re.search(
        rf"\| loss \| all \| 2 \| {zero} \[{zero}, {zero}\] \| 0 / 2 / 0 \|", text
    )
    assert text.count("| yes |") == 2
    # A changed record shows as a difference, no longer identical.
    before.loc[before["table"] == "small", "loss"] += 0.5
    before.to_csv(records, index=False)
    text = harness.suite_command(TASK, _parse(TASK, [*argv, "--against", str(records)]))
    assert text.count("| yes |") == 1 and "| small | under 2,000 | -0.500" in text


def test_a_candidate_with_encode_bins_is_an_encoder_pipeline():
    from cr_sklearn import CRClassifier, PiecewiseLinearEncoder

    plain = harness.build_cr(CRClassifier, {"max_iter": 3}, seed=7)
    assert (plain.random_state, plain.n_threads, plain.max_iter) == (7, 1, 3)
    encoded = harness.build_cr(CRClassifier, {harness.ENCODE_BINS: 3, "max_iter": 3}, 7)
    assert isinstance(encoded[0], PiecewiseLinearEncoder) and encoded[0].n_bins == 3
    assert encoded[-1].get_params() == plain.get_params()
    Z, y = np.random.default_rng(0).normal(size=(60, 2)), np.arange(60) % 2
    network, inputs = harness.cr_network(encoded.fit(Z, y))
    assert network is encoded[-1] and inputs(Z).shape == (60, 6)


def test_markdown_cells_are_escaped_and_values_formatted():
    assert harness.markdown_table(["a"], [["x | y"]]) == [
        "| a |",
        "| --- |",
        "| x \\| y |",
    ]
    assert [harness.fmt(v) for v in (None, float("nan"), 0.5)] == ["-", "-", "0.50"]
    assert harness.fmt(0.1234, 1, 100) == "12.3"
    lines = harness.header("T", ["pima", "--n-jobs", "2"], notes=["note"])
    assert lines[:3] == [
        "# T",
        "",
        "Command: `python benchmarks/run.py pima --n-jobs 2`",
    ]
    assert lines[-1] == "note" and "commit" in lines[4]


# -- tau on shared test rows, its cache and the pooled tau ------------------------


def test_tau_rows_are_at_most_a_thousand_seeded_by_the_split():
    rows = harness.tau_rows(5000, 3)
    assert len(rows) == 1000 and len(set(rows)) == 1000 and np.all(np.diff(rows) > 0)
    assert rows.max() < 5000
    np.testing.assert_array_equal(rows, harness.tau_rows(5000, 3))
    assert not np.array_equal(rows, harness.tau_rows(5000, 4))
    np.testing.assert_array_equal(harness.tau_rows(600, 3), np.arange(600))


def test_every_model_of_a_split_gets_its_tau_on_the_same_rows():
    # Two identical curved models (a CR model's tau is the same rule): equal
    # norms, split by split, only if they read the same rows; and those rows
    # are the split's seeded draw of 1,000 of its 1,200 test rows.
    from sklearn.svm import SVC

    from cr_sklearn import gradient_norms

    def build(spec, seed):
        return SVC() if spec.is_cr else _build_model(spec, seed)

    task = dataclasses.replace(TASK, build_model=build)
    large = TABLES[1]
    specs = _specs("CR", "Dummy", "Curved", "Twin")
    results = harness.run_suite(task, [large], specs, 1, progress=False)
    norms = results.set_index(["model", "split"])["norms"]
    assert pd.isna(norms[("Dummy", 0)])  # no tau for it
    X, y = _load_table(large)
    for split, (train, test) in enumerate(harness.make_splits(y, 1)):
        first = np.asarray(norms[("Curved", split)])
        assert len(test) == 1200 and first.shape == (1000,)
        np.testing.assert_array_equal(first, norms[("Twin", split)])
        np.testing.assert_allclose(first, norms[("CR", split)], rtol=1e-9)
        rows = np.sort(np.random.default_rng(split).choice(1200, 1000, replace=False))
        pre = harness.make_preprocessing(X).fit(X.iloc[train])
        model = build(ModelSpec("CR", "cr"), split).fit(
            pre.transform(X.iloc[train]), y[train]
        )
        expected = gradient_norms(model, pre.transform(X.iloc[test[rows]]))
        np.testing.assert_allclose(first, expected, rtol=1e-9)
        assert first.std() > 0.01 * first.mean()  # rows tell apart
    assert not np.allclose(norms[("Curved", 0)][:50], norms[("Curved", 1)][:50])


def test_tau_is_cached_apart_and_the_cached_scores_stay_valid(tmp_path):
    table = TABLES[0]
    specs = _specs("Dummy", "Curved")
    kwargs = dict(cache_dir=tmp_path, progress=False)
    first = harness.run_suite(TASK, [table], specs, 1, **kwargs)
    curved = specs[1]
    keys = {s: harness.cache_key(TASK, table, curved, s) for s in (0, 1)}
    score_files = {
        s: tmp_path / "small" / f"Curved-{s}-{k}.json" for s, k in keys.items()
    }
    tau_files = sorted((tmp_path / "small").glob("*.tau.json"))
    assert [p.name.split("-")[:2] for p in tau_files] == [
        ["Curved", "0"],
        ["Curved", "1"],
    ]
    assert all(p.is_file() for p in score_files.values())
    # Scores as a cache file written before tau was measured: tau NaN, and a
    # loss no fit gives, so that reading it shows.
    old = {**json.loads(score_files[0].read_text()), "loss": 0.123, "tau": np.nan}
    assert "norms" not in old
    score_files[0].write_text(json.dumps(old, sort_keys=True) + "\n")
    before = {s: p.read_bytes() for s, p in score_files.items()}
    stored = [json.loads(p.read_text()) for p in tau_files]
    for p in tau_files:
        p.unlink()
    again = harness.run_suite(TASK, [table], specs, 1, **kwargs)
    assert {s: p.read_bytes() for s, p in score_files.items()} == before
    for path, was in zip(tau_files, stored, strict=True):  # the same tau, re-timed
        now = json.loads(path.read_text())
        assert (now["tau"], now["norms"]) == (was["tau"], was["norms"])
    rows = again.set_index(["model", "split"])
    assert rows.loc[("Curved", 0), "loss"] == 0.123  # the cached score, read
    assert list(rows["cached"]) == [True] * 4
    assert list(rows["tau_refit"]) == [False, False, True, True]
    assert rows.loc[("Curved", 0), "fit_time"] == old["fit_time"]
    for split in (0, 1):
        assert rows.loc[("Curved", split), "norms"] == stored[split]["norms"]
        assert rows.loc[("Curved", split), "tau"] == pytest.approx(
            first.set_index(["model", "split"]).loc[("Curved", split), "tau"]
        )
    third = harness.run_suite(TASK, [table], specs, 1, **kwargs)
    assert not third["tau_refit"].any() and third["cached"].all()
    key = harness.tau_key(TASK, table, curved, 0)
    assert key != harness.cache_key(TASK, table, curved, 0)
    assert key != harness.tau_key(TASK, table, curved, 1)
    text = harness.suite_report(TASK, again, specs, {}, ["# head"])
    assert (
        "Fits: 4, of which 4 from the cache (2 of them refitted for tau alone)." in text
    )


def test_tau_is_pooled_over_the_splits_each_over_its_own_mean():
    def pooled(*parts):
        both = np.concatenate([p / p.mean() for p in parts])
        return np.percentile(both, 99) / both.mean()

    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 10.0, 10.0, 100.0])
    expected = pooled(a, b)
    assert harness.pooled_tau([a, None, np.nan, b.tolist()]) == pytest.approx(expected)
    assert np.isnan(harness.pooled_tau([None, np.nan]))
    results = _results()  # four splits
    results["norms"] = [a if r.split % 2 else b for r in results.itertuples()]
    results.loc[results["model"] == "LR", "norms"] = None
    means = harness.per_table(TASK, results)
    assert means.loc[("a", "CR"), "pooled_tau"] == pytest.approx(pooled(b, a, b, a))
    assert np.isnan(means.loc[("a", "LR"), "pooled_tau"])


def _norms(tau_like):
    """Norms whose tau grows with ``tau_like``: 98 ones and two of it."""
    return np.r_[np.ones(98), tau_like, tau_like]


def _tau(tau_like):
    return 100 * tau_like / (98 + 2 * tau_like)


RULE_TASK = dataclasses.replace(
    TASK,
    metrics=(
        Metric("accuracy", "accuracy", scale=100),
        Metric("log_loss", "log-loss", higher_is_better=False, digits=3),
    ),
)
NONLINEAR = ("n1", "n2")


def _rule_results(acc=0.002, loss=-0.001, nonlinear_acc=None, tau=None, fit=1.0):
    """Five tables (two nonlinear); ``cand`` moves accuracy by ``acc``."""
    tau = tau or {
        "cand": 2.0,
        "CR": 8.0,
        "MLP": 4.0,
        "SVC": 5.0,
        "LogisticRegression": 1.0,
    }
    rows = []
    for table, band in (("a1", "under 2,000"), ("a2", "under 2,000"),
                        ("n1", "under 2,000"), ("n2", "2,000-20,000"),
                        ("b1", "2,000-20,000")):  # fmt: skip
        shift = (
            nonlinear_acc if nonlinear_acc is not None and table in NONLINEAR else acc
        )
        for split in range(6):
            noise = 0.001 * (-1) ** split
            scores = (("CR", 0.8, 0.4), ("LogisticRegression", 0.75, 0.5),
                      ("MLP", 0.78, 0.45), ("SVC", 0.79, 0.44),
                      ("cand", 0.8 + shift + noise, 0.4 + loss + noise))  # fmt: skip
            for model, a, ll in scores:
                t = tau[model] if np.isscalar(tau[model]) else tau[model][table]
                time = (fit if model == "cand" else 1.0) * (1 + split)
                rows.append(
                    dict(table=table, band=band, model=model, split=split, accuracy=a)
                    | dict(log_loss=ll, fit_time=time, tau=_tau(t), norms=_norms(t))
                    | dict(n_train=100, n_test=100, cached=False, tau_refit=False)
                )
    return pd.DataFrame(rows)


def _verdicts(checks):
    return {(letter, name.split(":")[0]): ok for letter, name, _, ok in checks}


def test_rule_46_passes_a_candidate_that_meets_every_criterion():
    checks, passed = harness.rule46(
        RULE_TASK, _rule_results(), "cand", nonlinear=NONLINEAR
    )
    assert passed and all(ok for *_, ok in checks)
    assert [c for c, *_ in checks] == ["a"] * 6 + ["b", "c", "c", "d"]
    measured = {name: value for _, name, value, _ in checks}
    assert measured[
        "accuracy difference's interval above -0.3 points, all tables"
    ].startswith("+0.20 [")
    lead = measured[next(n for n in measured if n.startswith("nonlinear tables"))]
    assert (
        "on 2 tables; mean lead over LogisticRegression: cand +5.20, CR +5.00" in lead
    )
    c_share = next(v for _, n, v, _ in checks if n.startswith("pooled tau below"))
    assert c_share == "5 of 5 (100%); CR: 0 of 5"
    c_ratio = next(v for _, n, v, _ in checks if n.startswith("median tau / min"))
    assert c_ratio == f"{_tau(2.0) / _tau(4.0):.2f}; CR: {_tau(8.0) / _tau(4.0):.2f}"
    assert checks[-1][2].startswith("1.00x on 3 tables (ratio of the medians")


def test_rule_46_fails_each_criterion_on_its_own_numbers():
    def failed(results):
        checks, passed = harness.rule46(RULE_TASK, results, "cand", nonlinear=NONLINEAR)
        assert not passed
        return {f"({c}) {name}" for c, name, _, ok in checks if not ok}

    # (a) accuracy down by a point: below -0.3 and worse in both bands.
    assert failed(_rule_results(acc=-0.01)) == {
        "(a) accuracy difference's interval above -0.3 points, all tables",
        "(a) band under 2,000: accuracy not worse beyond its interval",
        "(a) band 2,000-20,000: accuracy not worse beyond its interval",
        "(b) nonlinear tables: accuracy lead over LogisticRegression kept "
        "(cand - CR not below 0 beyond its interval)",
    }
    # (a) log-loss up by 0.01.
    assert failed(_rule_results(loss=0.01)) == {
        "(a) log-loss difference's interval below +0.005, all tables",
        "(a) band under 2,000: log-loss not worse beyond its interval",
        "(a) band 2,000-20,000: log-loss not worse beyond its interval",
    }
    # (b) a lead lost on the nonlinear tables only, within (a)'s bounds.
    lost = failed(_rule_results(acc=0.004, nonlinear_acc=-0.002))
    assert lost == {
        "(b) nonlinear tables: accuracy lead over LogisticRegression kept "
        "(cand - CR not below 0 beyond its interval)"
    }
    # (c) above MLP's tau on 2 of 5 tables: 60% < 80%, median ratio > 0.9.
    rough = {"a1": 6.0, "a2": 6.0, "n1": 3.9, "n2": 3.9, "b1": 3.9}
    tau = {"cand": rough, "CR": 8.0, "MLP": 4.0, "SVC": 5.0, "LogisticRegression": 1.0}
    assert failed(_rule_results(tau=tau)) == {
        "(c) pooled tau below MLP's and SVC's on >= 80% of the tables",
        "(c) median tau / min(tau of MLP and SVC) <= 0.9",
    }
    # (d) twice the defaults' fit time under 2,000 rows.
    assert failed(_rule_results(fit=2.0)) == {
        "(d) median fit under 2,000 rows <= 1.5x CR's"
    }
    # Without MLP and SVC, or without nonlinear tables, (b) and (c) fail.
    partial = _rule_results()
    partial = partial[~partial["model"].isin(["MLP", "SVC"])]
    checks, _ = harness.rule46(RULE_TASK, partial, "cand", nonlinear=())
    assert {c for c, _, _, ok in checks if not ok} == {"b", "c"}
    assert "no nonlinear table in the run" in {v for _, _, v, _ in checks}


def test_the_report_has_the_tau_table_and_the_rule_46_verdict():
    results = _rule_results(fit=2.0)
    task = dataclasses.replace(
        RULE_TASK,
        per_table=harness.tau_section,
        candidate_rules=lambda task, results, candidates: harness.rule46_section(
            task, results, candidates, nonlinear=NONLINEAR
        ),
    )
    names = ("CR", "LogisticRegression", "MLP", "SVC")
    specs = [ModelSpec(n, "cr" if n == "CR" else "baseline") for n in names]
    specs += [ModelSpec("Trees", "baseline"), ModelSpec("cand", "cr", (("C", 2.0),))]
    trees = results[results["model"] == "CR"].assign(model="Trees", tau=np.nan)
    results = pd.concat([results, trees.assign(norms=None)], ignore_index=True)
    text = harness.suite_report(task, results, specs, {}, ["# head"])
    assert "## Tau per table" in text
    header = "| table | band | CR | LogisticRegression | MLP | SVC | Trees | cand |"
    assert header in text
    cells = [f"{_tau(t):.2f}" for t in (8.0, 1.0, 4.0, 5.0)]
    assert f"| a1 | under 2,000 | {' | '.join(cells)} | - | {_tau(2.0):.2f} |" in text
    assert f"| CR | {_tau(8.0):.2f} | 0 of 5 | {_tau(8.0) / _tau(4.0):.2f} |" in text
    assert f"| MLP | {_tau(4.0):.2f} | - | - |" in text
    per_model = text.split("Per model:")[1].split("##")[0]
    assert "| cand |" in per_model and "| Trees |" not in per_model
    rule39 = text.index("## Adoption rule (issue 39)")
    rule46 = text.index("## Adoption rule (issue 46)")
    assert rule39 < rule46
    assert "| (d) median fit under 2,000 rows <= 1.5x CR's | 2.00x on 3 tables" in text
    assert text.rstrip().endswith(
        "Verdict, cand: **FAIL** on (d) (rule 46 on this run's tables)."
    )


def test_tau_is_timed_apart_from_the_fit(monkeypatch):
    import time

    import cr_sklearn

    real = cr_sklearn.gradient_norms

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(cr_sklearn, "gradient_norms", slow)
    X, y = _load_table(TABLES[0])
    train, test = harness.make_splits(y, 1)[0]
    (spec,) = _specs("Curved")
    scores = harness.fit_and_score(TASK, spec, X, y, train, test, 1.0, 0)
    assert scores["fit_time"] < 0.3 <= scores["tau_time"]


def test_the_first_fit_of_a_model_in_a_process_is_warmed_up_untimed(monkeypatch):
    built = []

    def build(spec, seed):
        built.append(spec.name)
        return _build_model(spec, seed)

    task = dataclasses.replace(TASK, name="warm", build_model=build)
    monkeypatch.setattr(harness, "_WARM", set())
    X, y = _load_table(TABLES[0])
    train, test = harness.make_splits(y, 1)[0]
    (spec,) = _specs("Curved")
    args = (spec, X, y, train, test, 1.0, 0)
    first = harness._fit_task(task, args)
    assert built == ["Curved", "Curved"]  # a warm-up fit, then the timed one
    second = harness._fit_task(task, args)
    assert built == ["Curved"] * 3
    # The seeded scores do not depend on it.
    assert (first["loss"], first["norms"]) == (second["loss"], second["norms"])
