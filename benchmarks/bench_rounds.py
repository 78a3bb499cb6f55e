"""Issue 46's rounds side by side: each candidate's accuracy against its tau.

``rounds46`` reads the adoption-rule section (issue 46) of every round's
report in ``results/`` (:data:`ROUND_REPORTS`: the tuning half's and the
confirmation half's), and writes one table and one figure
(``round_46_frontier.png``): per half, each candidate's paired accuracy
difference against the defaults with its corrected 95% interval (criterion
(a)) and the share of the tables where its pooled tau is below both
MLPClassifier's and SVC's (criterion (c)); the defaults sit at 0 with their
own share. It refits nothing: the numbers are the reports'. Command::

    python benchmarks/run.py rounds46
"""

import re
from pathlib import Path

from harness import RESULTS, Config, header, markdown_table

#: The reports of issue 46's rounds: (round, half, file under ``results/``).
ROUND_REPORTS = (
    (0, "tune", "round_46_tune.md"),
    (1, "tune", "round_46_tune.md"),
    (2, "tune", "round_46_tune_2.md"),
    (3, "tune", "round_46_tune_3.md"),
    (0, "confirm", "round_46_confirm.md"),
    (1, "confirm", "round_46_confirm_1.md"),
    (2, "confirm", "round_46_confirm_2.md"),
    (3, "confirm", "round_46_confirm_3.md"),
)

#: The candidates of each round (``rules.ROUNDS_46``'s names).
ROUND_CANDIDATES = {0: ("S",), 1: ("N", "Q"), 2: ("I",), 3: ("X", "X3")}

_NUMBER = r"([+-]?\d+\.\d+)"
_INTERVAL = rf"{_NUMBER} \[{_NUMBER}, {_NUMBER}\]"
_PATTERNS = {
    "accuracy": rf"\(a\) accuracy difference's interval above [^|]*\| {_INTERVAL}",
    "log_loss": rf"\(a\) log-loss difference's interval below [^|]*\| {_INTERVAL}",
    "nonlinear": rf"\(b\) nonlinear tables[^|]*\| {_INTERVAL}",
    "below": r"\(c\) pooled tau below [^|]*\| (\d+) of (\d+) \(\d+%\); \w+: (\d+) of",
    "ratio": rf"\(c\) median tau [^|]*\| {_NUMBER}; \w+: {_NUMBER}",
}


def read_rule_section(text):
    """The issue-46 rule's figures per candidate in a suite report's ``text``.

    Parameters
    ----------
    text : str
        A report of ``run.py suite`` with candidates.

    Returns
    -------
    found : dict
        Candidate name to ``{"accuracy": (mean, low, high), "log_loss": ...,
        "nonlinear": ..., "below": (candidate's tables, tables, the
        defaults'), "ratio": (candidate's, the defaults')}``.

    Raises
    ------
    ValueError
        When the report has no issue-46 section or a candidate lacks a row.
    """
    _, found_section, section = text.partition("## Adoption rule (issue 46)")
    if not found_section:
        raise ValueError("the report has no adoption-rule section of issue 46.")
    found = {}
    for block in section.split("\n### ")[1:]:
        name = block.split("\n", 1)[0].strip()
        figures = {}
        for key, pattern in _PATTERNS.items():
            match = re.search(pattern, block)
            if match is None:
                raise ValueError(f"candidate {name!r} has no {key} row.")
            cast = int if key == "below" else float
            figures[key] = tuple(cast(g) for g in match.groups())
        found[name] = figures
    return found


def collect(results=RESULTS):
    """Every round's candidates with their figures, as a list of dicts."""
    rows = []
    for round_, half, file in ROUND_REPORTS:
        section = read_rule_section((Path(results) / file).read_text())
        for name in ROUND_CANDIDATES[round_]:
            rows.append({"round": round_, "half": half, "name": name, **section[name]})
    return rows


def _share(count, total):
    return 100.0 * count / total


def plot_frontier(rows, path):
    """The figure: per half, accuracy difference (x) against tau share (y)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    halves = ("tune", "confirm")
    titles = {"tune": "tuning half", "confirm": "confirmation half"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    for ax, half in zip(axes, halves, strict=True):
        mine = [r for r in rows if r["half"] == half]
        total = mine[0]["below"][1]
        defaults = _share(mine[0]["below"][2], total)
        ax.axhline(80, color="0.4", ls="--", lw=1)
        ax.axvline(-0.3, color="0.4", ls=":", lw=1)
        ax.plot([0], [defaults], "ks", ms=7)
        ax.annotate(
            "defaults", (0, defaults), xytext=(5, -12), textcoords="offset points"
        )
        for r in mine:
            mean, low, high = r["accuracy"]
            y = _share(r["below"][0], total)
            ax.errorbar(mean, y, xerr=[[mean - low], [high - mean]], fmt="o", capsize=3)
            ax.annotate(r["name"], (mean, y), xytext=(5, 5), textcoords="offset points")
        left = ax.get_xlim()[0]
        ax.text(left, 81, " (c): 80% of the tables", fontsize=8, va="bottom")
        ax.text(
            -0.3,
            2,
            "(a): the interval's\nlow end right of -0.3 ",
            fontsize=8,
            ha="right",
        )
        ax.set_title(f"{titles[half]} ({total} tables)")
        ax.set_xlabel("accuracy against the defaults (points, 95% interval)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("tables with tau below MLP's and SVC's (%)")
    axes[0].set_ylim(0, 100)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args):
    """The ``rounds46`` report, and its figure beside it."""
    rows = collect()
    out = args.output or RESULTS / "round_46_rounds.md"
    figure = Path(out).with_name("round_46_frontier.png")
    plot_frontier(rows, figure)

    def cell(interval, digits):
        mean, low, high = interval
        return f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"

    table = [
        [
            r["round"],
            r["half"],
            r["name"],
            cell(r["accuracy"], 2),
            cell(r["log_loss"], 3),
            cell(r["nonlinear"], 2),
            f"{r['below'][0]} of {r['below'][1]} (defaults {r['below'][2]})",
            f"{r['ratio'][0]:.2f} (defaults {r['ratio'][1]:.2f})",
        ]
        for r in rows
    ]
    lines = header(
        "Issue 46: every round's candidates, both halves",
        args.argv,
        notes=[
            "The figures of each report's adoption-rule section (criteria (a), (b), "
            "(c)), read back, not refitted; the candidates' parameters are "
            "`benchmarks/rules.py`'s `ROUNDS_46`. The figure: "
            f"[{figure.name}]({figure.name}).",
        ],
    )
    lines += [""]
    lines += markdown_table(
        [
            "round",
            "half",
            "candidate",
            "accuracy (points)",
            "log-loss",
            "nonlinear tables (points)",
            "tau below MLP's and SVC's",
            "median tau / min",
        ],
        table,
    )
    return "\n".join(lines) + "\n"


CONFIGS = [
    Config(
        "rounds46",
        "issue 46's candidates on both halves, from the rounds' reports",
        lambda parser: None,
        run,
        file="round_46_rounds.md",
    )
]
