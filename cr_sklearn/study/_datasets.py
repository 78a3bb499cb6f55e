"""Named datasets and CSV files for studies and the command line."""

import os
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

__all__ = ["DATASETS", "load_study_dataset", "tabular_preprocessor"]

DATASETS = ("pima", "wine-red", "wine-white", "breast-cancer", "digits")

#: A CSV file larger than this is refused before it is read.
MAX_CSV_BYTES = 1 << 30
#: A CSV file with more feature columns than this is refused after its header
#: row: each of a study's fits gives CR a first layer of 64 weights and the
#: stream a direction per column, and a study runs hundreds of fits.
MAX_CSV_COLUMNS = 20_000
#: Values beyond this magnitude overflow float64 when squared.
MAX_MAGNITUDE = 1e150
#: The most categories one-hot encoded per text column; rarer ones share one.
MAX_CATEGORIES = 32


def _some(names, limit=8):
    """A short, bounded listing of ``names`` for a message."""
    names = list(names)
    shown = [repr(n) if len(repr(n)) <= 40 else repr(n)[:37] + "..." for n in names]
    text = ", ".join(shown[:limit])
    if len(names) > limit:
        text += f", ... ({len(names) - limit:,} more)"
    return f"[{text}]"


def _counts(counts, limit=8):
    """``'a' (2 rows), 'b' (1 rows)`` for a Series of counts, bounded."""
    items = list(counts.items())
    text = ", ".join(f"{_some([c])[1:-1]} ({n} rows)" for c, n in items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items) - limit:,} more columns)"
    return text


def load_study_dataset(name, target=None, *, as_frame=False):
    """Load a named dataset or a CSV file as ``(X, y)``.

    Parameters
    ----------
    name : str
        One of ``"pima"``, ``"wine-red"``, ``"wine-white"``,
        ``"breast-cancer"``, ``"digits"``, or the path of a CSV file (UTF-8, a
        header row, at most 1 GiB and 20,000 feature columns).
    target : str, default=None
        The label column of a CSV file (required for files).
    as_frame : bool, default=False
        Return the features as a pandas DataFrame, keeping a CSV file's text
        columns and missing values for :func:`tabular_preprocessor` (without
        it they are errors).

    Returns
    -------
    X : ndarray or DataFrame of shape (n_samples, n_features)
        Features: float64, or a DataFrame with float64 numeric columns.
    y : ndarray of shape (n_samples,)
        Labels.

    Raises
    ------
    ValueError
        Naming the file and columns, for a CSV the checks of :ref:`studies`
        refuse.

    Examples
    --------
    >>> from cr_sklearn.study import load_study_dataset
    >>> X, y = load_study_dataset("pima", as_frame=True)
    >>> X.shape, list(X.columns[:2])
    ((768, 8), ['pregnancies', 'glucose'])
    """
    if name in DATASETS:
        return _named_dataset(name, as_frame)
    try:
        return _load_csv(name, target, as_frame)
    except OSError as exc:  # a name too long, no permission to read, ...
        shown = name if len(name) <= 120 else name[:117] + "..."
        raise ValueError(f"{shown!r} cannot be read ({exc.strerror or exc}).") from None


def _load_csv(name, target, as_frame):
    path = Path(name)
    if not path.exists():
        if "/" in name or os.sep in name or path.suffix:
            raise ValueError(f"No such file: {name!r} (--dataset path of a CSV file).")
        raise ValueError(
            f"Unknown dataset {name!r}: use one of {', '.join(DATASETS)} "
            "or the path of a CSV file."
        )
    if not path.is_file():
        raise ValueError(f"{name!r} is not a file (a CSV file with a header row).")
    if target is None:
        raise ValueError(f"A CSV dataset needs the label column: --target for {name}.")
    frame = _read_csv(path, name, target)
    X = _check_features(frame.drop(columns=[target]), name, as_frame)
    return X, frame[target].to_numpy()


def _named_dataset(name, as_frame):
    from cr_sklearn.datasets import load_pima, load_wine_quality

    if name == "pima":
        return load_pima(return_X_y=True, as_frame=as_frame)
    if name in ("wine-red", "wine-white"):
        color = name.split("-")[1]
        return load_wine_quality(color=color, return_X_y=True, as_frame=as_frame)
    from sklearn.datasets import load_breast_cancer, load_digits

    loader = load_breast_cancer if name == "breast-cancer" else load_digits
    X, y = loader(return_X_y=True, as_frame=as_frame)
    return (X.astype(np.float64), y.to_numpy()) if as_frame else (X, y)


