"""Imports point one way: nn <- estimators <- selective/study/growth/plots/text/cli.

The import graph of the package's modules, built from every import statement
(at module level, inside functions and in ``TYPE_CHECKING`` blocks), has no
cycle; ``nn`` imports nothing from scikit-learn or the rest of the package; no
module imports from a layer above its own. The exceptions are named in
``ALLOWED_IMPORTS`` (at most one).

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

#: The layers, bottom first: a module imports from its own layer or below.
LAYERS = ("nn", "estimators", "upper")
#: The upper layer: the root (the public API, which re-exports the estimators,
#: selective and growth) and what builds on the estimators through it.
UPPER = ("cli", "growth", "plotting", "selective", "study", "text")

# Imports exempt from the cycle and layer checks, {(importer, imported):
# reason}; at most one.
ALLOWED_IMPORTS = {}


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE_FILES}


def layer_of(module):
    """The layer of a ``cr_sklearn`` module: an index into :data:`LAYERS`."""
    parts = module.split(".")
    if module == "cr_sklearn" or parts[1] in UPPER:
        return 2
    if parts[1] == "nn":
        return 0
    # The estimators and what they are made of: the private top-level
    # modules, and the bundled datasets.
    if parts[1].startswith("_") or parts[1] == "datasets":
        return 1
    raise KeyError(f"{module} has no layer: add it to the layers of this test.")


def _absolute(node, package):
    """The module an ``ImportFrom`` node names, made absolute."""
    if not node.level:
        return node.module
    base = package.split(".")
    prefix = ".".join(base[: len(base) - node.level + 1])
    return f"{prefix}.{node.module}" if node.module else prefix


def imported_modules(source, module, is_package=False):
    """Absolute names of every module imported anywhere in ``source``."""
    package = module if is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, package)
            names.append(target)
            # ``from pkg import submodule`` imports the submodule too.
            names.extend(f"{target}.{alias.name}" for alias in node.names)
    return names


def import_edges(source, module, modules, is_package=False):
    """``[(imported module, line)]``: the package modules ``source`` imports.

    Every import statement counts, wherever it is. ``from pkg import name``
    imports the module ``pkg.name`` if there is one, else ``pkg``; ``import
    a.b`` imports ``a.b`` (the longest name in ``modules``).
    """
    package = module if is_package else module.rpartition(".")[0]

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [known(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            targets = [
                f"{base}.{alias.name}"
                if f"{base}.{alias.name}" in modules
                else known(base)
                for alias in node.names
            ]
        else:
            continue
        edges.extend((t, node.lineno) for t in targets if t and t != module)
    return edges


def import_graph(sources):
    """``{module: {imported: [lines]}}`` of ``{module: (source, is_package)}``."""
    graph = {}
    for module, (source, is_package) in sources.items():
        edges = graph.setdefault(module, {})
        for target, line in import_edges(source, module, sources, is_package):
            lines = edges.setdefault(target, [])
            if line not in lines:  # one statement importing several names
                lines.append(line)
    return graph


def find_cycles(graph, allowed=()):
    """Every import cycle of ``graph``, as ``[a, b, ..., a]``; one per knot.

    A knot is a strongly connected set of modules (Tarjan); its cycle is the
    shortest path back to its first module. ``allowed`` edges are left out.
    """
    edges = {
        a: sorted(b for b in targets if (a, b) not in allowed and b in graph)
        for a, targets in graph.items()
    }
    index, low, stack, on_stack, knots = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            knot = []
            while not knot or knot[-1] != v:
                knot.append(stack.pop())
                on_stack.discard(knot[-1])
            if len(knot) > 1 or v in edges[v]:
                knots.append(sorted(knot))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    cycles = []
    for knot in knots:
        start, inside = knot[0], set(knot)
        # Breadth first from start, within the knot, back to start.
        paths = {w: [start, w] for w in edges[start] if w in inside}
        queue = list(paths)
        while start not in paths:
            v = queue.pop(0)
            for w in edges[v]:
                if w in inside and w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        cycles.append(paths[start])
    return sorted(cycles)


def upward_imports(graph, allowed=()):
    """``[(importer, imported)]``: imports from a layer above the importer's."""
    return sorted(
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if (a, b) not in allowed and layer_of(b) > layer_of(a)
    )


def _package_graph():
    return import_graph(
        {
            module: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for module, path in MODULES.items()
        }
    )


def _described(cycle, graph):
    steps = [cycle[0]]
    for a, b in zip(cycle, cycle[1:], strict=False):
        steps.append(f"-> {b} (line {', '.join(map(str, graph[a][b]))} of {a})")
    return " ".join(steps)


