"""Tests for the bundled tables and the local text-dataset loaders."""

import doctest
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from cr_sklearn.datasets import (
    _base,
    get_data_home,
    load_pima,
    load_sst5,
    load_wine_quality,
    load_yelp5,
)

# sha256 of the bundled files, as recorded where the data was prepared.
BUNDLED_SHA256 = {
    "pima.csv": "71afe3b0a8550509acfd6ee4f2d867b3d2954dd430e644b44f5708a06fd544cc",
    "winequality_red.csv": (
        "0a217383ca4f6abe5f4df1bfa741de54979537957374d8a4c0b44960db1be840"
    ),
    "winequality_white.csv": (
        "3b57e37fcdf48e625a7a93b5ec395c17ec714ac7d467d166b3a7c42c7add46f2"
    ),
}

WINE_FEATURES = [
    "fixed_acidity",
    "volatile_acidity",
    "citric_acid",
    "residual_sugar",
    "chlorides",
    "free_sulfur_dioxide",
    "total_sulfur_dioxide",
    "density",
    "pH",
    "sulphates",
    "alcohol",
]
WINE_COUNTS = {
    "red": {3: 10, 4: 53, 5: 681, 6: 638, 7: 199, 8: 18},
    "white": {3: 20, 4: 163, 5: 1457, 6: 2198, 7: 880, 8: 175, 9: 5},
}


def _counts(y):
    values, counts = np.unique(y, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist(), strict=True))


# --------------------------------------------------------------------------
# Bundled files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLED_SHA256))
def test_bundled_file_sha256(name):
    path = _base._package_file("data", name)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == BUNDLED_SHA256[name]


@pytest.mark.parametrize(
    "name", ["pima.rst", "wine_quality.rst", "sst5.rst", "yelp5.rst"]
)
def test_descriptions_are_shipped(name):
    text = _base._descr(name)
    assert "License" in text
    assert "References" in text


# --------------------------------------------------------------------------
# Pima
# --------------------------------------------------------------------------


def test_load_pima_bunch():
    pima = load_pima()
    assert set(pima) == {
        "data",
        "target",
        "frame",
        "target_names",
        "DESCR",
        "feature_names",
        "filename",
    }
    assert pima.data.shape == (768, 8)
    assert pima.data.dtype == np.float64
    assert pima.target.shape == (768,)
    assert pima.target.dtype == np.int64
    assert _counts(pima.target) == {0: 500, 1: 268}
    assert pima.feature_names == [
        "pregnancies",
        "glucose",
        "blood_pressure",
        "skin_thickness",
        "insulin",
        "bmi",
        "diabetes_pedigree",
        "age",
    ]
    assert pima.target_names.tolist() == ["negative", "positive"]
    assert pima.frame is None
    assert "Pima" in pima.DESCR
    assert Path(pima.filename).name == "pima.csv"
    assert Path(pima.filename).is_file()
    # First row of the original file.
    np.testing.assert_array_equal(pima.data[0], [6, 148, 72, 35, 0, 33.6, 0.627, 50])
    assert pima.target[0] == 1


def test_load_pima_return_X_y():
    X, y = load_pima(return_X_y=True)
    pima = load_pima()
    np.testing.assert_array_equal(X, pima.data)
    np.testing.assert_array_equal(y, pima.target)


def test_load_pima_as_frame():
    pd = pytest.importorskip("pandas")
    pima = load_pima(as_frame=True)
    assert isinstance(pima.frame, pd.DataFrame)
    assert pima.frame.shape == (768, 9)
    assert list(pima.frame.columns) == [*pima.feature_names, "target"]
    assert isinstance(pima.data, pd.DataFrame)
    assert list(pima.data.columns) == pima.feature_names
    assert isinstance(pima.target, pd.Series)
    assert pima.target.name == "target"
    assert pima.target.dtype == np.int64
    assert (pima.data.dtypes == np.float64).all()
    X, y = load_pima(return_X_y=True, as_frame=True)
    pd.testing.assert_frame_equal(X, pima.data)
    pd.testing.assert_series_equal(y, pima.target)
    np.testing.assert_array_equal(X.to_numpy(), load_pima().data)


