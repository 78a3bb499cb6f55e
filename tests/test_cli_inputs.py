"""The command line against bad inputs: clear messages before any fit."""

import os

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
    tmp_path, capsys, no_fits, monkeypatch
):
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() == 0:  # root writes anywhere: pretend the folder is locked
        monkeypatch.setattr(cli.os, "access", lambda path, mode: False)
    else:
        locked.chmod(0o500)
    try:
        argv = ["study", "--models", "logreg", "--out", str(locked / "new"), *FAST]
        assert "is not writable" in _error(argv, capsys)
    finally:
        locked.chmod(0o700)


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


def test_text_feature_columns_are_named(tmp_path, capsys, no_fits):
    frame = _frame()
    frame["city"] = ["Lyon", "Oslo"] * 30  # pandas 3 reads this as its str dtype
    path = _csv(tmp_path, frame)
    argv = ["evaluate", "--dataset", str(path), "--target", "label", *FAST]
    err = _error(argv, capsys)
    assert "Non-numeric feature columns" in err and "'city'" in err


def test_text_columns_with_pandas_string_dtype(tmp_path):
    from cr_sklearn.study import load_study_dataset

    frame = _frame()
    frame["city"] = pd.array(["Lyon", "Oslo"] * 30, dtype="string")
    path = _csv(tmp_path, frame)
    with pytest.raises(ValueError, match=r"Non-numeric feature columns .*\['city'\]"):
        load_study_dataset(str(path), "label")
    X, y = load_study_dataset(str(_csv(tmp_path, _frame())), "label")
    assert X.shape == (60, 2) and X.dtype == np.float64


def test_missing_values_are_reported_before_fitting(tmp_path, capsys, no_fits):
    frame = _frame()
    frame.loc[[3, 7], "b"] = np.nan
    frame.loc[5, "label"] = None
    path = _csv(tmp_path, frame)
    err = _error(
        ["evaluate", "--dataset", str(path), "--target", "label", *FAST], capsys
    )
    assert "Missing values" in err
    assert "'b' (2 rows)" in err and "'label' (1 rows)" in err


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
