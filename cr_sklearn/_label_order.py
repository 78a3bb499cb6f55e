"""The order of ordinal labels: given, an ordered Categorical's, or numeric."""

import numbers
from collections import Counter

import numpy as np

__all__ = []


def categorical_order(y):
    """The order of an ordered pandas Categorical or polars Enum ``y``, else None."""
    dtype = getattr(y, "dtype", None)
    if getattr(dtype, "ordered", False) and hasattr(dtype, "categories"):
        return np.asarray(dtype.categories)
    # A polars Enum is ordered by its categories (a polars Categorical is not).
    if type(dtype).__name__ == "Enum" and type(dtype).__module__.startswith("polars"):
        return np.asarray(dtype.categories.to_list())
    return None


def is_numeric(values):
    """Whether ``values`` (an array) holds numbers only (bools included)."""
    values = np.asarray(values)
    if values.dtype.kind in "biuf":
        return True
    if values.dtype.kind != "O":
        return False
    return all(
        isinstance(v, numbers.Real) and not isinstance(v, (str, bytes))
        for v in values.ravel()
    )


def check_order(order, name):
    """``order`` (lowest first) as an array of distinct labels; ``name`` for errors."""
    labels = np.asarray(order)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-d sequence of labels, lowest first; "
            f"got {order!r:.200}."
        )
    try:
        counts = Counter(labels.tolist())
    except TypeError as exc:
        raise ValueError(f"{name} must hold hashable labels: {exc}.") from None
    repeated = [label for label, count in counts.items() if count > 1]
    if repeated:
        raise ValueError(
            f"{name} must list each label once (it is their order, lowest "
            f"first); {repeated[:10]} appear more than once."
        )
    return labels


def check_known(order, values, *, what, where):
    """Raise a ValueError naming the ``values`` that are not in ``order``."""
    values = np.asarray(values).ravel()
    unknown = ~np.isin(values, order)
    if unknown.any():
        missing = list(dict.fromkeys(values[unknown].tolist()))
        raise ValueError(
            f"{what} contains labels {missing[:10]!r:.200} that are not in {where}."
        )


def ranks(order, values):
    """Positions of ``values`` in ``order`` (any order; every value known)."""
    lookup = {label: i for i, label in enumerate(np.asarray(order).tolist())}
    return np.array([lookup[v] for v in np.asarray(values).tolist()], dtype=np.int64)


def no_order_error(values, *, who, param):
    """The ValueError for labels whose order cannot be read (strings)."""
    shown = list(dict.fromkeys(np.asarray(values).ravel().tolist()))
    return ValueError(
        f"{who} needs the order of the labels {shown[:10]!r:.200}, which are not "
        "numbers: sorting them (alphabetically) would rank them wrongly. Pass "
        f"their order, lowest first, with {param}=[...], or give y as an ordered "
        "pandas Categorical: pd.Categorical(y, categories=[...], ordered=True)."
    )


def resolve_order(
    y_true, y_pred, *, labels=None, categories=None, known=None, who, param
):
    """The order of the labels of ``y_true`` and ``y_pred``, checked to hold them.

    ``labels``, else ``categories``, else the sorted numbers of both and of
    ``known`` (a classifier's labels); other labels raise :func:`no_order_error`.
    """
    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if labels is not None:
        order = check_order(labels, param)
        where = f"{param}={order.tolist()!r:.200}"
    elif categories is not None:
        order = np.asarray(categories)
        where = f"the ordered Categorical's categories {order.tolist()!r:.200}"
    elif is_numeric(y_true) and is_numeric(y_pred):
        parts = [y_true, y_pred]
        if known is not None and is_numeric(known):
            parts.append(np.asarray(known).ravel())
        return np.unique(np.concatenate(parts))
    else:
        raise no_order_error(np.concatenate([y_true, y_pred]), who=who, param=param)
    check_known(order, y_true, what="y_true", where=where)
    check_known(order, y_pred, what="y_pred", where=where)
    return order