def _read_csv(path, name, target):
    """The CSV file as a DataFrame, after its size and header are checked."""
    import pandas as pd

    size = path.stat().st_size
    if size > MAX_CSV_BYTES:
        raise ValueError(
            f"{name} is {size / 2**30:.1f} GiB, above the 1 GiB a study reads: a "
            "study fits hundreds of models on it; subsample it first."
        )

    def read(**kwargs):
        try:
            return pd.read_csv(path, encoding="utf-8", **kwargs)
        except pd.errors.EmptyDataError:
            raise ValueError(
                f"{name} is empty: a CSV dataset needs a header row and data rows."
            ) from None
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{name} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                f"position {exc.start}): save it as UTF-8 CSV."
            ) from None
        except (pd.errors.ParserError, ValueError) as exc:
            first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise ValueError(f"{name} cannot be read as CSV: {first}") from None

    # The header as written: pandas renames a repeated name ("label.1").
    header = read(header=None, nrows=1, dtype=str, keep_default_na=False)
    names = header.iloc[0].tolist() if len(header) else []
    columns = pd.Series(names, dtype=object)
    repeated = columns[columns.duplicated()].unique().tolist()  # in order seen
    if repeated:
        raise ValueError(
            f"{name} has columns of the same name: {_some(repeated)}. Rename them: "
            "a second copy of the label would be read as a feature."
        )
    if target not in names:
        raise ValueError(
            f"Column {target!r} is not in {name}; its {len(names):,} columns: "
            f"{_some(names)}."
        )
    if len(names) - 1 > MAX_CSV_COLUMNS:
        # Refused before the body is parsed: a study of such a table runs for
        # hours, and reading it alone takes most of a minute.
        raise ValueError(
            f"{name} has {len(names) - 1:,} feature columns, above the "
            f"{MAX_CSV_COLUMNS:,} a study reads: every fit of a study trains a "
            "network with a first layer of 64 weights per column. Select or "
            "project the features first (for example with PCA)."
        )
    frame = read()
    if len(frame) == 0:
        raise ValueError(f"{name} has no rows: only a header row ({target!r} found).")
    unlabelled = int(frame[target].isna().sum())
    if unlabelled:
        raise ValueError(
            f"Missing values in {name}: {target!r} ({unlabelled} rows), the label "
            "column: a study needs a label on every row; drop those rows first."
        )
    return frame


def _column_kinds(X):
    """``(is_numeric, numeric, text)``: a flag per column, and the names of each kind.

    By position, once per column (a table may have 100,000 of them);
    ``is_numeric_dtype`` understands pandas' own (string) dtypes.
    """
    import pandas as pd

    is_numeric = [pd.api.types.is_numeric_dtype(dtype) for dtype in X.dtypes]
    numeric = [c for c, keep in zip(X.columns, is_numeric, strict=True) if keep]
    text = [c for c, keep in zip(X.columns, is_numeric, strict=True) if not keep]
    return is_numeric, numeric, text


def _check_features(X, name, as_frame):
    import pandas as pd

    is_numeric, numeric, text = _column_kinds(X)
    if text and not as_frame:
        raise ValueError(
            f"Non-numeric feature columns in {name}: {_some(text)}; encode them first."
        )
    values = X[numeric].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        infinite = np.isinf(values).any(axis=0)
        huge = (np.abs(values) > MAX_MAGNITUDE).any(axis=0) & ~infinite
    if infinite.any():
        columns = [c for c, bad in zip(numeric, infinite, strict=True) if bad]
        raise ValueError(
            f"Infinite values in {name}: {_some(columns)}. Replace them (by a "
            "missing value, say) first."
        )
    if huge.any():
        columns = [c for c, bad in zip(numeric, huge, strict=True) if bad]
        top = float(np.nanmax(np.abs(values[:, huge])))
        raise ValueError(
            f"Values too large to study in {name}: {_some(columns)} (up to {top:.3g} "
            f"in magnitude, beyond {MAX_MAGNITUDE:g}: their squares overflow "
            "float64). Rescale these columns (a logarithm, say) first."
        )
    missing = X.isna().sum()
    missing = missing[missing > 0]
    if len(missing) and not as_frame:
        raise ValueError(
            f"Missing values in {name}: {_counts(missing)}. Impute or drop them first."
        )
    if not as_frame:
        return values
    # One float64 block and the text columns, back in the table's order (not a
    # copy assigned column by column).
    mask = np.asarray(is_numeric, dtype=bool)
    block = pd.DataFrame(values, index=X.index, columns=numeric)
    out = pd.concat([block, X.iloc[:, np.flatnonzero(~mask)]], axis=1)
    out = out.iloc[:, np.argsort(np.r_[np.flatnonzero(mask), np.flatnonzero(~mask)])]
    out.columns = X.columns
    return out