@pytest.mark.parametrize("loader", [load_pima, load_wine_quality])
def test_as_frame_without_pandas(loader, monkeypatch):
    # A None entry in sys.modules makes ``import pandas`` raise ImportError.
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="requires pandas"):
        loader(as_frame=True)
    # Plain arrays still load.
    assert loader().frame is None


@pytest.mark.parametrize("loader", [load_pima, load_wine_quality])
@pytest.mark.parametrize("param", ["return_X_y", "as_frame"])
def test_bool_parameters_are_checked(loader, param):
    with pytest.raises(TypeError, match=param):
        loader(**{param: "yes"})


# --------------------------------------------------------------------------
# Wine Quality
# --------------------------------------------------------------------------


@pytest.mark.parametrize("color", ["red", "white"])
def test_load_wine_quality_single_color(color):
    wine = load_wine_quality(color=color)
    n = sum(WINE_COUNTS[color].values())
    assert wine.data.shape == (n, 11)
    assert wine.data.dtype == np.float64
    assert wine.target.dtype == np.int64
    assert _counts(wine.target) == WINE_COUNTS[color]
    assert wine.feature_names == WINE_FEATURES
    assert wine.target_names.tolist() == ["quality"]
    assert wine.frame is None
    assert "Cortez" in wine.DESCR
    assert "CC BY 4.0" in wine.DESCR
    assert Path(wine.filename).name == f"winequality_{color}.csv"


def test_load_wine_quality_default_is_red():
    X, y = load_wine_quality(return_X_y=True)
    X_red, y_red = load_wine_quality(color="red", return_X_y=True)
    np.testing.assert_array_equal(X, X_red)
    np.testing.assert_array_equal(y, y_red)
    assert X.shape == (1599, 11)
    # First row of the original red file.
    np.testing.assert_allclose(
        X[0], [7.4, 0.7, 0.0, 1.9, 0.076, 11.0, 34.0, 0.9978, 3.51, 0.56, 9.4]
    )
    assert y[0] == 5


def test_load_wine_quality_both():
    wine = load_wine_quality(color="both")
    red = load_wine_quality(color="red")
    white = load_wine_quality(color="white")
    assert wine.data.shape == (1599 + 4898, 12)
    assert wine.feature_names == [*WINE_FEATURES, "is_red"]
    # Red rows first, then white; is_red is the last column.
    np.testing.assert_array_equal(wine.data[:1599, :-1], red.data)
    np.testing.assert_array_equal(wine.data[1599:, :-1], white.data)
    np.testing.assert_array_equal(wine.data[:1599, -1], 1.0)
    np.testing.assert_array_equal(wine.data[1599:, -1], 0.0)
    np.testing.assert_array_equal(
        wine.target, np.concatenate([red.target, white.target])
    )
    assert [Path(f).name for f in wine.filename] == [
        "winequality_red.csv",
        "winequality_white.csv",
    ]


def test_load_wine_quality_as_frame():
    pd = pytest.importorskip("pandas")
    wine = load_wine_quality(color="both", as_frame=True)
    assert wine.frame.shape == (6497, 13)
    assert list(wine.frame.columns) == [*WINE_FEATURES, "is_red", "quality"]
    assert list(wine.data.columns) == [*WINE_FEATURES, "is_red"]
    assert wine.data["is_red"].dtype == np.int64
    assert int(wine.data["is_red"].sum()) == 1599
    assert isinstance(wine.target, pd.Series)
    assert wine.target.name == "quality"
    assert wine.target.dtype == np.int64

    X, y = load_wine_quality(color="white", as_frame=True, return_X_y=True)
    assert list(X.columns) == WINE_FEATURES
    assert _counts(y) == WINE_COUNTS["white"]


def test_load_wine_quality_bad_color():
    with pytest.raises(ValueError, match="color must be one of"):
        load_wine_quality(color="rose")


# --------------------------------------------------------------------------
# Data folder
# --------------------------------------------------------------------------


