"""Measured numbers live in ``benchmarks/results/*.md`` only.

Docstrings say what the model is, the user guide explains and links the
result files, and the README carries measured figures only in its short
"how it compares" summary. This test fails on measured figures copied
anywhere else: percentages with decimals (``77.5%``), ``±`` or ``+-``
between numbers, decimal accuracies (``0.743``, ``77.50``), differences in
points (``0.43 points``), decimal speed ratios (``1.42x``) and taus
(``tau 1.26``). What is not a measurement passes: parameter values and
defaults (``dropout=0.1``, ``default=0.1``, ``10**-2``, ``1e-3``), version
numbers, formulas and math, inline code, code blocks and doctest output,
``include``/``literalinclude`` directives, quantile indices (``[99]``) and
sizes (``(64, 64)``).
"""

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cr_sklearn"
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SUMMARY_START = "<!-- how-it-compares -->"
SUMMARY_END = "<!-- /how-it-compares -->"

# A number not glued to a word, a dot or another number on its left.
_NUM = r"(?<![\w.^*])"
# Kinds of measured figures, each with a pattern over one line of prose.
PATTERNS = {
    "decimal percentage": re.compile(_NUM + r"\d+\.\d+\s?%"),
    "approximate percentage": re.compile(
        r"\b(?:about|roughly|approximately|nearly|almost|~)\s?\d+\s?%", re.I
    ),
    "plus-minus": re.compile(r"±|\d\s?\+-\s?\d"),
    "difference in points": re.compile(
        _NUM + r"[+-]?\d+\.\d+\s+(?:percentage\s+)?points?\b"
    ),
    "decimal ratio": re.compile(_NUM + r"\d+\.\d+\s?[x×](?![\w])"),
    "tau value": re.compile(r"\b(?:tau|τ)\b[^.\d\n]{0,30}?(?<![\w.])\d\.\d+", re.I),
    # Three or more decimals (0.743, 1.261), or two decimals from 10 up
    # (77.50): the shapes of accuracies, losses and taus.
    "decimal figure": re.compile(_NUM + r"(?:\d+\.\d{3,}|\d{2,}\.\d{2})(?![\d.]*\d)"),
    # Two decimals below 10 (0.15, 1.27): accuracies, MAEs, taus, differences.
    "two-decimal figure": re.compile(_NUM + r"\d\.\d{2}(?![\d.]*\d)"),
}

# Not measurements, removed before matching.
_ALLOWED = [
    re.compile(r"``.*?``"),  # reST inline literal
    re.compile(r"`[^`]*`"),  # Markdown inline code, reST roles' targets
    re.compile(r":math:`[^`]*`"),
    re.compile(r"\$[^$]*\$"),  # inline math in Markdown
    # parameter values and defaults: name=0.25, default=0.1, default 0.25,
    # default=(0.05, 0.1)
    re.compile(r"[\w\]\)]\s?=\s?(?:\([^)]*\)|\[[^\]]*\]|-?[\d.eE*+-]+)"),
    re.compile(r"\bdefaults?(?: is| to| of)?\s+-?[\d.eE*+-]+", re.I),
    re.compile(r"\d+(?:\.\d+){2,}"),  # version numbers: 2.13.0, 0.1.0
    re.compile(r"\d+(?:\.\d+)?[eE][+-]?\d+"),  # scientific notation: 1e-3
    re.compile(r"\d+\s?(?:\*\*|\^)\s?-?\d+(?:\.\d+)?"),  # 10**-2.5, 10^-1.5
    re.compile(r"https?://\S+"),
]


def strip_allowed(line):
    """``line`` with inline code, parameter values, versions and formulas removed."""
    for pattern in _ALLOWED:
        line = pattern.sub(" ", line)
    return line


def measured_figures(text):
    """The measured figures in prose ``text``, as ``(kind, match)`` pairs."""
    text = strip_allowed(" ".join(text.split()))
    return [
        (kind, m.group(0))
        for kind, pattern in PATTERNS.items()
        for m in pattern.finditer(text)
    ]


def paragraphs(prose):
    """Join ``(line_number, line)`` pairs into ``(first_line_number, paragraph)``.

    A paragraph is a run of consecutive non-blank lines, so a figure or an
    inline literal broken over two lines is still seen whole.
    """
    found = []
    previous = None
    for number, line in prose:
        if line.strip() and previous is not None and number == previous + 1:
            found[-1] = (found[-1][0], found[-1][1] + " " + line.strip())
        elif line.strip():
            found.append((number, line.strip()))
        previous = number if line.strip() else None
    return found


