"""A folder of finished fits, one small JSON file each, so that a study resumes."""

import contextlib
import hashlib
import json
import os
from pathlib import Path

import numpy as np
from sklearn import config_context

__all__ = []

# Bumped when the stored fields change: older files are then not read.
_VERSION = 1


def array_digest(*arrays):
    """A short hex digest of index arrays (the rows of a split)."""
    h = hashlib.blake2b(digest_size=12)
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.int64)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def table_digest(X, y, groups):
    """A digest of a table's content (values, column names, dtypes)."""
    import joblib

    return joblib.hash((X, y, groups), hash_name="sha1")[:24]


def estimator_text(estimator):
    """The estimator with every parameter (not only the changed ones)."""
    with config_context(print_changed_only=False):
        return repr(estimator)


def fit_key(table, model, estimator, split, fraction, train, test, scorers):
    """The cache key of one fit: what the fit and its scores depend on."""
    parts = {
        "version": _VERSION,
        "table": table,
        "model": model,
        "estimator": estimator_text(estimator),
        "split": int(split),
        "fraction": float(fraction),
        "rows": array_digest(train, test),
        "scorers": {name: repr(s) for name, s in scorers.items()},
    }
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class FitCache:
    """Finished fits in ``folder/<table digest>/<key>.json``, written atomically.

    Only the process that runs the study (the driver) reads and writes it:
    workers return their results, so any joblib backend (Dask included) works.
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise ValueError(f"cache {os.fspath(folder)!r} exists and is not a folder.")

    def _path(self, table, key):
        return self.folder / table / f"{key}.json"

    def get(self, table, key):
        """The stored fit or None (a missing, partial or older file)."""
        try:
            with open(self._path(table, key), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return None
        return data

    def put(self, table, key, data):
        """Store ``data`` (a JSON-able dict): a temporary file renamed into place."""
        path = self._path(table, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({**data, "version": _VERSION}, f, allow_nan=True)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def __len__(self):
        """The number of stored fits."""
        if not self.folder.is_dir():
            return 0
        return sum(1 for _ in self.folder.glob("*/*.json"))
