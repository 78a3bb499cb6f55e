"""The study table loader: wide CSV files load in time linear in their columns."""

import time

import numpy as np
import pandas as pd
import pytest

from cr_sklearn.study import load_study_dataset, tabular_preprocessor


def _wide_csv(path, n_columns, n_rows=30):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.normal(size=(n_rows, n_columns)).round(3),
        columns=[f"c{i}" for i in range(n_columns)],
    )
    frame["c1"] = ["a", "b", "c"] * (n_rows // 3)  # a text column among them
    frame["label"] = np.arange(n_rows) % 2
    frame.to_csv(path, index=False)
    return frame


def _load_in_time(path, frame, seconds):
    start = time.perf_counter()
    X, y = load_study_dataset(str(path), "label", as_frame=True)
    elapsed = time.perf_counter() - start
    assert list(X.columns) == list(frame.columns[:-1])
    assert X.dtypes.iloc[0] == np.float64 and X.dtypes.iloc[1] != np.float64
    np.testing.assert_array_equal(X.iloc[:, 2].to_numpy(), frame.iloc[:, 2].to_numpy())
    np.testing.assert_array_equal(y, frame["label"].to_numpy())
    assert elapsed < seconds, f"{elapsed:.1f} s"


def test_a_table_keeps_its_column_order_and_text_columns(tmp_path):
    frame = pd.DataFrame(
        {"t": ["x", "y", "x", "z"], "a": [1, 2, 3, 4], "u": ["p", None, "p", "q"]}
    )
    frame["b"], frame["label"] = [0.5, None, 1.5, 2.0], [0, 1, 0, 1]
    frame.to_csv(tmp_path / "mixed.csv", index=False)
    X, _ = load_study_dataset(str(tmp_path / "mixed.csv"), "label", as_frame=True)
    assert list(X.columns) == ["t", "a", "u", "b"]
    assert list(X.dtypes[["a", "b"]]) == [np.float64, np.float64]
    assert list(X["t"]) == ["x", "y", "x", "z"] and X["u"].isna().sum() == 1
    np.testing.assert_array_equal(X["b"].isna(), [False, True, False, False])


def test_a_wide_table_loads_in_time_linear_in_its_columns(tmp_path):
    # 30 x 20,000: 50 s when each column rebuilt the set of numeric ones and
    # the numeric block was assigned column by column (quadratic), ~4 s now.
    frame = _wide_csv(tmp_path / "wide.csv", 20_000)
    _load_in_time(tmp_path / "wide.csv", frame, seconds=25)


def _numbers_csv(path, n_columns, n_rows=30):
    """A CSV of small integers, written fast (no DataFrame of its size)."""
    rng = np.random.default_rng(0)
    header = ",".join([*(f"c{i}" for i in range(n_columns)), "label"])
    rows = [
        ",".join(map(str, [*rng.integers(0, 100, n_columns), i % 2]))
        for i in range(n_rows)
    ]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")


def test_a_table_of_100000_columns_is_refused_after_its_header(tmp_path):
    _numbers_csv(tmp_path / "wider.csv", 100_000)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"100,000 feature columns, above the 20,000"):
        load_study_dataset(str(tmp_path / "wider.csv"), "label")
    # Parsing the body alone took 18-20 s; the refusal reads the header only.
    assert time.perf_counter() - start < 10


def test_a_table_of_20000_columns_is_read(tmp_path):
    _numbers_csv(tmp_path / "widest_read.csv", 20_000, n_rows=4)
    X, y = load_study_dataset(str(tmp_path / "widest_read.csv"), "label")
    assert X.shape == (4, 20_000) and list(y) == [0, 1, 0, 1]


def test_the_preprocessor_of_a_wide_table_runs_in_time_linear_in_its_columns():
    # 30 x 100,000: 72 s when scikit-learn looked each column's name up in a
    # list (quadratic); the columns are now given by position.
    rng = np.random.default_rng(0)
    names = [f"c{i}" for i in range(100_000)]
    X = pd.DataFrame(rng.normal(size=(30, len(names))), columns=names)
    X = pd.concat([X, pd.DataFrame({"city": ["a", "b", None] * 10})], axis=1)
    preprocessor, description = tabular_preprocessor(X)
    start = time.perf_counter()
    out = preprocessor.fit_transform(X)
    elapsed = time.perf_counter() - start
    assert list(out.columns[:3]) == names[:3] and out.shape == (30, 100_003)
    assert list(out.columns[-3:]) == ["city_a", "city_b", "city_nan"]
    assert description == ["one-hot encoded 1 text column: ['city']", *description[1:]]
    assert elapsed < 20, f"{elapsed:.1f} s"