def test_get_data_home(monkeypatch, tmp_path):
    monkeypatch.setenv("CR_SKLEARN_DATA", str(tmp_path / "env"))
    assert get_data_home(tmp_path / "given") == str(tmp_path / "given")
    assert get_data_home() == str(tmp_path / "env")

    monkeypatch.delenv("CR_SKLEARN_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / "cr_sklearn_data")
    assert get_data_home("~/elsewhere") == str(tmp_path / "elsewhere")
    # Reading never creates the folder.
    assert not (tmp_path / "cr_sklearn_data").exists()


@pytest.mark.parametrize("loader, folder", [(load_sst5, "sst5"), (load_yelp5, "yelp5")])
def test_missing_text_data_raises(loader, folder, tmp_path):
    with pytest.raises(FileNotFoundError) as excinfo:
        loader(tmp_path)
    message = str(excinfo.value)
    assert str(tmp_path / folder / "train.csv") in message
    assert "CR_SKLEARN_DATA" in message
    assert "Expected layout" in message
    assert "minilm_embeddings.npz" in message


@pytest.mark.parametrize(
    "loader, kwargs",
    [
        (load_sst5, {"subset": "validation"}),
        (load_yelp5, {"subset": "dev"}),
        (load_sst5, {"embeddings": 1}),
        (load_yelp5, {"balanced": "yes"}),
    ],
)
def test_text_loader_parameters_are_checked(loader, kwargs, tmp_path):
    with pytest.raises((ValueError, TypeError), match=next(iter(kwargs))):
        loader(tmp_path, **kwargs)


def _write_yelp(folder, rows, *, npz_labels=None):
    """Write a tiny yelp5 folder: rows of (text, stars, category, balanced)."""
    import csv

    folder.mkdir(parents=True)
    with open(folder / "train.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "stars", "business_category", "balanced_sample"])
        writer.writerows(rows)
    stars = np.array([r[1] for r in rows], dtype=np.int64)
    np.savez(
        folder / "minilm_embeddings.npz",
        X_train=np.arange(len(rows) * 3, dtype=np.float32).reshape(len(rows), 3),
        y_train=stars if npz_labels is None else np.asarray(npz_labels),
        balanced_train=np.array([r[3] for r in rows], dtype=np.int8),
    )


def test_load_yelp5_reads_quoted_newlines(tmp_path, monkeypatch):
    rows = [
        ('Great food.\nWould come back, "really".', 5, "Restaurants", 1),
        ("Meh", 2, "Shopping", 0),
        ("Line one\r\nline two", 1, "Restaurants", 1),
    ]
    _write_yelp(tmp_path / "yelp5", rows)
    # Read through the environment variable, as a user would set it.
    monkeypatch.setenv("CR_SKLEARN_DATA", str(tmp_path))

    yelp = load_yelp5()
    assert yelp.data == [r[0] for r in rows]
    assert yelp.texts == yelp.data
    assert yelp.target.tolist() == [5, 2, 1]
    assert yelp.target.dtype == np.int64
    assert yelp.business_category == ["Restaurants", "Shopping", "Restaurants"]
    assert yelp.balanced_sample.tolist() == [1, 0, 1]

    balanced = load_yelp5(balanced=True, embeddings=True)
    np.testing.assert_array_equal(
        balanced.data, np.array([[0, 1, 2], [6, 7, 8]], dtype=np.float32)
    )
    assert balanced.texts == [rows[0][0], rows[2][0]]
    assert balanced.target.tolist() == [5, 1]

    X, y = load_yelp5(balanced=True, return_X_y=True)
    assert X == [rows[0][0], rows[2][0]]
    assert y.tolist() == [5, 1]


def test_misaligned_embeddings_raise(tmp_path):
    rows = [("a", 1, "Restaurants", 1), ("b", 2, "Restaurants", 1)]
    _write_yelp(tmp_path / "yelp5", rows, npz_labels=[2, 1])
    with pytest.raises(ValueError, match="align"):
        load_yelp5(tmp_path, embeddings=True)


def test_missing_embeddings_raise(tmp_path):
    folder = tmp_path / "sst5"
    folder.mkdir()
    (folder / "train.csv").write_text("text,label\nfine,2\n", encoding="utf-8")
    sst = load_sst5(tmp_path)
    assert sst.data == ["fine"]
    assert sst.target.tolist() == [2]
    with pytest.raises(FileNotFoundError, match="minilm_embeddings.npz"):
        load_sst5(tmp_path, embeddings=True)


# --------------------------------------------------------------------------
# SST-5 and Yelp from ../shared/data (skipped without it, see conftest.py)
# --------------------------------------------------------------------------

SST5_COUNTS = {
    "train": [1092, 2218, 1624, 2322, 1288],
    "dev": [139, 289, 229, 279, 165],
    "test": [279, 633, 389, 510, 399],
}


@pytest.mark.shared_data("sst5")
@pytest.mark.parametrize("subset", sorted(SST5_COUNTS))
def test_load_sst5_shared(shared_data_home, subset):
    sst = load_sst5(shared_data_home, subset=subset)
    n = sum(SST5_COUNTS[subset])
    assert isinstance(sst.data, list)
    assert len(sst.data) == n
    assert all(isinstance(t, str) and t for t in sst.data)
    assert sst.texts == sst.data
    assert sst.target.dtype == np.int64
    assert np.bincount(sst.target).tolist() == SST5_COUNTS[subset]
    assert sst.target_names.tolist() == [
        "very negative",
        "negative",
        "neutral",
        "positive",
        "very positive",
    ]
    assert Path(sst.filename).name == f"{subset}.csv"


@pytest.mark.shared_data("sst5")
def test_load_sst5_shared_embeddings(shared_data_home):
    sst = load_sst5(shared_data_home, embeddings=True)
    assert sst.data.shape == (8544, 384)
    assert sst.data.dtype == np.float32
    assert len(sst.texts) == 8544
    assert sst.target.shape == (8544,)
    # MiniLM embeddings are L2-normalised.
    np.testing.assert_allclose(np.linalg.norm(sst.data, axis=1), 1.0, atol=1e-5)
    assert sst.texts[0].startswith("The Rock is destined")

    X, y = load_sst5(shared_data_home, subset="test", embeddings=True, return_X_y=True)
    assert X.shape == (2210, 384)
    assert y.shape == (2210,)


@pytest.mark.shared_data("yelp5")
@pytest.mark.parametrize(
    "subset, counts",
    [("train", [750, 435, 516, 1111, 2188]), ("test", [722, 419, 545, 1073, 2241])],
)
def test_load_yelp5_shared(shared_data_home, subset, counts):
    yelp = load_yelp5(shared_data_home, subset=subset)
    assert len(yelp.data) == 5000
    assert yelp.texts == yelp.data
    assert len(yelp.business_category) == 5000
    assert np.bincount(yelp.target, minlength=6)[1:].tolist() == counts
    assert int(yelp.balanced_sample.sum()) == 2000

    balanced = load_yelp5(shared_data_home, subset=subset, balanced=True)
    assert len(balanced.data) == 2000
    assert np.bincount(balanced.target, minlength=6)[1:].tolist() == [400] * 5
    assert set(balanced.balanced_sample.tolist()) == {1}


@pytest.mark.shared_data("yelp5")
def test_load_yelp5_shared_embeddings(shared_data_home):
    full = load_yelp5(shared_data_home, subset="test", embeddings=True)
    assert full.data.shape == (5000, 384)
    assert full.data.dtype == np.float32
    assert len(full.texts) == 5000

    balanced = load_yelp5(
        shared_data_home, subset="test", embeddings=True, balanced=True
    )
    assert balanced.data.shape == (2000, 384)
    assert len(balanced.texts) == 2000
    mask = full.balanced_sample == 1
    np.testing.assert_array_equal(balanced.data, full.data[mask])
    np.testing.assert_array_equal(balanced.target, full.target[mask])
    assert balanced.texts == [t for t, m in zip(full.texts, mask, strict=True) if m]


# --------------------------------------------------------------------------
# Docstring examples
# --------------------------------------------------------------------------


@pytest.mark.docs
def test_docstring_examples_run():
    result = doctest.testmod(_base, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
