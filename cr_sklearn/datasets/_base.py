"""Loaders for the bundled tables and for text datasets in a local data folder."""

import csv
import os
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

_ENV_DATA_HOME = "CR_SKLEARN_DATA"
_DEFAULT_DATA_HOME = Path("~") / "cr_sklearn_data"

_WINE_FEATURES = (
    "fixed_acidity volatile_acidity citric_acid residual_sugar chlorides "
    "free_sulfur_dioxide total_sulfur_dioxide density pH sulphates alcohol"
).split()
_SST5_TARGET_NAMES = "very negative,negative,neutral,positive,very positive".split(",")
_YELP5_TARGET_NAMES = ["1 star", "2 stars", "3 stars", "4 stars", "5 stars"]
_EMBEDDINGS_FILE = "minilm_embeddings.npz"
_EMBEDDINGS_SOURCE = (
    "the embeddings can be computed with sentence-transformers all-MiniLM-L6-v2 "
    "(pip install 'cr_sklearn[text]')."
)


def _package_file(folder, name):
    """Path of a file in ``cr_sklearn/datasets/<folder>/`` (the package is unzipped)."""
    return Path(str(resources.files("cr_sklearn.datasets").joinpath(folder, name)))


def _descr(name):
    return _package_file("descr", name).read_text(encoding="utf-8")


def _read_numeric_csv(name):
    """Read a bundled all-numeric CSV with a header row."""
    path = _package_file("data", name)
    with path.open(encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
        values = np.loadtxt(f, delimiter=",", dtype=np.float64, ndmin=2)
    return header, values, path


def _check_bool(**flags):
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {value!r}.")


def _check_option(name, value, options):
    if value not in options:
        allowed = ", ".join(repr(o) for o in options)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}.")


def _table(caller, values, feature_names, target_column, return_X_y, as_frame, **bunch):
    """The answer for a table whose last column is the int target (``is_red`` int64)."""
    data, target = values[:, :-1], values[:, -1].astype(np.int64)
    frame = None
    if as_frame:
        try:  # pandas is optional: only as_frame=True needs it
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                f"{caller}(as_frame=True) requires pandas, which is not installed. "
                "Install it with `pip install pandas`, or use as_frame=False."
            ) from exc
        frame = pd.DataFrame(data, columns=feature_names)
        if "is_red" in feature_names:
            frame["is_red"] = frame["is_red"].astype(np.int64)
        frame[target_column] = target
        data, target = frame[feature_names], frame[target_column]
    return _answer(
        return_X_y, data, target, frame=frame, feature_names=feature_names, **bunch
    )


def _answer(return_X_y, data, target, **bunch):
    """``(data, target)`` with ``return_X_y``, else a Bunch of them and more."""
    return (data, target) if return_X_y else Bunch(data=data, target=target, **bunch)


def load_pima(*, return_X_y=False, as_frame=False):
    """Load the Pima Indians Diabetes dataset: 768 samples, 8 features, 2 classes.

    Zeros in ``glucose``, ``blood_pressure``, ``skin_thickness``, ``insulin``
    and ``bmi`` are missing values, kept as in the original file (``DESCR``).

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch object.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame, ``target`` a Series and
        ``frame`` a DataFrame of both.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data`` (float64), ``target`` (int64, 1 if the patient tested
        positive), ``feature_names``, ``target_names``, ``frame``, ``DESCR`` and
        ``filename``.
    (data, target) : tuple if ``return_X_y`` is True
        The feature matrix and the target.

    See Also
    --------
    load_wine_quality : Load the Wine Quality dataset (ordinal target).

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn.datasets import load_pima
    >>> pima = load_pima()
    >>> pima.data.shape, pima.target_names.tolist()
    ((768, 8), ['negative', 'positive'])
    >>> np.bincount(pima.target).tolist()
    [500, 268]
    """
    _check_bool(return_X_y=return_X_y, as_frame=as_frame)
    header, values, path = _read_numeric_csv("pima.csv")
    return _table(
        "load_pima",
        values,
        header[:-1],
        "target",
        return_X_y,
        as_frame,
        target_names=np.array(["negative", "positive"]),
        DESCR=_descr("pima.rst"),
        filename=str(path),
    )


