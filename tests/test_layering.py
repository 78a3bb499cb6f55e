"""Imports point one way: nn <- estimators <- scoring/study/growth/cli.

And private names stay home: a ``_private`` module or name of one package is
imported only by modules of that same package, and the benchmark and example
scripts use public names only.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cr_sklearn"
PACKAGE_FILES = sorted(PACKAGE.rglob("*.py"))
SCRIPT_FILES = sorted((ROOT / "benchmarks").glob("*.py")) + sorted(
    (ROOT / "examples").glob("*.py")
)
NN_FILES = sorted((PACKAGE / "nn").rglob("*.py"))
# The estimator layer: private top-level modules such as _base and _classifier.
ESTIMATOR_FILES = sorted(
    p
    for p in PACKAGE.glob("_*.py")
    if p.name not in {"__init__.py", "_tau.py", "_ordinal_metrics.py"}
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
        "_plan.py",
        "_trainer.py",
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


# --------------------------------------------------------------------------
# Private names stay in their package
# --------------------------------------------------------------------------

# Allowances, {file relative to the repository root: the private names it may
# still use}, each with its reason; nothing else may be added here.
KNOWN_VIOLATIONS = {}


def _is_private(part):
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _is_package(name):
    """Whether ``cr_sklearn...`` ``name`` is a package (a folder with __init__)."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return (path / "__init__.py").is_file()


def _private_owner(name):
    """The package that owns the first private part of ``name``, or None.

    ``cr_sklearn.study._datasets.load`` belongs to ``cr_sklearn.study``; the
    private name ``cr_sklearn.study._display._fmt`` also belongs there (the
    first private part is the module ``_display``); a private name in a public
    module, ``cr_sklearn.nn.network._x``, to that module's package.
    """
    parts = name.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            owner = ".".join(parts[:i])
            while owner and not _is_package(owner):
                owner = owner.rpartition(".")[0]
            return owner
    return None


def _package_of(path):
    module = _module_name(path)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _cross_package_private(names, package):
    """Imports of private names of a package other than ``package``."""
    bad = []
    for name in names:
        if name.split(".")[0] != "cr_sklearn":
            continue
        owner = _private_owner(name)
        if owner is not None and owner != package:
            bad.append(name)
    return bad


def private_names_used(source):
    """Private names that the script ``source`` imports from cr_sklearn or reads.

    Imports (``cr_sklearn._base``, ``cr_sklearn.growth._data_loss``), attribute
    chains on a name bound to cr_sklearn (``import cr_sklearn.study as s;
    s._factorial``, as ``cr_sklearn.study._factorial``), and private
    attributes of objects (``clf._inference_module``, as written). A script's
    own classes (``self._x``) and other libraries' modules are not checked.
    """
    tree = ast.parse(source)
    used, cr_names, other_modules = [], {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name.split(".")[0] == "cr_sklearn":
                    used.append(alias.name)
                    cr_names[bound] = alias.name if alias.asname else "cr_sklearn"
                else:
                    other_modules.add(bound)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                bound = alias.asname or alias.name
                if not node.level and module.split(".")[0] == "cr_sklearn":
                    cr_names[bound] = f"{module}.{alias.name}"
                else:
                    other_modules.add(bound)
            if not node.level and module.split(".")[0] == "cr_sklearn":
                used.append(module)
                used.extend(f"{module}.{alias.name}" for alias in node.names)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain, value = [], node
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        root = value.id if isinstance(value, ast.Name) else None
        if root in cr_names:
            used.append(".".join([cr_names[root], *reversed(chain)]))
        elif (
            _is_private(node.attr)
            and root not in other_modules
            and root not in {"self", "cls"}
        ):
            used.append(ast.unparse(node))
    return sorted({n for n in used if any(_is_private(p) for p in n.split("."))})


def _relative(path):
    return path.relative_to(ROOT).as_posix()


def _check(found, path):
    allowed = set(KNOWN_VIOLATIONS.get(_relative(path), ()))
    return sorted(set(found) - allowed)


def test_the_files_are_found():
    names = {_relative(p) for p in PACKAGE_FILES}
    assert {"cr_sklearn/cli.py", "cr_sklearn/study/_factorial.py"} <= names
    scripts = {_relative(p) for p in SCRIPT_FILES}
    assert "benchmarks/run.py" in scripts
    assert "examples/plot_pima_grid_search.py" in scripts


@pytest.mark.parametrize("path", PACKAGE_FILES, ids=_relative)
def test_no_private_imports_across_packages(path):
    found = _cross_package_private(_imports_of(path), _package_of(path))
    assert _check(found, path) == []


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=_relative)
def test_benchmarks_and_examples_use_public_names(path):
    found = private_names_used(path.read_text(encoding="utf-8"))
    assert _check(found, path) == []


