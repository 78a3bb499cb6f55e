"""The speed benchmark's table and its replay of the study (``bench_speed.py``).

``benchmarks`` is not a package: the script is imported by path. No test here
asserts a speed; the benchmark itself runs outside the test suite.
"""

import numpy as np
import pytest
from conftest import load_benchmark

from cr_sklearn import CRClassifier

bench = load_benchmark("bench_speed")


def test_row_is_met_against_its_limit_or_its_check():
    assert bench.Row("m", "c", "a", 0.9, limit=1.0).met() == "yes"
    assert bench.Row("m", "c", "a", 1.2, limit=1.0).met() == "no"
    assert bench.Row("m", "c", "a", None, limit=1.0).met() == "not run"
    assert bench.Row("m", "c", "a", 1.2).met() == ""
    checked = bench.Row("m", "c", "a", "400 / 400", target="equal")
    checked.ok = True
    assert checked.met() == "yes"
    assert bench.Row("m", "c", "a", 1.234).cell() == "1.23x"
    assert bench.Row("m", "c", "a", 0.0441, unit="s").cell() == "0.044 s"


def test_recorder_stamps_rows_and_puts_targets_first():
    rec = bench.Recorder()
    with rec.case("1") as rows:
        rows.append(bench.Row("m", "detail", "a", 2.0))
        rows.append(bench.Row("m", "target", "a", 0.5, target="<= 1", limit=1.0))
    rec.note(bench.Row("GPU check", "x | y", "", "no CUDA device"))
    assert [r.case for r in rec.targets] == ["target"]
    assert all(r.threads == "1" and len(r.load) == 2 for r in rec.targets)
    lines = bench._table(rec).splitlines()
    assert lines[0].startswith("| Measure | Case | Against | Value | Target | Met")
    assert len(lines) == 2 + 3
    assert "| target |" in lines[2]  # targets first
    assert "x / y" in lines[-1]  # a "|" in a cell would split the column


def test_cli_probe_sees_that_help_does_not_import_torch():
    assert bench._torch_imported(["--help"]) is False


def test_study_replay_runs_the_cr_tasks_of_the_design():
    design = {"repeats": 1, "folds": 2, "fractions": (0.25, 1.0)}
    for n_threads in ("study", None):
        cpu, n_tasks = bench._study_cr_fits(
            design, n_threads, estimator=CRClassifier(max_iter=1)
        )
        assert n_tasks == 4 and cpu > 0


def test_the_replayed_repeat_has_the_study_splits():
    y = np.arange(200) % 2
    X = np.zeros((200, 1))
    design, replay = bench.STUDY, bench.STUDY_REPLAY
    full = bench.RepeatedStratifiedKFold(
        n_splits=design["folds"], n_repeats=design["repeats"], random_state=0
    ).split(X, y)
    first = bench.RepeatedStratifiedKFold(
        n_splits=replay["folds"], n_repeats=replay["repeats"], random_state=0
    ).split(X, y)
    # The replay is the first of the study's repeats: a prefix of its splits.
    for (a_train, a_test), (b_train, b_test) in zip(first, full, strict=False):
        assert np.array_equal(a_train, b_train) and np.array_equal(a_test, b_test)


def test_stream_multiply_add_estimate_counts_the_carried_products():
    # d=8, w=64, 2 hidden layers, 1 output: N = 8*64 + 64*64 + 64 per row;
    # the exact stream carries 8 directions past the first layer.
    n = 8 * 64 + 64 * 64 + 64
    s = 8 * (64 * 64 + 64) * 64 / 128
    exact = bench.stream_multiply_add_ratio(8, 64, 128, directions="exact")
    assert np.isclose(exact, (1 + s / n) / 2)
    # k projections through every product on half the batch: (1 + k/2) / 2.
    assert np.isclose(bench.stream_multiply_add_ratio(384, 256, 128, directions=4), 1.5)
    # Every row carried at batch 64, a quarter at 256.
    assert np.isclose(bench.stream_multiply_add_ratio(384, 256, 64, directions=1), 1.0)
    assert np.isclose(bench.stream_multiply_add_ratio(384, 256, 256, directions=4), 1.0)


def test_thread_shapes_have_the_stated_sizes():
    sizes = {
        name: data()[0].shape for name, (data, _, _) in bench.THREAD_SHAPES.items()
    }
    assert sizes["384-column embedding, 2,000 rows, 10 epochs"] == (2000, 384)
    assert sizes["5,000 x 50 table, 5 epochs"] == (5000, 50)
    for _, (data, fit, quick) in bench.THREAD_SHAPES.items():
        _, y = data()
        assert set(np.unique(y)) == {0, 1}
        assert fit.get("max_iter", 100) >= quick["max_iter"]


def test_large_data_and_its_child_report(capsys):
    X, y = bench._large_data(500)
    assert X.shape == (500, bench.LARGE_FEATURES) and 0.2 < y.mean() < 0.8
    bench._large_child(300)
    shown = capsys.readouterr().out.splitlines()
    wall, cpu, epochs, before, peak, _ = (float(v) for v in shown[-1].split()[1:])
    assert shown[-1].startswith("LARGE") and peak >= before > 0 and epochs >= 1
    # verbose=1 showed the epochs as they trained.
    assert sum(line.strip()[:1].isdigit() for line in shown[:-1]) >= epochs


def test_commit_names_the_checkout():
    assert bench._commit()


def test_stream_products_per_step_count_the_exact_streams_products():
    # 30 directions on 64 rows through 64x64 and 64x1, three times each.
    assert bench.stream_products_per_step(30) == 3 * 64 * 30 * (64 * 64 + 64)
    assert bench._gemm_seconds_per_multiply_add(2, rows=4, repeats=3) > 0


def test_the_recorded_stream_is_swapped_in_and_back():
    from cr_sklearn.nn import CRNetwork

    fused = CRNetwork._fused_stream_pass
    with bench._recorded_stream():
        assert CRNetwork._fused_stream_pass is not fused
        X = np.random.default_rng(0).normal(size=(40, 3))
        CRClassifier(max_iter=1).fit(X, X[:, 0] > 0)
    assert CRNetwork._fused_stream_pass is fused


def test_step_decomposition_times_each_part():
    X, y = bench._pima()
    parts = bench.step_decomposition(X, y, n_epochs=1)
    four = ("forward", "loss", "backward", "optimizer")
    assert set(parts) == {*four, "step"}
    assert all(ms >= 0 for ms in parts.values()) and parts["step"] > 0
    assert parts["step"] == pytest.approx(sum(parts[name] for name in four))


def test_prediction_multiply_adds_count_the_weight_matrices():
    from sklearn.neural_network import MLPClassifier

    X = np.random.default_rng(0).normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    mlp = MLPClassifier((5,), max_iter=2).fit(X, y)
    assert bench.prediction_multiply_adds(mlp) == 3 * 5 + 5 * 1
    cr = CRClassifier((5,), max_iter=1, encoding_bins=None).fit(X, y)
    assert bench.prediction_multiply_adds(cr) == 3 * 5 + 5 * 1
    encoded = CRClassifier((5,), max_iter=1).fit(X, y)
    width = encoded.n_encoded_features_
    assert bench.prediction_multiply_adds(encoded) == 3 * width + width * 5 + 5