def _indent(line):
    return len(line) - len(line.lstrip())


def rst_prose(text):
    """Lines of reST ``text`` outside code, math, directives and doctests.

    Returns ``(line_number, line)`` pairs. Skipped: the indented body of every
    directive (``code-block``, ``math``, ``include``, ``literalinclude``,
    ``toctree``, ...) and of literal blocks introduced by ``::``, and
    doctest blocks (``>>>`` up to the next blank line).
    """
    lines = text.splitlines()
    prose = []
    skip_from = None  # indentation of the construct whose body is skipped
    in_doctest = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if in_doctest:
            if stripped:
                continue
            in_doctest = False
        if skip_from is not None:
            if not stripped or _indent(line) > skip_from:
                continue
            skip_from = None
        if stripped.startswith(">>>"):
            in_doctest = True
            continue
        if stripped.startswith(".. "):  # directive, comment or target
            skip_from = _indent(line)
            continue
        prose.append((number, line))
        if stripped.endswith("::"):  # a literal block follows
            skip_from = _indent(line)
    return prose


def markdown_prose(text):
    """Lines of Markdown ``text`` outside fenced code, HTML comments and the summary.

    Returns ``(line_number, line)`` pairs.
    """
    prose = []
    in_fence = in_summary = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if stripped == SUMMARY_START:
            in_summary = True
            continue
        if stripped == SUMMARY_END:
            in_summary = False
            continue
        if in_summary or stripped.startswith("<!--") or line.startswith("    "):
            continue
        prose.append((number, line))
    return prose


def docstrings(path):
    """``(line_number, docstring)`` of the module, classes and functions in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree] + [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    found = []
    for node in nodes:
        doc = ast.get_docstring(node, clean=True)
        if doc:
            found.append((node.body[0].lineno if node.body else 1, doc))
    return found


def _report(where, hits):
    return "\n".join(f"{place}: {kind} {match!r}" for place, kind, match in hits) + (
        f"\nMeasured numbers belong in benchmarks/results/*.md; {where} should "
        "link the result file instead of copying its figures."
    )


# -- the detector itself -----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "CR scored 77.5% against 77.66% for logistic regression.",
        "accuracy 0.728 ± 0.039 at 5%",
        "77.50 +- 2.96",
        "the network trailed it by 0.43 points on average",
        "a local epoch costs 1.42x a penalty-free one",
        "tau was 1.261 with the stream",
        "tau 1.05",
        "every CR network had tau about 1.05",
        "MAE 0.336 against 0.426",
        "SST-5 at 100%: CR 43.43, SVC 44.03",
        "accuracy falls from 0.57 to 0.30 across quintiles",
        "correlation with |p - 0.5| is -0.15",
        "it adds about 8% to a fit",
        "(44.8% overall)",
        "an MLPClassifier 1.70 and an RBF SVC 1.74",
        "every network had tau\nabout 1.05, with or without a penalty",
    ],
)
def test_detector_flags_measured_figures(text):
    assert measured_figures(text), text


@pytest.mark.parametrize(
    "text",
    [
        "dropout : float, default=0.1",
        "The default ``dreg_lambda=10**-2`` was chosen on other data.",
        "dreg_lambda=10**-2.5 for the ordinal model, 10^-1.5 before",
        "learning_rate_init : float, default=1e-3",
        "``1e-3 * batch / 200`` above 200 rows",
        "validation_fraction=0.15 of the rows, tol=1e-4",
        "defaults to 0.25",
        "torch 2.13.0 and cr_sklearn 0.1.0",
        "gradient_norm_quantiles_[99] / gradient_norm_mean_",
        "hidden_layer_sizes=(64, 64) and (32, 32, 32)",
        "subsampled to 5%, 10%, 25%, 50% and 100% of each fold",
        "with 40% of the training labels corrupted",
        "tau is 1 for a linear model",
        "tau = p99 / mean of the norms",
        "features above 1e30 in magnitude are rejected",
        "the soft bound ``b = 3`` and degree ``K = 3``",
        ":math:`\\tau = 1.05` in a formula",
        "``model.predict_proba(X)[:, 1] > 0.75``",
        "a fit takes 100x the time of a logistic regression",
        "p99/mean of |df/dx|",
        "RepeatedStratifiedKFold(5x5), 25 folds of ~153 rows",
        "see ``benchmarks/results/pima.md``",
        "fractions : sequence of float, default=(0.05, 0.1, 0.25, 0.5, 1.0)",
        "``dropout=0.1``\nand ``stream_rows=64``",
    ],
)
def test_detector_passes_what_is_not_measured(text):
    assert not measured_figures(text), measured_figures(text)


def test_rst_prose_skips_code_math_and_includes():
    text = """\
