"""The repeated-rows diagnostic of the suite (``benchmarks/suite_duplicates.py``)."""

import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

duplicates = load_benchmark("suite_duplicates")


def test_seen_marks_test_rows_equal_to_a_training_row():
    X = pd.DataFrame(
        {
            "a": [1.0, 2.0, 1.0, np.nan, np.nan, 2.0],
            "b": ["x", "y", "x", "z", "z", "x"],
        }
    )
    train, test = np.array([0, 1, 3]), np.array([2, 4, 5])
    # Row 2 repeats row 0; row 4 repeats row 3, missing value included; row 5
    # shares each value with some training row but not the pair.
    np.testing.assert_array_equal(
        duplicates.seen_in_training(X, train, test), [True, True, False]
    )


def test_evaluate_pools_the_splits_by_part(monkeypatch):
    X = pd.DataFrame({"a": [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    table = type("T", (), {"name": "t", "n_rows": 8})()
    monkeypatch.setattr(duplicates._suite_tables, "load_table", lambda t: (X, y))
    splits = [(np.array([0, 2, 4, 6]), np.array([1, 3, 5, 7]))]
    monkeypatch.setattr(duplicates.suite, "make_splits", lambda y, r: splits)

    def fake_split(name, X, y, train, test, seed):
        seen = duplicates.seen_in_training(X, train, test)
        right = np.array([True, False, False, True])
        return name, {"seen": seen, **{m: right for m in duplicates.MODELS}}

    monkeypatch.setattr(duplicates, "_one_split", fake_split)
    rows = duplicates.evaluate([table], repeats=1, n_jobs=1)
    # Only test row 1 (a copy of training row 0) is seen, and it is right.
    assert rows["t"]["seen"] == 25.0
    acc_seen, acc_unseen, acc_all = rows["t"]["CR"]
    assert (acc_seen, acc_all) == (100.0, 50.0)
    assert acc_unseen == pytest.approx(100 / 3)
    text = duplicates.report(rows, "python benchmarks/suite_duplicates.py")
    assert "| t | 8 | 25.0 | 100.0 | 33.3 |" in text
