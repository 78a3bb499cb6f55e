"""The optional packages of the studies, checked before any work starts."""

import importlib
import importlib.util
import sys

__all__ = ["check_dependencies"]

# feature: (module, what it is for, the cr_sklearn extra that installs it)
FEATURES = {
    "tables": ("pandas", "tables", "study"),
    "plots": ("matplotlib", "plots", "study"),
    "progress": ("tqdm", "the progress bar", "study"),
    "dask": ("dask.distributed", "the Dask backend", "dask"),
    "xgboost": ("xgboost", "the XGBoost baseline", "xgboost"),
}


def _installed(module):
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        # A None entry blocks the package and its submodules (find_spec won't).
        name = ".".join(parts[:end])
        if name in sys.modules and sys.modules[name] is None:
            return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        # A missing parent package ("dask" for "dask.distributed").
        return False


def check_dependencies(*features, purpose="This study"):
    """Check, before any work, that the optional packages of ``features`` are installed.

    Nothing is imported.

    Parameters
    ----------
    *features : {"tables", "plots", "progress", "dask", "xgboost"}
        What the caller will use: pandas, matplotlib, tqdm, ``dask.distributed``
        or the XGBoost baseline.
    purpose : str, default="This study"
        Who needs them, the start of the error message.

    Raises
    ------
    ImportError
        Naming every missing package and the ``pip`` command for its extras.
    """
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(
            f"Unknown features {unknown}; choose from {', '.join(FEATURES)}."
        )
    missing = [FEATURES[f] for f in dict.fromkeys(features)]
    missing = [m for m in missing if not _installed(m[0])]
    if not missing:
        return
    packages = ", ".join(f"{module} ({use})" for module, use, _ in missing)
    extras = ",".join(dict.fromkeys(extra for _, _, extra in missing))
    raise ImportError(
        f"{purpose} needs {packages}, not installed: "
        f"pip install 'cr_sklearn[{extras}]'."
    )


def import_or_hint(module, *, feature, purpose):
    """Import ``module``, or raise the ImportError of :func:`check_dependencies`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        error = exc
    # Raised outside the handler: the hint alone, not "during handling of".
    check_dependencies(feature, purpose=purpose)
    raise error