Prose 0.743 here.

.. code-block:: python

   clf.score(X, y)  # 0.743

.. include:: ../benchmarks/results/pima.md
   :parser: myst_parser.sphinx_

A literal block::

    77.50 +- 2.96

>>> round(0.7431, 3)
0.743

Back to prose.
"""
    prose = [line for _, line in rst_prose(text)]
    assert prose[0] == "Prose 0.743 here."
    assert "Back to prose." in prose
    assert not any("clf.score" in line or "+-" in line for line in prose)
    assert not any(line.strip() == "0.743" for line in prose)


def test_markdown_prose_skips_fences_and_the_summary():
    text = f"""\
Outside 0.743.
{SUMMARY_START}
CR 77.50 +- 2.96 against 77.66.
{SUMMARY_END}
```python
print(0.743)
```
After.
"""
    prose = [line for _, line in markdown_prose(text)]
    assert prose == ["Outside 0.743.", "After."]


# -- the files -----------------------------------------------------------------


def _package_files():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_measured_figures_in_docstrings():
    hits = []
    for path in _package_files():
        for lineno, doc in docstrings(path):
            for number, text in paragraphs(rst_prose(doc)):
                for kind, match in measured_figures(text):
                    place = f"{path.relative_to(ROOT)}:{lineno + number - 1}"
                    hits.append((place, kind, match))
    assert not hits, _report("a docstring", hits)


def _docs_pages():
    # The written pages; not what Sphinx and sphinx-gallery generate.
    generated = {"sg_execution_times.rst"}
    pages = [*DOCS.glob("*.rst"), *(DOCS / "user_guide").glob("*.rst")]
    return sorted(p for p in pages if p.name not in generated)


def test_no_measured_figures_in_docs_prose():
    hits = []
    for path in _docs_pages():
        text = path.read_text(encoding="utf-8")
        for number, paragraph in paragraphs(rst_prose(text)):
            for kind, match in measured_figures(paragraph):
                hits.append((f"{path.relative_to(ROOT)}:{number}", kind, match))
    assert not hits, _report("a documentation page", hits)


def test_no_measured_figures_in_readme_outside_the_summary():
    text = README.read_text(encoding="utf-8")
    assert text.count(SUMMARY_START) == 1 and text.count(SUMMARY_END) == 1
    hits = []
    for number, paragraph in paragraphs(markdown_prose(text)):
        for kind, match in measured_figures(paragraph):
            hits.append((f"README.md:{number}", kind, match))
    assert not hits, _report("the README", hits)


RUN_TIME = re.compile(
    r"\b\d+(?:\.\d+)?\s*(?:CPU-)?(?:min|minutes?|hours?|seconds?|s wall)\b"
    r"|\b(?:a few|several) (?:minutes|seconds|hours)\b",
    re.I,
)


@pytest.mark.parametrize(
    "text, claims",
    [
        ("750 fits, about 3.7 CPU-minutes: 2-3 minutes on 2 idle cores", True),
        ("144 fits, a few minutes on 2 cores", True),
        ("1 min 30 s wall", True),
        ("the default Pima study is 750 fits", False),
        ("folds per repeat (default: 5)", False),
    ],
)
def test_run_time_detector(text, claims):
    assert bool(RUN_TIME.search(text)) is claims


def test_no_run_time_claims_in_cli_help():
    import argparse

    from cr_sklearn.cli import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts.extend(sub.format_help() for sub in action.choices.values())
    # argparse wraps help texts: join the lines before matching.
    texts = [" ".join(text.split()) for text in texts]
    found = [m.group(0) for text in texts for m in RUN_TIME.finditer(text)]
    assert not found, f"run-time claims in `cr-sklearn --help`: {found}"


def test_no_run_time_claims_in_readme():
    found = [
        (number, m.group(0))
        for number, paragraph in paragraphs(
            markdown_prose(README.read_text(encoding="utf-8"))
        )
        for m in RUN_TIME.finditer(paragraph)
    ]
    assert not found, f"run-time claims in README.md: {found}"