def load_wine_quality(*, color="red", return_X_y=False, as_frame=False):
    """Load the Wine Quality dataset (ordinal regression): quality from 3 to 9.

    1599 red and 4898 white wines, 11 features; the files keep the original's
    exact duplicate rows (``DESCR``).

    Parameters
    ----------
    color : {"red", "white", "both"}, default="red"
        Which wines; ``"both"`` stacks red then white and appends an ``is_red``
        column (1 for red).
    return_X_y, as_frame : bool, default=False
        As in :func:`load_pima`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data`` (float64), ``target`` (int64), ``feature_names``,
        ``target_names``, ``frame``, ``DESCR`` and ``filename`` (two for
        ``"both"``).
    (data, target) : tuple if ``return_X_y`` is True
        The feature matrix and the target.

    See Also
    --------
    load_pima : Load the Pima Indians Diabetes dataset (binary target).

    Examples
    --------
    >>> import numpy as np
    >>> from cr_sklearn.datasets import load_wine_quality
    >>> wine = load_wine_quality()
    >>> wine.data.shape, np.unique(wine.target).tolist()
    ((1599, 11), [3, 4, 5, 6, 7, 8])
    >>> X, y = load_wine_quality(color="both", return_X_y=True)
    >>> X.shape, int(X[:, -1].sum())  # the is_red column counts the red wines
    ((6497, 12), 1599)
    """
    _check_option("color", color, ("red", "white", "both"))
    _check_bool(return_X_y=return_X_y, as_frame=as_frame)
    parts, paths = [], []
    for c in ("red", "white") if color == "both" else (color,):
        header, values, path = _read_numeric_csv(f"winequality_{c}.csv")
        if header != [*_WINE_FEATURES, "quality"]:
            raise ValueError(f"Unexpected columns in {path}: {header}.")
        if color == "both":
            is_red = np.full((values.shape[0], 1), float(c == "red"))
            values = np.hstack([values[:, :-1], is_red, values[:, -1:]])
        parts.append(values)
        paths.append(str(path))
    return _table(
        "load_wine_quality",
        np.vstack(parts),
        _WINE_FEATURES + ["is_red"] * (color == "both"),
        "quality",
        return_X_y,
        as_frame,
        target_names=np.array(["quality"]),
        DESCR=_descr("wine_quality.rst"),
        filename=paths if color == "both" else paths[0],
    )


def get_data_home(data_home=None):
    """Return the folder of the non-bundled datasets (read, never created).

    ``data_home``, else the environment variable ``CR_SKLEARN_DATA``, else
    ``~/cr_sklearn_data``; ``~`` is expanded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder to use.

    Returns
    -------
    str
        The path of the data folder.
    """
    if data_home is None:
        data_home = os.environ.get(_ENV_DATA_HOME) or _DEFAULT_DATA_HOME
    return str(Path(os.fspath(data_home)).expanduser())


