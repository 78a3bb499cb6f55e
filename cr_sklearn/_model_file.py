"""The model file (private): a safetensors file (an 8-byte header length, a JSON
header of the tensor table and string metadata, the raw tensor bytes) read
without trust by a bounded reader, and a JSON codec of plain data that rejects
anything it did not produce. What a file must contain: :mod:`._state`."""

import hashlib
import io
import json
import math
import numbers
import os
import re
import stat
import struct
from pathlib import Path

import numpy as np
import torch

from ._utils import is_integer

__all__ = []

# -- the loader's bounds ---------------------------------------------------
# The JSON header of the files save_model writes: about 40 KB for a small model,
# 1.2 MB for 10,000 named features, 1,000 string classes and 1,000 epochs;
# safetensors' own cap (100 MB) would let a small file cost gigabytes of parsing.
MAX_HEADER_BYTES = 4 * 2**20
# Parsed JSON costs more memory than its text (see parse_cost): the large
# header above about 8 MiB, a header of "[],[],..." 45 times its size.
MAX_PARSE_COST = 32 * 2**20
_MAX_DEPTH = 32  # save_model writes about 10 levels of nesting
_MAX_TENSORS = 2048  # a few per layer: bounds the modules a file can build
# Fixed-width string arrays (classes_): 4 bytes a character a row.
_MAX_STRING_ARRAY_BYTES = 4 * 2**20
_FINITE_CHUNK = 2**20  # rows checked for finiteness at a time
_SCALAR_KINDS = "biufU"

# safetensors dtype names -> little-endian numpy dtypes and torch dtypes.
_DTYPES = {
    "F64": ("<f8", torch.float64),
    "F32": ("<f4", torch.float32),
    "F16": ("<f2", torch.float16),
    "I64": ("<i8", torch.int64),
    "I32": ("<i4", torch.int32),
    "I16": ("<i2", torch.int16),
    "I8": ("i1", torch.int8),
    "U8": ("u1", torch.uint8),
    "BOOL": ("?", torch.bool),
}
TENSOR_DTYPES = {name: np.dtype(spec) for name, (spec, _) in _DTYPES.items()}
NUMPY_DTYPES = {dtype: np.dtype(spec) for spec, dtype in _DTYPES.values()}

# Array dtypes an encoded attribute may declare: bool, sized ints and
# floats, fixed-width strings, and object arrays of scalars.
_ARRAY_DTYPE = re.compile(r"^[<>|=](b1|i[1248]|u[1248]|f[248]|U[1-9][0-9]{0,6})$")
# The JSON types the values of each array kind must have (no coercion: a
# string is never read as a number, nor a number as a string).
_JSON_TYPES = {"b": (bool,), "i": (int,), "u": (int,), "f": (int, float), "U": (str,)}


class FormatError(ValueError):
    """A file that is not a valid, untampered cr_sklearn model file."""


def bad(name, reason):
    """The error for the file ``name``, with the ``reason`` it is refused."""
    return FormatError(f"{name!r} is not a valid cr_sklearn model file: {reason}")


