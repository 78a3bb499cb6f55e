"""A folder of finished fits, one small JSON file each, so that a study resumes."""

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

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


# A default object repr's address differs between processes.
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


def _canonical(value):
    """A text of ``value`` that is the same in every process."""
    if hasattr(value, "get_params") and not isinstance(value, type):
        # Its parameters are listed on their own by get_params(deep=True).
        return f"{type(value).__module__}.{type(value).__qualname__}"
    if isinstance(value, np.ndarray):
        return f"array{value.shape}:{array_digest(value.ravel().view(np.uint8))}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted((str(k), _canonical(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return _ADDRESS.sub("", repr(value))


def estimator_text(estimator):
    """The estimator's class and every parameter, nested ones included.

    Not ``repr``: scikit-learn shortens a long one with an ellipsis, and two
    estimators that differ inside it would share a key.
    """
    params = estimator.get_params(deep=True)
    lines = [_canonical(estimator)]
    lines += [f"{k}={_canonical(v)}" for k, v in sorted(params.items())]
    return "\n".join(lines)


def _canonical_scorer(scorer):
    return "estimator.score" if scorer is None else _ADDRESS.sub("", repr(scorer))


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
        "scorers": {name: _canonical_scorer(s) for name, s in scorers.items()},
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
