"""The command line against bad inputs: clear messages before any fit."""

import os
from pathlib import Path

import numpy as np
import pytest

import cr_sklearn.cli as cli
from cr_sklearn.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

FAST = ["--folds", "3", "--repeats", "1", "--n-jobs", "1", "--no-progress"]


@pytest.fixture
def no_fits(monkeypatch):
    """Fail the test if a study starts fitting."""
    import cr_sklearn.study as study

    def fail(*args, **kwargs):
        raise AssertionError("a study started before the inputs were checked")

    monkeypatch.setattr(study, "data_fraction_study", fail)
    monkeypatch.setattr(study, "factorial_study", fail)


def _error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# -- --out is checked first (item 16) --------------------------------------------
def test_out_that_is_a_file_is_reported_before_any_fit(tmp_path, capsys, no_fits):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    study = ["study", "--models", "logreg", "--out", str(taken), *FAST]
    assert "exists and is not a folder" in _error(study, capsys)
    factorial = ["factorial", "--out", str(taken), "--no-progress"]
    assert "exists and is not a folder" in _error(factorial, capsys)
    below = ["study", "--models", "logreg", "--out", str(taken / "sub"), *FAST]
    assert "is not a folder" in _error(below, capsys)
    (tmp_path / "run" / "study.csv").mkdir(parents=True)
    clash = ["study", "--models", "logreg", "--out", str(tmp_path / "run"), *FAST]
    assert "study.csv is a folder" in _error(clash, capsys)


def test_out_that_cannot_be_written_is_reported_before_any_fit(
    tmp_path, capsys, no_fits
):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        argv = ["study", "--models", "logreg", "--out", str(locked / "new"), *FAST]
        if os.geteuid() != 0:  # root writes into a read-only folder
            assert "cannot be written" in _error(argv, capsys)
    finally:
        locked.chmod(0o700)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_out_in_proc_is_reported_before_any_fit(capsys, no_fits):
    # The permission bits let root write into /proc; the kernel does not.
    for command in ("study", "factorial"):
        argv = [command, "--out", "/proc/cr-sklearn-out", "--no-progress"]
        err = _error(argv, capsys)
        assert "--out /proc/cr-sklearn-out cannot be written" in err


def test_the_writability_probe_leaves_nothing_behind(tmp_path):
    out = tmp_path / "a" / "b"
    cli._check_out(out, ["study.csv"])
    assert list(tmp_path.iterdir()) == []
    out.mkdir(parents=True)
    (out / "study.csv").write_text("kept")
    cli._check_out(out, ["study.csv"])
    assert [p.name for p in out.iterdir()] == ["study.csv"]
    assert (out / "study.csv").read_text() == "kept"


def test_the_input_csv_is_never_overwritten(tmp_path, capsys, no_fits):
    out = Path("out")  # relative, as typed
    out.mkdir()
    data = _csv(out, _frame())
    data.rename(out / "study.csv")
    before = (out / "study.csv").read_bytes()
    argv = ["study", "--dataset", "out/study.csv", "--target", "label"]
    err = _error([*argv, "--out", "out", *FAST], capsys)
    assert "would overwrite the input file out/study.csv" in err
    # The same file through another name: a symbolic link, or ./out.
    (tmp_path / "link.csv").symlink_to((out / "study.csv").resolve())
    argv[2] = str(tmp_path / "link.csv")
    assert "would overwrite the input" in _error([*argv, "--out", "./out"], capsys)
    assert (out / "study.csv").read_bytes() == before


# -- CSV files (item 17) -----------------------------------------------------------
def _csv(tmp_path, frame):
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def _frame(n=60, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 2))
    return pd.DataFrame(
        {"a": X[:, 0], "b": X[:, 1], "label": np.where(X[:, 0] > 0, "yes", "no")}
    )


def test_text_feature_columns_are_named_with_no_preprocess(tmp_path, capsys, no_fits):
    frame = _frame()
    frame["city"] = ["Lyon", "Oslo"] * 30  # pandas 3 reads this as its str dtype
    path = _csv(tmp_path, frame)
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error([*argv, "--no-preprocess"], capsys)
    assert "Non-numeric feature columns" in err and "'city'" in err
    assert "Without --no-preprocess" in err