def tabular_preprocessor(X, *, max_categories=MAX_CATEGORIES):
    """The preprocessing a table's text columns and missing values need.

    A :class:`~sklearn.compose.ColumnTransformer` to fit inside each fold: text
    one-hot encoded, missing numbers imputed (median and indicator).

    Parameters
    ----------
    X : pandas.DataFrame
        The features, as :func:`load_study_dataset` returns them with
        ``as_frame=True``.
    max_categories : int, default=32
        The most one-hot columns of one text column.

    Returns
    -------
    preprocessor : ColumnTransformer or None
        Unfitted; None when every column is numeric and complete.
    description : list of str
        What it does, one sentence per kind of column, naming the columns.

    Examples
    --------
    >>> import pandas as pd
    >>> from cr_sklearn.study import tabular_preprocessor
    >>> X = pd.DataFrame({"size": [1.0, None, 3.0], "city": ["a", "b", "a"]})
    >>> preprocessor, description = tabular_preprocessor(X)
    >>> list(preprocessor.fit_transform(X).columns)
    ['size', 'missingindicator_size', 'city_a', 'city_b']
    >>> description[0]
    "one-hot encoded 1 text column: ['city']"
    """
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"tabular_preprocessor needs a pandas DataFrame, got {type(X).__name__}."
        )
    if not isinstance(max_categories, int) or max_categories < 2:
        raise ValueError(f"max_categories must be an int >= 2, got {max_categories!r}.")
    is_numeric, numeric, text = _column_kinds(X)
    missing = X[numeric].isna().sum()
    missing = missing[missing > 0]
    if not text and not len(missing):
        return None, []
    description, transformers = [], []
    if numeric:
        imputer = SimpleImputer(strategy="median", add_indicator=True)
        step = imputer if len(missing) else "passthrough"
        # By position: scikit-learn looks each name up in a list (quadratic).
        columns = np.flatnonzero(is_numeric)
        transformers.append(("numeric", step, columns))
    if text:
        encoder = OneHotEncoder(
            handle_unknown="infrequent_if_exist",
            max_categories=max_categories,
            sparse_output=False,
        )
        # One kind of missing value: the encoder cannot sort pd.NA.
        to_object = FunctionTransformer(_as_object, feature_names_out="one-to-one")
        columns = np.flatnonzero(np.logical_not(is_numeric))
        transformers.append(("text", make_pipeline(to_object, encoder), columns))
        plural = "s" if len(text) > 1 else ""
        description.append(
            f"one-hot encoded {len(text)} text column{plural}: {_some(text)}"
        )
        wide = [c for c in text if X[c].nunique(dropna=True) > max_categories]
        if wide:
            description.append(
                f"kept the {max_categories - 1} most frequent values of "
                f"{_some(wide)}, the rest sharing one column"
            )
        numbers = [c for c in text if _mostly_numbers(X[c])]
        if numbers:
            description.append(
                f"note: {_some(numbers)} hold mostly numbers; their other values "
                "(missing-value codes such as '?', say) made them text columns"
            )
        text_missing = X[text].isna().sum()
        text_missing = text_missing[text_missing > 0]
        if len(text_missing):
            description.append(
                "missing text values are a category of their own: "
                f"{_counts(text_missing)}"
            )
    if len(missing):
        description.append(
            "imputed missing numbers with the column's median, with an indicator "
            f"column: {_counts(missing)}"
        )
    preprocessor = ColumnTransformer(transformers, verbose_feature_names_out=False)
    return preprocessor.set_output(transform="pandas"), description


def _mostly_numbers(column):
    import pandas as pd

    parsed = pd.to_numeric(column.dropna().astype(str), errors="coerce")
    return bool(parsed.notna().mean() >= 0.9)  # NaN, so False, when all are missing


def _as_object(X):
    """Text columns as objects, every missing value as NaN (a category)."""
    out = X.astype(object)
    return out.where(out.notna(), np.nan)