def test_known_violations_are_still_needed():
    # An allowance that no longer matches an import must be removed.
    for relative, allowed in KNOWN_VIOLATIONS.items():
        path = ROOT / relative
        if path.parent == PACKAGE or PACKAGE in path.parents:
            found = _cross_package_private(_imports_of(path), _package_of(path))
        else:
            found = private_names_used(path.read_text(encoding="utf-8"))
        assert set(allowed) <= set(found), relative


@pytest.mark.parametrize(
    "source, module, bad",
    [
        # Another package's private module, from a top-level module or a
        # subpackage.
        (
            "from .study._datasets import load_study_dataset",
            "cr_sklearn.cli",
            [
                "cr_sklearn.study._datasets",
                "cr_sklearn.study._datasets.load_study_dataset",
            ],
        ),
        (
            "from .._classifier import CRClassifier",
            "cr_sklearn.study._factorial",
            ["cr_sklearn._classifier", "cr_sklearn._classifier.CRClassifier"],
        ),
        ("import cr_sklearn.nn._base", "cr_sklearn._base", ["cr_sklearn.nn._base"]),
        # A private name of another package's public module.
        (
            "from ..nn.network import _helper",
            "cr_sklearn.study._factorial",
            ["cr_sklearn.nn.network._helper"],
        ),
        (
            "from cr_sklearn.study import _factorial",
            "cr_sklearn.cli",
            ["cr_sklearn.study._factorial"],
        ),
        # Within one package: fine, private or not.
        ("from ._base import BaseCR, _helper", "cr_sklearn._classifier", []),
        ("from ._stats import corrected_ttest", "cr_sklearn.study._factorial", []),
        ("from .network import _helper", "cr_sklearn.nn.residual", []),
        # Public names across packages: fine.
        ("from ..nn import CRNetwork", "cr_sklearn.study._factorial", []),
        ("from .study import load_study_dataset", "cr_sklearn.cli", []),
        ("from cr_sklearn import __version__", "cr_sklearn.cli", []),
    ],
)
def test_the_checker_sees_private_imports_across_packages(source, module, bad):
    package = module.rpartition(".")[0]
    names = imported_modules(source, module)
    assert _cross_package_private(names, package) == bad


@pytest.mark.parametrize(
    "source, bad",
    [
        ("import cr_sklearn._base as cr_base", ["cr_sklearn._base"]),
        (
            "from cr_sklearn.study._stats import corrected_ttest",
            ["cr_sklearn.study._stats", "cr_sklearn.study._stats.corrected_ttest"],
        ),
        ("from cr_sklearn.growth import _data_loss", ["cr_sklearn.growth._data_loss"]),
        (
            "import cr_sklearn.study as study\nstudy._factorial.PRESETS",
            ["cr_sklearn.study._factorial", "cr_sklearn.study._factorial.PRESETS"],
        ),
        (
            "import cr_sklearn\ncr_sklearn._base.BaseCR",
            ["cr_sklearn._base", "cr_sklearn._base.BaseCR"],
        ),
        (
            "from cr_sklearn import study\nstudy._stats.corrected_ttest",
            ["cr_sklearn.study._stats", "cr_sklearn.study._stats.corrected_ttest"],
        ),
        # Private attributes of objects, the estimators' included.
        ("clf = make()\nclf._inference_module", ["clf._inference_module"]),
        ("SentenceEmbedder()._get_model()", ["SentenceEmbedder()._get_model"]),
        # Public names, a script's own internals and other libraries: fine.
        ("from cr_sklearn.study import corrected_ttest", []),
        ("import cr_sklearn\ncr_sklearn.__version__", []),
        ("import _suite_tables\n_suite_tables._row()", []),
        ("from benchmarks import _tables\n_tables._row()", []),
        ("class A:\n    def f(self):\n        return self._x", []),
        ("clf = make()\nclf.module_.__class__", []),
    ],
)
def test_the_checker_sees_private_names_in_scripts(source, bad):
    assert private_names_used(source) == bad


# What growth may use of a fitted estimator beyond its public API: the
# contract documented on BaseCR (and the seed, read to derive block seeds).
GROWTH_CONTRACT = {"_training_data", "_data_loss", "_network_changed", "_seed"}


def test_growth_uses_only_the_estimator_contract():
    tree = ast.parse((PACKAGE / "growth.py").read_text())
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner != "self" and not node.attr.startswith("__"):
                used.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr"}
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            used.add(node.args[1].value)
    assert used <= GROWTH_CONTRACT, sorted(used - GROWTH_CONTRACT)
    assert {"_training_data", "_data_loss", "_network_changed"} <= used