def test_text_columns_with_pandas_string_dtype(tmp_path):
    from cr_sklearn.study import load_study_dataset

    frame = _frame()
    frame["city"] = pd.array(["Lyon", "Oslo"] * 30, dtype="string")
    path = _csv(tmp_path, frame)
    with pytest.raises(ValueError, match=r"Non-numeric feature columns .*\['city'\]"):
        load_study_dataset(str(path), "label")
    X, y = load_study_dataset(str(path), "label", as_frame=True)
    assert list(X.columns) == ["a", "b", "city"] and X["a"].dtype == np.float64
    X, y = load_study_dataset(str(_csv(tmp_path, _frame())), "label")
    assert X.shape == (60, 2) and X.dtype == np.float64


def test_missing_values_are_reported_with_no_preprocess(tmp_path, capsys, no_fits):
    frame = _frame()
    frame.loc[[3, 7], "b"] = np.nan
    path = _csv(tmp_path, frame)
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error([*argv, "--no-preprocess"], capsys)
    assert "Missing values" in err and "'b' (2 rows)" in err


def test_missing_labels_are_reported_before_fitting(tmp_path, capsys, no_fits):
    frame = _frame()
    frame.loc[[3, 7], "b"] = np.nan
    frame.loc[5, "label"] = None
    path = _csv(tmp_path, frame)
    err = _error(
        ["evaluate", "--dataset", str(path), "--target", "label", *FAST], capsys
    )
    assert "Missing values" in err and "'label' (1 rows), the label column" in err


def test_a_csv_without_rows_is_reported_as_such(tmp_path, capsys, no_fits):
    path = tmp_path / "header.csv"
    path.write_text("a,b,label\n")
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error(argv, capsys)
    assert "has no rows" in err and "Non-numeric" not in err
    path.write_text("")
    assert "is empty" in _error(argv, capsys)


def test_a_path_that_does_not_exist_is_reported_as_such(tmp_path, capsys, no_fits):
    missing = tmp_path / "nope.csv"
    err = _error(
        ["evaluate", "--dataset", str(missing), "--target", "y", *FAST], capsys
    )
    assert "No such file" in err and "Unknown dataset" not in err
    err = _error(
        ["evaluate", "--dataset", str(tmp_path), "--target", "y", *FAST], capsys
    )
    assert "is not a file" in err
    assert "Unknown dataset" in _error(["evaluate", "--dataset", "iris", *FAST], capsys)


# -- --models and the scheduler (item 18) ------------------------------------------
@pytest.mark.parametrize("value", [",", " , ,", ""])
def test_an_empty_model_list_is_rejected(value, capsys, no_fits):
    err = _error(["evaluate", "--models", value, *FAST], capsys)
    assert "expected comma-separated names" in err


def test_an_unreachable_scheduler_fails_fast(capsys, monkeypatch, no_fits):
    pytest.importorskip("dask.distributed")
    import time

    monkeypatch.setattr(cli, "SCHEDULER_TIMEOUT_S", 1)
    start = time.perf_counter()
    argv = ["evaluate", "--models", "logreg", "--backend", "dask"]
    err = _error([*argv, "--scheduler", "tcp://127.0.0.1:1", *FAST], capsys)
    assert "Cannot reach the Dask scheduler at tcp://127.0.0.1:1" in err
    assert time.perf_counter() - start < 20


# -- hostile files and arguments (issue 36: R2, R3, R15, R16) ------------------------
def test_duplicate_column_names_are_refused(tmp_path, capsys, no_fits):
    path = tmp_path / "twice.csv"
    rows = [f"{x},{x > 0},{x > 0}" for x in np.linspace(-1, 1, 30)]
    path.write_text("a,label,label\n" + "\n".join(rows))
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error(argv, capsys)
    assert "columns of the same name: ['label']" in err
    assert "label.1" not in err


@pytest.mark.parametrize("dangling", [False, True])
def test_out_files_that_are_links_are_refused(tmp_path, capsys, no_fits, dangling):
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious.txt"
    if not dangling:
        target.write_text("keep me")
    (out / "study.md").symlink_to(target)
    err = _error(["evaluate", "--models", "logreg", "--out", str(out), *FAST], capsys)
    assert "study.md is a symbolic link" in err
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text() == "keep me"


