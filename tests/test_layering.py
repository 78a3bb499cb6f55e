"""Imports point one way: nn <- estimators <- scoring/study/growth/cli."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cr_sklearn"
NN_FILES = sorted((PACKAGE / "nn").rglob("*.py"))
# The estimator layer: private top-level modules such as _base and _classifier.
ESTIMATOR_FILES = sorted(
    p for p in PACKAGE.glob("_*.py") if p.name not in {"__init__.py", "_scoring.py"}
)
UPPER_LAYER = ("cr_sklearn.study", "cr_sklearn.cli", "cr_sklearn.growth")


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source, module, is_package=False):
    """Absolute names of every module imported anywhere in ``source``."""
    package = module if is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module
            names.append(target)
            # ``from pkg import submodule`` imports the submodule too.
            names.extend(f"{target}.{alias.name}" for alias in node.names)
    return names


def _imports_of(path):
    return imported_modules(
        path.read_text(encoding="utf-8"),
        _module_name(path),
        is_package=path.name == "__init__.py",
    )


def _nn_violations(names):
    bad = []
    for name in names:
        top = name.split(".")[0]
        if top in {"sklearn", "skorch"}:
            bad.append(name)
        elif top == "cr_sklearn" and not (
            name == "cr_sklearn.nn" or name.startswith("cr_sklearn.nn.")
        ):
            bad.append(name)
    return bad


def _upper_violations(names):
    return [n for n in names if n == UPPER_LAYER or n.startswith(UPPER_LAYER)]


def test_the_layers_are_found():
    assert {p.name for p in NN_FILES} >= {
        "__init__.py",
        "activations.py",
        "network.py",
        "penalties.py",
    }
    assert {p.name for p in ESTIMATOR_FILES} >= {
        "_base.py",
        "_classifier.py",
        "_training.py",
    }


@pytest.mark.parametrize("path", NN_FILES, ids=lambda p: p.name)
def test_nn_imports_only_torch_and_itself(path):
    assert _nn_violations(_imports_of(path)) == []


@pytest.mark.parametrize("path", ESTIMATOR_FILES, ids=lambda p: p.name)
def test_estimators_do_not_import_the_layers_above(path):
    assert _upper_violations(_imports_of(path)) == []


@pytest.mark.parametrize(
    "source, module, bad",
    [
        ("import sklearn", "cr_sklearn.nn.network", ["sklearn"]),
        (
            "def f():\n    from sklearn.utils import check_array",
            "cr_sklearn.nn.network",
            ["sklearn.utils", "sklearn.utils.check_array"],
        ),
        (
            "from .. import _base",
            "cr_sklearn.nn.network",
            ["cr_sklearn", "cr_sklearn._base"],
        ),
        (
            "from .._base import BaseCR",
            "cr_sklearn.nn.network",
            ["cr_sklearn._base", "cr_sklearn._base.BaseCR"],
        ),
        ("from .activations import make_activation", "cr_sklearn.nn.network", []),
        ("import torch.nn as nn", "cr_sklearn.nn.network", []),
    ],
)
def test_the_checker_sees_forbidden_imports(source, module, bad):
    assert _nn_violations(imported_modules(source, module)) == bad


def test_the_checker_sees_upper_layer_imports():
    names = imported_modules("from .study import StudyResult", "cr_sklearn._base")
    assert _upper_violations(names) == [
        "cr_sklearn.study",
        "cr_sklearn.study.StudyResult",
    ]
    names = imported_modules("from . import cli", "cr_sklearn._base")
    assert _upper_violations(names) == ["cr_sklearn.cli"]