def _read_text_dataset(dataset, data_home, subset, columns, arrays, layout, source):
    """``(csv path, columns, embeddings())`` of a subset, the embeddings checked."""
    folder = Path(get_data_home(data_home)) / dataset.lower().replace("-", "")
    names = ["X_<subset> (n_samples x 384)", "y_<subset>", *arrays]
    layout += (
        f", and for embeddings=True {_EMBEDDINGS_FILE} with arrays "
        f"{', '.join(names[:-1])} and {names[-1]} aligned with the CSV rows"
    )
    path = folder / f"{subset}.csv"

    def missing(path):
        return FileNotFoundError(
            f"{dataset} data not found: {path} does not exist. cr_sklearn does "
            f"not ship {dataset} because of its licence, so the files must be "
            f"placed in {folder} by hand. Expected layout: {layout}. {source}; "
            f"{_EMBEDDINGS_SOURCE} Pass data_home= or set the {_ENV_DATA_HOME} "
            "environment variable to read them from another folder."
        )

    if not path.is_file():
        raise missing(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        absent = [c for c in columns if c not in (reader.fieldnames or [])]
        if absent:
            raise ValueError(f"{path} lacks the column(s) {absent}.")
        values = {c: [] for c in columns}
        for row in reader:
            for c in columns:
                values[c].append(row[c])
    target = values[columns[1]] = np.asarray(values[columns[1]], dtype=np.int64)

    def embeddings():
        npz_path = folder / _EMBEDDINGS_FILE
        if not npz_path.is_file():
            raise missing(npz_path)
        with np.load(npz_path) as npz:
            X, y = npz[f"X_{subset}"], npz[f"y_{subset}"]
            extras = [npz[name.replace("<subset>", subset)] for name in arrays]
        # Row i of the embeddings must be row i of the CSV: check via the labels.
        if X.shape[0] != target.shape[0] or not np.array_equal(y, target):
            raise ValueError(
                f"{npz_path} does not match the {subset} CSV: the embedding rows "
                "must align with the CSV rows and carry the same labels."
            )
        return X, *extras

    return path, values, embeddings


def load_sst5(data_home=None, *, subset="train", return_X_y=False, embeddings=False):
    """Load SST-5, the fine-grained Stanford Sentiment Treebank (sentences).

    Five ordered classes, 8544/1101/2210 sentences in train/dev/test. Not
    bundled (no licence stated); read from ``<data_home>/sst5/``:
    ``train.csv``, ``dev.csv``, ``test.csv`` (UTF-8, columns ``text,label``,
    label 0 to 4) and, for ``embeddings=True``, ``minilm_embeddings.npz`` with
    arrays ``X_<subset>`` (n_samples x 384, all-MiniLM-L6-v2) and
    ``y_<subset>``, rows aligned with the CSV.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The data folder; see :func:`get_data_home`.
    subset : {"train", "dev", "test"}, default="train"
        Which split to load.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch object.
    embeddings : bool, default=False
        If True, ``data`` is the embedding matrix, not the sentences.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target`` (int64), ``texts``, ``target_names``,
        ``DESCR`` and ``filename`` (the CSV file read).
    (data, target) : tuple if ``return_X_y`` is True
        ``data`` and ``target``.

    Raises
    ------
    FileNotFoundError
        If a file is missing; the message says what to put where.

    See Also
    --------
    load_yelp5 : Load a Yelp review sample rated 1 to 5 stars.
    """
    _check_option("subset", subset, ("train", "dev", "test"))
    _check_bool(return_X_y=return_X_y, embeddings=embeddings)
    path, columns, read_embeddings = _read_text_dataset(
        "SST-5",
        data_home,
        subset,
        ("text", "label"),
        (),
        "train.csv, dev.csv and test.csv with columns text,label (label 0..4)",
        "The sentences and their root labels are the standard SST-5 split of "
        "the Stanford Sentiment Treebank (Socher et al., 2013)",
    )
    texts, target = columns["text"], columns["label"]
    data = read_embeddings()[0] if embeddings else texts
    return _answer(
        return_X_y,
        data,
        target,
        texts=texts,
        target_names=np.array(_SST5_TARGET_NAMES),
        DESCR=_descr("sst5.rst"),
        filename=str(path),
    )


def load_yelp5(
    data_home=None,
    *,
    subset="train",
    balanced=False,
    return_X_y=False,
    embeddings=False,
):
    """Load a sample of Yelp reviews rated from 1 to 5 stars.

    5000 reviews in train and in test, 2000 each balanced. Not bundled (the
    Yelp Open Dataset's terms); read from ``<data_home>/yelp5/``: ``train.csv``,
    ``test.csv`` (UTF-8, quoted, columns
    ``text,stars,business_category,balanced_sample``) and, for
    ``embeddings=True``, ``minilm_embeddings.npz`` with arrays ``X_<subset>``
    (n_samples x 384), ``y_<subset>`` and ``balanced_<subset>``, rows aligned.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The data folder; see :func:`get_data_home`.
    subset : {"train", "test"}, default="train"
        Which split to load.
    balanced : bool, default=False
        If True, keep only the stratified sample (400 reviews per star).
    return_X_y, embeddings : bool, default=False
        As in :func:`load_sst5`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target`` (stars, int64), ``texts``,
        ``business_category``, ``balanced_sample`` (int8), ``target_names``,
        ``DESCR`` and ``filename``.
    (data, target) : tuple if ``return_X_y`` is True
        ``data`` and ``target``, only the balanced sample's with ``balanced``.

    Raises
    ------
    FileNotFoundError
        As in :func:`load_sst5`.

    See Also
    --------
    load_sst5 : Load SST-5 sentences with 5 sentiment classes.
    """
    _check_option("subset", subset, ("train", "test"))
    _check_bool(balanced=balanced, return_X_y=return_X_y, embeddings=embeddings)
    path, columns, read_embeddings = _read_text_dataset(
        "Yelp-5",
        data_home,
        subset,
        ("text", "stars", "business_category", "balanced_sample"),
        ("balanced_<subset>",),
        "train.csv and test.csv with columns "
        "text,stars,business_category,balanced_sample (stars 1..5)",
        "The reviews are a sample of the Yelp Open Dataset (as processed by "
        "Yue et al., 2023), available from Yelp under its dataset terms",
    )
    texts, target = columns["text"], columns["stars"]
    category = columns["business_category"]
    flag = np.asarray(columns["balanced_sample"], dtype=np.int8)
    data = texts
    if embeddings:
        data, flag_npz = read_embeddings()
        if not np.array_equal(flag_npz, flag):
            raise ValueError(
                f"{path.parent / _EMBEDDINGS_FILE} does not match the {subset} CSV: "
                f"balanced_{subset} differs from the balanced_sample column."
            )
    if balanced:
        keep = np.flatnonzero(flag == 1)
        texts = [texts[i] for i in keep]
        category = [category[i] for i in keep]
        target, flag = target[keep], flag[keep]
        data = data[keep] if embeddings else texts
    return _answer(
        return_X_y,
        data,
        target,
        texts=texts,
        business_category=category,
        balanced_sample=flag,
        target_names=np.array(_YELP5_TARGET_NAMES),
        DESCR=_descr("yelp5.rst"),
        filename=str(path),
    )
