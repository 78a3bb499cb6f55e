"""Named datasets for studies and the command line."""

import os
from pathlib import Path

import numpy as np

__all__ = ["DATASETS", "load_study_dataset"]

DATASETS = ("pima", "wine-red", "wine-white", "breast-cancer", "digits")


def load_study_dataset(name, target=None):
    """Load a named dataset or a CSV file as ``(X, y)``.

    Parameters
    ----------
    name : str
        One of ``"pima"``, ``"wine-red"``, ``"wine-white"``,
        ``"breast-cancer"``, ``"digits"``, or the path of a CSV file with a
        header row.
    target : str, default=None
        The label column of a CSV file (required for files).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features (float64).
    y : ndarray of shape (n_samples,)
        Labels.

    Raises
    ------
    ValueError
        For an unknown name, a path that does not exist, a CSV file that is
        empty or has no data rows, without the ``target`` column, with
        non-numeric feature columns or with missing values (naming the
        columns).
    """
    if name == "pima":
        from cr_sklearn.datasets import load_pima

        return load_pima(return_X_y=True)
    if name in ("wine-red", "wine-white"):
        from cr_sklearn.datasets import load_wine_quality

        return load_wine_quality(color=name.split("-")[1], return_X_y=True)
    if name == "breast-cancer":
        from sklearn.datasets import load_breast_cancer

        return load_breast_cancer(return_X_y=True)
    if name == "digits":
        from sklearn.datasets import load_digits

        return load_digits(return_X_y=True)
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
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(
            f"{name} is empty: a CSV dataset needs a header row and data rows."
        ) from None
    if target not in frame.columns:
        raise ValueError(
            f"Column {target!r} is not in {name}; columns: {list(frame.columns)}."
        )
    if len(frame) == 0:
        raise ValueError(f"{name} has no rows: only a header row ({target!r} found).")
    X = frame.drop(columns=[target])
    # is_numeric_dtype understands pandas' own dtypes (pandas 3 reads text as
    # a string dtype numpy cannot interpret).
    bad = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c].dtype)]
    if bad:
        raise ValueError(
            f"Non-numeric feature columns in {name}: {bad}; encode them first."
        )
    missing = frame.isna().sum()
    missing = missing[missing > 0]
    if len(missing):
        counts = ", ".join(f"{c!r} ({n} rows)" for c, n in missing.items())
        raise ValueError(
            f"Missing values in {name}: {counts}. Impute or drop them first."
        )
    return X.to_numpy(dtype=np.float64), frame[target].to_numpy()
