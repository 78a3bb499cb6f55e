"""The Sphinx configuration (``docs/conf.py``): the built pages work offline."""

import importlib
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT

pytestmark = pytest.mark.docs

EXTENSION = "sphinx-mathjax-offline"


def _conf():
    spec = importlib.util.spec_from_file_location(
        "docs_conf", ROOT / "docs" / "conf.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_math_is_drawn_by_a_mathjax_the_site_ships():
    conf = _conf()
    assert "sphinx.ext.mathjax" in conf.extensions
    assert EXTENSION in conf.extensions
    assert not hasattr(conf, "mathjax_path"), "conf.py must not point at a CDN"
    if importlib.util.find_spec(EXTENSION) is None:
        pytest.skip(f"{EXTENSION} (the 'docs' extra) is not installed")
    extension = importlib.import_module(EXTENSION)
    hooks = []
    app = SimpleNamespace(
        config=SimpleNamespace(), connect=lambda event, hook: hooks.append(event)
    )
    extension.setup(app)
    # The page loads MathJax from the site's own _static folder, which the
    # extension fills when the build finishes.
    assert "build-finished" in hooks
    path = app.config.mathjax_path
    assert "//" not in path and not path.startswith("/")
    assert (Path(extension.__file__).parent / "static" / path).is_file()