def test_outputs_replace_a_link_made_during_the_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    cli._write_all(out, {"study.csv": lambda path: Path(path).write_text("new")})
    assert (out / "study.csv").read_text() == "new"
    (out / "study.md").symlink_to(target)
    writers = {
        name: lambda path: Path(path).write_text("x")
        for name in ("study.csv", "study.md")
    }
    with pytest.raises(ValueError, match="became a symbolic link"):
        cli._write_all(out, writers)
    assert target.read_text() == "keep me"
    # Nothing of the set was written.
    assert (out / "study.csv").read_text() == "new"
    assert sorted(p.name for p in out.iterdir()) == ["study.csv", "study.md"]


def test_huge_values_are_named_without_nan_advice(tmp_path, capsys, no_fits):
    frame = _frame()
    frame.loc[3, "b"] = 1e308
    err = _error(
        ["evaluate", "--dataset", str(_csv(tmp_path, frame)), "--target", "label"],
        capsys,
    )
    assert "Values too large to study" in err and "['b']" in err
    assert "NaN" not in err
    frame.loc[3, "b"] = np.inf
    err = _error(
        ["evaluate", "--dataset", str(_csv(tmp_path, frame)), "--target", "label"],
        capsys,
    )
    assert "Infinite values" in err and "['b']" in err


def test_a_file_that_is_not_utf8_is_named(tmp_path, capsys, no_fits):
    path = tmp_path / "latin.csv"
    path.write_bytes("a,label\n1,caf\xe9\n2,th\xe9\n".encode("latin-1"))
    err = _error(["evaluate", "--dataset", str(path), "--target", "label"], capsys)
    assert f"{path} is not UTF-8 text" in err
    assert "Traceback" not in err


def test_messages_about_wide_files_stay_short(tmp_path, capsys, no_fits):
    path = tmp_path / "wide.csv"
    names = [f"column_{i}" for i in range(200_000)]
    path.write_text(",".join(names) + "\n" + ",".join("1" * len(names)) + "\n")
    err = _error(["evaluate", "--dataset", str(path), "--target", "label"], capsys)
    assert "Column 'label' is not in" in err and "199,992 more" in err
    assert len(err) < 3000


@pytest.mark.parametrize(
    "out, message",
    [("", "--out is empty"), ("x" * 300, "cannot be used (File name too long)")],
)
def test_bad_out_names_get_a_clean_message(out, message, capsys, no_fits):
    err = _error(["evaluate", "--models", "logreg", "--out", out, *FAST], capsys)
    assert message in err and "Traceback" not in err
    assert len(err) < 2000


def test_a_dataset_name_too_long_gets_a_clean_message(capsys, no_fits):
    argv = ["evaluate", "--dataset", "x" * 300 + ".csv", "--target", "y", *FAST]
    err = _error(argv, capsys)
    assert "cannot be read (File name too long)" in err and "Traceback" not in err
    assert len(err) < 2000


def test_a_huge_number_of_repeats_is_refused_at_once(capsys, no_fits):
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    err = _error(["study", "--repeats", "1000000000", "--no-progress"], capsys)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "above the 20,000 of one run" in err
    assert time.perf_counter() - start < 10 and peak < 50e6


# -- --cr-param (issue 37 item 3) -------------------------------------------------
@pytest.mark.parametrize(
    "value, message",
    [
        ("encoding_bin=2", "no parameter 'encoding_bin'. Did you mean encoding_bins"),
        ("encoding_bins", "expected KEY=VALUE"),
        ("hidden_layer_sizes=(8,", "is not a Python literal"),
        ("encoding_bins='many'", "trial fit of CRClassifier on 60 rows failed"),
        ("dropout=2.5", "trial fit"),
    ],
)
def test_bad_cr_params_fail_before_the_study(value, message, tmp_path, capsys, no_fits):
    path = _csv(tmp_path, _frame())
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error([*argv, "--cr-param", value], capsys)
    assert message in err and "Traceback" not in err


def test_cr_params_need_the_cr_model(capsys, no_fits):
    argv = ["evaluate", "--models", "logreg", "--cr-param", "encoding_bins=2", *FAST]
    assert "which --models leaves out" in _error(argv, capsys)