def test_every_module_and_subpackage_is_in_the_graph():
    graph = _package_graph()
    # Every folder of Python files is a package (no module hides from imports).
    folders = {p.parent for p in PACKAGE_FILES}
    assert all((f / "__init__.py").is_file() for f in folders)
    subpackages = {_module_name(f / "__init__.py") for f in folders} - {"cr_sklearn"}
    assert subpackages >= {
        "cr_sklearn.datasets",
        "cr_sklearn.nn",
        "cr_sklearn.selective",
        "cr_sklearn.study",
    }
    assert set(graph) == set(MODULES) and subpackages <= set(graph)
    # Every module has a layer; the three are all inhabited.
    assert {layer_of(m) for m in graph} == set(range(len(LAYERS)))
    assert layer_of("cr_sklearn.nn.network") == LAYERS.index("nn")
    assert layer_of("cr_sklearn._base") == LAYERS.index("estimators")
    assert layer_of("cr_sklearn.study._engine") == LAYERS.index("upper")


def test_the_imports_have_no_cycle():
    graph = _package_graph()
    cycles = find_cycles(graph, ALLOWED_IMPORTS)
    assert not cycles, "import cycles:\n" + "\n".join(
        _described(c, graph) for c in cycles
    )


def test_no_module_imports_from_a_layer_above():
    graph = _package_graph()
    found = upward_imports(graph, ALLOWED_IMPORTS)
    assert not found, [
        f"{a} ({LAYERS[layer_of(a)]}) imports {b} ({LAYERS[layer_of(b)]}) "
        f"at line(s) {graph[a][b]}"
        for a, b in found
    ]


def test_the_allowed_imports_are_few_named_and_still_there():
    assert len(ALLOWED_IMPORTS) <= 1
    graph = _package_graph()
    for (a, b), reason in ALLOWED_IMPORTS.items():
        assert b in graph.get(a, {}), f"{a} no longer imports {b}: remove it"
        assert reason


def _graph_of(sources):
    """A graph of made-up modules, ``{name: source}`` (``pkg/`` is a package)."""
    return import_graph(
        {
            "cr_sklearn." + name.rstrip("/") if name != "/" else "cr_sklearn": (
                source,
                name.endswith("/"),
            )
            for name, source in sources.items()
        }
    )


def test_the_graph_sees_imports_inside_functions_and_reports_the_cycle():
    graph = _graph_of(
        {
            "_base": "def f():\n    from ._persistence import restore\n",
            "_persistence": "import numpy\nfrom . import _classifier\n",
            "_classifier": "from ._base import BaseCR\n",
            "_utils": "import cr_sklearn._utils\n",
        }
    )
    assert graph["cr_sklearn._base"] == {"cr_sklearn._persistence": [2]}
    assert graph["cr_sklearn._persistence"] == {"cr_sklearn._classifier": [2]}
    assert graph["cr_sklearn._utils"] == {}  # a module naming itself
    cycle = ["cr_sklearn._base", "cr_sklearn._persistence", "cr_sklearn._classifier"]
    assert find_cycles(graph) == [[*cycle, cycle[0]]]
    assert "line 2 of cr_sklearn._base" in _described(find_cycles(graph)[0], graph)
    # An allowed edge breaks it.
    assert find_cycles(graph, {("cr_sklearn._classifier", "cr_sklearn._base")}) == []


def test_the_graph_sees_the_root_and_type_checking_imports():
    graph = _graph_of(
        {
            "/": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .selective import confidence_signals\n"
            ),
            "selective/": "from ._signals import confidence_signals\n",
            "selective._signals": "from cr_sklearn import gradient_norms\n",
            "study._factorial": "def f():\n    from cr_sklearn import CRClassifier\n",
            "nn.network": "from .. import _base\nfrom .._predict import outputs\n",
            "_predict": "",
            "_base": "from .study import _factorial\n",
        }
    )
    assert find_cycles(graph) == [
        [
            "cr_sklearn",
            "cr_sklearn.selective",
            "cr_sklearn.selective._signals",
            "cr_sklearn",
        ]
    ]
    assert upward_imports(graph) == [
        ("cr_sklearn._base", "cr_sklearn.study._factorial"),
        ("cr_sklearn.nn.network", "cr_sklearn._base"),
        ("cr_sklearn.nn.network", "cr_sklearn._predict"),
    ]


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


def test_the_layers_are_found():
    assert {p.name for p in NN_FILES} >= {
        "__init__.py",
        "activations.py",
        "network.py",
        "penalties.py",
    }


@pytest.mark.parametrize("path", NN_FILES, ids=lambda p: p.name)
def test_nn_imports_only_torch_and_itself(path):
    assert _nn_violations(_imports_of(path)) == []


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


# --------------------------------------------------------------------------
# Private names stay in their package
# --------------------------------------------------------------------------

# Allowances, {file relative to the repository root: the private names it may
# still use}, each with its reason; nothing else may be added here.
KNOWN_VIOLATIONS = {
    # The public cr_sklearn.gradient_norms, from the module that defines it:
    # the root re-exports the selective package, so importing the name from
    # the root would close an import cycle.
    "cr_sklearn/selective/_signals.py": [
        "cr_sklearn._tau",
        "cr_sklearn._tau.gradient_norms",
    ],
}


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