def is_real(value):
    """Whether ``value`` is a real number, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# -- a JSON codec for plain data only ----------------------------------------
def encode(value, where):
    """Plain data -> JSON-able; anything else is a TypeError naming ``where``."""
    if value is None or isinstance(value, (bool, str)) or type(value) in (int, float):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in _SCALAR_KINDS:
        return {"__type__": "scalar", "dtype": value.dtype.str, "value": value.item()}
    if isinstance(value, tuple):
        return {"__type__": "tuple", "items": [encode(v, where) for v in value]}
    if isinstance(value, list):
        return [encode(v, where) for v in value]
    if isinstance(value, dict):
        items = [[encode(k, where), encode(v, where)] for k, v in value.items()]
        return {"__type__": "dict", "items": items}
    if isinstance(value, np.ndarray) and value.dtype.kind in _SCALAR_KINDS + "O":
        if value.dtype.kind == "O":
            data, dtype = [_encode_item(v, where) for v in value.ravel()], "O"
        else:
            data, dtype = value.ravel().tolist(), value.dtype.str
        shape = list(value.shape)
        return {"__type__": "ndarray", "dtype": dtype, "shape": shape, "data": data}
    raise _unsafe(where, value)


_ITEM_TYPES = (int, float, bool, str)  # and numpy scalars, in object arrays


def _encode_item(value, where):
    if value is None or isinstance(value, np.generic) or type(value) in _ITEM_TYPES:
        return encode(value, where)
    raise _unsafe(where, value)


def _unsafe(where, value):
    return TypeError(
        f"{where} = {value!r:.80} (type {type(value).__name__}) cannot be saved "
        "safely: save_model stores plain data only (None, bool, int, float, "
        "str, lists, tuples, dicts and numeric or string numpy arrays)."
    )


def decode(value, name, depth=0):
    """Inverse of :func:`encode`; rejects anything it did not produce."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if depth > _MAX_DEPTH:
        raise bad(name, f"its metadata is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, list):
        return [decode(v, name, depth + 1) for v in value]
    if not isinstance(value, dict):
        raise bad(name, f"unexpected JSON value {value!r:.80}")
    kind, keys = value.get("__type__"), set(value)
    if kind in ("tuple", "dict") and keys == {"__type__", "items"}:
        items = _as_list(value["items"], name)
        if kind == "tuple":
            return tuple(decode(v, name, depth + 1) for v in items)
        if not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise bad(name, "malformed dict entry")
        result = {}
        for k, v in items:
            key = decode(k, name, depth + 1)
            try:
                result[key] = decode(v, name, depth + 1)
            except TypeError:
                raise bad(name, f"dict key {key!r:.40} is not hashable") from None
        return result
    if kind == "scalar" and keys == {"__type__", "dtype", "value"}:
        return _typed_array([value["value"]], _dtype(value["dtype"], name), name)[0]
    if kind == "ndarray" and keys == {"__type__", "dtype", "shape", "data"}:
        return _decode_array(value, name)
    raise bad(name, f"unknown encoded value {value!r:.80}")


def _as_list(value, name):
    if not isinstance(value, list):
        raise bad(name, f"expected a list, got {value!r:.80}")
    return value


def _dtype(spec, name):
    if not isinstance(spec, str) or not _ARRAY_DTYPE.match(spec):
        raise bad(name, f"unsupported dtype {spec!r:.40}")
    return np.dtype(spec)


def _typed_array(data, dtype, name):
    """A 1-d array of ``dtype`` from JSON values of the matching types."""
    kind, types = dtype.kind, _JSON_TYPES[dtype.kind]
    # numpy < 2 wraps out-of-range integers silently: check the range first.
    low, high = (np.iinfo(dtype).min, np.iinfo(dtype).max) if kind in "iu" else (0, 0)
    for item in data:
        if (
            not isinstance(item, types)
            or (kind != "b" and isinstance(item, bool))
            or (kind in "iu" and not low <= item <= high)
        ):
            raise bad(name, f"value {item!r:.40} does not fit dtype {dtype}")
    if kind == "U" and max(map(len, data), default=0) > dtype.itemsize // 4:
        raise bad(name, f"a string is longer than its dtype {dtype} holds")
    try:
        with np.errstate(over="raise"):
            return np.array(data, dtype=dtype)
    except (TypeError, ValueError, OverflowError, FloatingPointError) as exc:
        raise bad(name, f"array data does not match dtype {dtype}: {exc}") from None


def _decode_array(value, name):
    dtype = np.dtype(object) if value["dtype"] == "O" else _dtype(value["dtype"], name)
    shape = _as_list(value["shape"], name)
    if not all(is_integer(s) and s >= 0 for s in shape) or len(shape) > 8:
        raise bad(name, f"invalid array shape {shape!r:.80}")
    data = _as_list(value["data"], name)
    # Python ints: a forged shape such as [2**70] cannot overflow.
    if len(data) != math.prod(shape):
        raise bad(name, "array data does not match its shape")
    if dtype.kind == "U" and dtype.itemsize * len(data) > _MAX_STRING_ARRAY_BYTES:
        raise bad(
            name,
            f"a string array of {len(data)} x {dtype} would take more than "
            f"{_MAX_STRING_ARRAY_BYTES // 2**20} MiB",
        )
    if dtype.kind != "O":
        return _typed_array(data, dtype, name).reshape(shape)
    array = np.empty(len(data), dtype=object)
    for i, item in enumerate(data):
        item = decode(item, name, _MAX_DEPTH)
        if not (item is None or isinstance(item, (bool, int, float, str, np.generic))):
            raise bad(name, "object arrays may only hold scalars")
        array[i] = item
    return array.reshape(shape)


# -- reading a file, bounded ---------------------------------------------------
def _source_name(source):
    if hasattr(source, "read"):
        return str(getattr(source, "name", "<file object>"))
    return os.fspath(source)


def _read_exact(stream, n, name, what):
    """Exactly ``n`` bytes from ``stream``, a bytearray."""
    buffer, got = bytearray(n), 0
    view = memoryview(buffer)
    while got < n:
        chunk = stream.readinto(view[got:]) if hasattr(stream, "readinto") else None
        if chunk is None:
            # A file-like object without readinto (or a non-blocking one).
            data = stream.read(n - got)
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(
                    "load_model reads binary files: open the file with 'rb' "
                    f"(read() returned {type(data).__name__})."
                )
            chunk = len(data)
            view[got : got + chunk] = data
        if chunk == 0:
            raise bad(name, f"the file is truncated (in {what})")
        got += chunk
    view.release()
    return buffer


def parse_cost(text):
    """Upper estimate of the bytes parsing and decoding JSON ``text`` takes."""
    # Measured on CPython, decoding included, never below any JSON shape's.
    return (
        140 * text.count(b"[")
        + 250 * text.count(b"{")
        + 46 * (text.count(b",") + text.count(b":"))
        + 30 * text.count(b'"')
    )


def parse_json(text, name, what):
    try:
        return json.loads(text)
    except RecursionError:
        raise bad(name, f"its {what} is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        # Invalid JSON, and numbers Python refuses to parse (> 4300 digits).
        raise bad(name, f"its {what} is not JSON ({exc})") from None


def _tensor_table(header, name):
    """``{name: (numpy dtype, shape, start, end)}`` tiling the data, and its size."""
    table = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        if not (
            isinstance(entry, dict)
            and set(entry) == {"dtype", "shape", "data_offsets"}
            and isinstance(entry["dtype"], str)
            and entry["dtype"] in TENSOR_DTYPES
            and isinstance(entry["shape"], list)
            and all(is_integer(s) and s >= 0 for s in entry["shape"])
            and isinstance(entry["data_offsets"], list)
            and len(entry["data_offsets"]) == 2
            and all(is_integer(o) and o >= 0 for o in entry["data_offsets"])
        ):
            raise bad(name, f"tensor entry {key!r:.80} is malformed")
        dtype, shape = TENSOR_DTYPES[entry["dtype"]], tuple(entry["shape"])
        start, end = entry["data_offsets"]
        if end - start != math.prod(shape) * dtype.itemsize:
            raise bad(name, f"tensor {key!r:.80} does not match its byte range")
        table[key] = (dtype, shape, start, end)
    if len(table) > _MAX_TENSORS:
        raise bad(name, f"it holds {len(table)} tensors (at most {_MAX_TENSORS})")
    position = 0
    for key, (_, _, start, end) in sorted(table.items(), key=lambda kv: kv[1][2:]):
        if start != position:
            raise bad(name, f"tensor {key!r:.80} overlaps or leaves a gap")
        position = end
    return table, position


def _read_parts(stream, size, name):
    """``(header, tensor table, data)`` of ``stream``, of ``size`` bytes if known."""
    if size is not None and size < 8:
        raise bad(name, "the file is too short")
    (n,) = struct.unpack("<Q", bytes(_read_exact(stream, 8, name, "the header size")))
    if n > MAX_HEADER_BYTES:
        raise bad(
            name,
            f"its header claims {n} bytes; cr_sklearn writes at most "
            f"{MAX_HEADER_BYTES // 2**20} MiB",
        )
    if size is not None and 8 + n > size:
        raise bad(name, "the header length is invalid")
    text = _read_exact(stream, n, name, "the header")
    if (cost := parse_cost(text)) > MAX_PARSE_COST:
        raise bad(
            name,
            f"parsing its {len(text)}-byte header would take about "
            f"{cost / 2**20:.1f} MiB; the files save_model writes take at most "
            f"{MAX_PARSE_COST // 2**20} MiB",
        )
    header = parse_json(text, name, "header")
    del text
    if not isinstance(header, dict):
        raise bad(name, "the header is not a JSON object")
    table, n_data = _tensor_table(header, name)
    if size is not None and size != 8 + n + n_data:
        raise bad(
            name, f"it is {size} bytes long, its header describes {8 + n + n_data}"
        )
    data = _read_exact(stream, n_data, name, "the tensor data")
    if size is None and stream.read(1):
        raise bad(name, "it holds data past the tensors its header describes")
    return header, table, data


def read_model_file(source):
    """``(name, header, table, data)`` of a path or binary file object."""
    name = _source_name(source)
    if isinstance(source, io.TextIOBase):
        raise TypeError(f"load_model reads binary files: open {name!r} with mode 'rb'.")
    if hasattr(source, "read"):
        return (name, *_read_parts(source, None, name))
    # Opened without blocking (a FIFO would wait for a writer) and checked on
    # the descriptor: a link to a device or a FIFO is refused unread.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(source, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise bad(name, "it is not a regular file (a device, FIFO or folder)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        stream = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with stream:
        return (name, *_read_parts(stream, info.st_size, name))


def split_file(blob, path):
    """``(header dict, tensor data bytes)`` of a safetensors byte string."""
    header, _, data = _read_parts(io.BytesIO(blob), len(blob), _source_name(path))
    return header, bytes(data)


# -- writing -----------------------------------------------------------------
def digest(payload, data):
    """SHA-256 over the JSON document and the raw tensor bytes."""
    h = hashlib.sha256(payload.encode("utf-8"))
    h.update(data)
    return h.hexdigest()


def sorted_metadata(blob):
    """``blob`` (a safetensors file) with its metadata's keys sorted, so that the
    same model gives the same bytes (safetensors' order varies). The header keeps
    its length (re-padded with spaces): the data and its offsets are untouched."""
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    # The same JSON writer's rules (compact, UTF-8 kept) give the same length;
    # anything else is left as safetensors wrote it.
    if len(text) > n:
        return blob
    return blob[:8] + text.ljust(n) + blob[8 + n :]


def write_atomically(blob, path):
    """Write ``blob`` to ``path`` by a rename, with the permissions ``open`` gives."""
    path = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def tensor_view(data, entry, key, name):
    """A torch tensor over ``data`` (no copy), checked for finite values."""
    dtype, shape, start, _ = entry
    count = math.prod(shape)
    array = np.frombuffer(data, dtype=dtype, count=count, offset=start)
    if not dtype.isnative:
        array = array.astype(dtype.newbyteorder("="))
    if dtype.kind == "f":
        for i in range(0, count, _FINITE_CHUNK):
            if not np.isfinite(array[i : i + _FINITE_CHUNK]).all():
                raise bad(name, f"tensor {key} holds non-finite values")
    return torch.from_numpy(array.reshape(shape))
