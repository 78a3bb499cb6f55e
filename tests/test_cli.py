"""Tests of the cr-sklearn command line."""

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from cr_sklearn.cli import build_parser, main

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

FAST = ["--folds", "3", "--repeats", "1", "--n-jobs", "1", "--no-progress"]


def test_study_writes_csv_png_markdown(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(
        [
            "study",
            "--dataset",
            "breast-cancer",
            "--models",
            "logreg,svc",
            "--fractions",
            "0.2,1",
            "--out",
            str(out),
            *FAST,
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert (
        "| model (p: corrected t (Nadeau-Bengio); *: Holm-adjusted p ≤ 0.05) | 20% |"
        in printed
    )
    assert "LogisticRegression (reference)" in printed  # no CR: first model
    assert "(p=" in printed and "Holm's correction" in printed
    csv = (out / "study.csv").read_text()
    assert csv.startswith("model,fraction,split") and csv.count("\n") == 1 + 2 * 2 * 3
    assert (out / "study.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "study.md").read_text()
    assert "RepeatedStratifiedKFold(3 folds x 1 repeats" in report
    assert "model − LogisticRegression" in report


def test_evaluate_alias_runs_full_training_folds(capsys):
    assert main(["evaluate", "--models", "cr,lr", *FAST]) == 0
    printed = capsys.readouterr().out
    assert "Holm-adjusted p ≤ 0.05) | 100% | fit time (s) |" in printed
    assert "| CR (reference) |" in printed
    assert "| LogisticRegression |" in printed
    # The default output folder lands in the test's own folder, not the checkout.
    assert not Path.cwd().is_relative_to(ROOT)
    assert (Path("cr_sklearn_evaluate") / "study.csv").is_file()


def test_csv_dataset_with_target(tmp_path, capsys):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(90, 3))
    label = np.where(X[:, 0] > 0, "yes", "no")
    path = tmp_path / "data.csv"
    lines = ["a,b,c,label"] + [
        f"{r[0]},{r[1]},{r[2]},{lab}" for r, lab in zip(X, label, strict=True)
    ]
    path.write_text("\n".join(lines))
    args = ["evaluate", "--dataset", str(path), "--models", "logreg", *FAST]
    assert main([*args, "--target", "label"]) == 0
    assert "LogisticRegression" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(args)
    assert "--target" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--models", "catboost"], "Unknown model"),
        (["evaluate", "--dataset", "iris-flowers"], "Unknown dataset"),
        (["study", "--fractions", "0,1"], "fractions"),
        (["evaluate", "--scheduler", "tcp://x:1"], "--backend dask"),
        (["study", "--fractions", "a"], "expected numbers"),
        (["factorial", "--regularizers", "lasso"], "Unknown regularizer"),
    ],
)
def test_errors_exit_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--no-progress"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_csv_of_100000_columns_is_refused_within_30_seconds(tmp_path):
    # The command as a user runs it, imports included.
    rng = np.random.default_rng(0)
    header = ",".join([*(f"c{i}" for i in range(100_000)), "label"])
    rows = [
        ",".join(map(str, [*rng.integers(0, 9, 100_000), i % 2])) for i in range(30)
    ]
    (tmp_path / "wide.csv").write_text("\n".join([header, *rows]), encoding="utf-8")
    argv = ["evaluate", "--dataset", str(tmp_path / "wide.csv"), "--target", "label"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cr_sklearn.cli", *argv, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 2, done.stderr[-2000:]
    assert "100,000 feature columns, above the 20,000" in done.stderr
    assert elapsed < 30, f"{elapsed:.1f} s"
    assert not (tmp_path / "out" / "study.csv").exists()


def test_help_documents_defaults():
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    study_help = sub["study"].format_help()
    for option in ("--dataset", "--models", "--fractions", "--repeats", "--n-jobs"):
        assert option in study_help
    assert "dask" in study_help and "--scheduler" in study_help
    assert "quick" in sub["factorial"].format_help()


def test_factorial_command(tmp_path, capsys):
    out = tmp_path / "fact"
    argv = [
        "factorial",
        "--datasets",
        "breast-cancer",
        "--activations",
        "relu",
        "--regularizers",
        "none,dreg",
        "--conditions",
        "clean",
        "--seeds",
        "0",
        "--n-jobs",
        "1",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| breast-cancer | clean | relu |" in printed
    assert "dreg against each regulariser" in printed
    assert (out / "factorial.csv").read_text().count("\n") == 3
    assert (out / "factorial.md").exists()


@pytest.mark.parametrize(
    "argv", [["--help"], ["study", "--help"], ["study", "--no-such-option"]]
)
def test_help_and_argument_errors_do_not_import_torch(argv):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import cr_sklearn.cli as cli\n"
        "try:\n"
        f"    cli.main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.exit(3 if 'torch' in sys.modules else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT)
    assert done.returncode == 0, "torch was imported"


def test_the_package_namespace_loads_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys, cr_sklearn\n"
        "assert 'torch' not in sys.modules\n"
        "assert set(cr_sklearn.__all__) <= set(dir(cr_sklearn))\n"
        "for name in cr_sklearn.__all__:\n"
        "    getattr(cr_sklearn, name)\n"
        "assert cr_sklearn.study.data_fraction_study\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import cr_sklearn

        cr_sklearn.nope  # noqa: B018


def test_version(capsys):
    from cr_sklearn import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"cr-sklearn {__version__}"


def test_every_command_has_a_description(capsys):
    for command in ("study", "evaluate", "factorial"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        usage, _, rest = capsys.readouterr().out.partition("\n\n")
        assert usage.startswith(f"usage: cr-sklearn {command}")
        assert not rest.startswith("options:"), f"{command} --help: no description"


@pytest.mark.parametrize(
    "argv",
    [["evaluate", "--models", "catboost"], ["factorial", "--regularizers", "lasso"]],
)
def test_an_error_shows_the_usage_of_its_command(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err
    assert err.startswith(f"usage: cr-sklearn {argv[0]} ")
    assert f"cr-sklearn {argv[0]}: error:" in err


# -- an ordinary CSV: text columns and missing values (issue 37 item 2) ---------------
def _penguins(tmp_path, n=90):
    import pandas as pd

    rng = np.random.RandomState(0)
    bill = rng.normal(40, 5, n)
    island = rng.choice(["Biscoe", "Dream", "Torgersen"], n)
    frame = pd.DataFrame(
        {
            "bill_mm": bill,
            "island": island,
            "sex": rng.choice(["male", "female", None], n),
            "species": np.where(
                bill + 4 * (island == "Dream") > 41, "Adelie", "Gentoo"
            ),
        }
    )
    frame.loc[[2, 11, 40], "bill_mm"] = np.nan
    path = tmp_path / "penguins.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_csv_with_text_and_missing_values_is_preprocessed(tmp_path, capsys):
    path = _penguins(tmp_path)
    argv = ["evaluate", "--dataset", str(path), "--target", "species"]
    assert main([*argv, "--models", "logreg,rf", "--out", str(tmp_path), *FAST]) == 0
    captured = capsys.readouterr()
    assert "Preprocessing inside each training fold" in captured.err
    assert "one-hot encoded 2 text columns: ['island', 'sex']" in captured.err
    assert "'bill_mm' (3 rows)" in captured.err
    # Dream is informative: one-hot encoded, the models use it.
    assert "| LogisticRegression (reference) | 0.9" in captured.out
    assert "one-hot encoded" in (tmp_path / "study.md").read_text()


def test_the_preprocessing_is_a_step_of_every_model(tmp_path, capsys, monkeypatch):
    import cr_sklearn.study as study

    seen = {}

    def capture(models, X, y, **kwargs):
        seen.update(models=models, X=X)
        raise ValueError("captured")

    monkeypatch.setattr(study, "data_fraction_study", capture)
    argv = ["evaluate", "--dataset", str(_penguins(tmp_path)), "--target", "species"]
    with pytest.raises(SystemExit):
        main([*argv, "--models", "cr,logreg", *FAST])
    assert "captured" in capsys.readouterr().err
    # Fitted inside each training fold, as the first step of each pipeline.
    for model in seen["models"].values():
        assert type(model).__name__ == "Pipeline"
        assert type(model.steps[0][1]).__name__ == "ColumnTransformer"
    assert list(seen["X"].columns) == ["bill_mm", "island", "sex"]


# -- warnings, --cr-param, progress (items 3, 4) ------------------------------------
def _few_values(tmp_path):
    rng = np.random.RandomState(0)
    a = rng.normal(size=60)
    rating = rng.randint(0, 4, size=60)
    lines = ["a,rating,label"] + [
        f"{x},{r},{'yes' if x > 0 else 'no'}" for x, r in zip(a, rating, strict=True)
    ]
    path = tmp_path / "few.csv"
    path.write_text("\n".join(lines))
    return path


def _run_cr(tmp_path, *extra):
    argv = ["evaluate", "--dataset", str(_few_values(tmp_path)), "--target", "label"]
    fast_cr = ["--cr-param", "max_iter=5", "--cr-param", "hidden_layer_sizes=(8,)"]
    return main([*argv, "--models", "cr", *fast_cr, "--out", str(tmp_path), *extra])


def test_cr_params_reach_the_cr_model(tmp_path, monkeypatch, capsys):
    import cr_sklearn.study as study

    seen = {}
    real = study.data_fraction_study

    def capture(models, *args, **kwargs):
        seen["params"] = models["CR"].get_params()
        return real(models, *args, **kwargs)

    monkeypatch.setattr(study, "data_fraction_study", capture)
    assert _run_cr(tmp_path, "--cr-param", "encoding_bins=2", *FAST) == 0
    assert seen["params"]["encoding_bins"] == 2
    assert seen["params"]["hidden_layer_sizes"] == (8,)


def test_warnings_are_shown_once_after_the_fits(tmp_path, capsys):
    # 16 bins on 40 training rows: the encoding warns in every CR fit.
    assert _run_cr(tmp_path, "--cr-param", "encoding_bins=16", *FAST) == 0
    err = capsys.readouterr().err
    assert err.count("Lower encoding_bins") == 1
    assert re.search(r"\(in [123] of 3 fits\)", err)
    assert err.index("Warnings from the fits") > err.index("3 fits")


def test_warnings_name_the_columns(tmp_path, capsys):
    # The CR step sees the CSV's column names: a warning about a column
    # names it as the file does.
    assert _run_cr(tmp_path, "--cr-param", "encoding_bins=16", *FAST) == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "Lower encoding_bins" in x)
    assert "'rating'" in line


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path, capsys):
    fast = ["--folds", "3", "--repeats", "1", "--n-jobs", "1"]  # progress on
    assert _run_cr(tmp_path, *fast) == 0
    err = capsys.readouterr().err
    assert "study: 1/3 fits (33%)" in err and "time left" in err
    assert "study: 3/3 fits in " in err


# -- help and captions (items 5, 6) ---------------------------------------------------
def test_help_texts_say_what_the_table_shows():
    sub = build_parser()._subparsers._group_actions[0].choices
    evaluate = sub["evaluate"].format_help()
    assert "%%" not in evaluate and "100% only" in evaluate
    assert "Holm-corrected" not in evaluate
    assert "unadjusted p-values" in " ".join(evaluate.split())
    assert "150 fits" in evaluate and "750" not in evaluate
    study = " ".join(sub["study"].format_help().split())
    assert "750 fits" in study and "unadjusted p-values" in study
    assert "--cr-param KEY=VALUE" in study and "--no-preprocess" in study


def test_one_fraction_and_one_model_are_singular(capsys):
    assert main(["evaluate", "--models", "logreg", *FAST]) == 0
    captured = capsys.readouterr()
    assert "1 model x 1 fraction x 1x3 CV = 3 fits" in captured.err
    assert "fit time: mean seconds per fit, at 100% of each training fold" in (
        captured.out
    )


def test_evaluate_draws_a_plot_for_one_fraction(tmp_path, capsys, monkeypatch):
    import matplotlib.pyplot as plt

    from cr_sklearn.study import StudyDisplay

    drawn = {}
    real = StudyDisplay.from_result

    def keep(*args, **kwargs):
        drawn["display"] = display = real(*args, **kwargs)
        monkeypatch.setattr(display.figure_, "clf", lambda: None)
        return display

    monkeypatch.setattr(StudyDisplay, "from_result", keep)
    monkeypatch.setattr(plt, "close", lambda *a: None)
    argv = ["evaluate", "--dataset", "breast-cancer", "--models", "logreg,svc,rf"]
    assert main([*argv, "--out", str(tmp_path), *FAST]) == 0
    display = drawn["display"]
    title = display.figure_.get_suptitle()
    assert "at 100% of each training fold" in title and "nested" not in title
    # A row per model, the score on the x axis: no fraction axis.
    rows = {t.get_text(): t.get_position()[1] for t in display.ax_.get_yticklabels()}
    assert set(rows) == {"LogisticRegression (reference)", "SVC", "RandomForest"}
    assert max(rows, key=rows.get) == "LogisticRegression (reference)"  # on top
    assert display.ax_.get_xlabel() == "accuracy"
    assert "Fraction" not in display.diff_ax_.get_xlabel()
    low, high = display.ax_.get_xlim()
    means = [line.get_xdata()[0] for line in display.lines_.values()]
    assert low < min(means) and max(means) < high
    plt.close("all")
    caption = (tmp_path / "study.md").read_text()
    assert "Fit time: mean seconds per fit, at 100% of each training fold" in caption


# -- Ctrl-C: the study stops, the earlier result set stays whole ------------------
def _ctrl_c_run(out, *extra):
    argv = ["study", "--dataset", "breast-cancer", "--models", "logreg"]
    return main([*argv, "--fractions", "1", "--out", str(out), *FAST, *extra])


def _files(out):
    return {p.name: p.read_bytes() for p in sorted(Path(out).iterdir())}


@pytest.fixture
def earlier_run(tmp_path, capsys):
    """The folder of a finished run and its files' bytes."""
    out = tmp_path / "out"
    assert _ctrl_c_run(out) == 0
    capsys.readouterr()
    files = _files(out)
    assert sorted(files) == ["study.csv", "study.md", "study.png"]
    return out, files


def test_ctrl_c_in_a_fit_stops_the_study_and_writes_nothing(
    earlier_run, monkeypatch, capsys
):
    import signal

    from sklearn.linear_model import LogisticRegression
    from skorch.callbacks import Callback

    from cr_sklearn import CRClassifier

    class CtrlC(Callback):
        def on_epoch_end(self, net, **kwargs):
            if len(net.history) == 2:
                signal.raise_signal(signal.SIGINT)

    # The CR fit catches the interrupt and returns a model of one epoch, as
    # a fit on its own does; the study must not score it.
    models = {
        "LogisticRegression": LogisticRegression(),
        "CR": CRClassifier((8,), max_iter=5, early_stopping=False, callbacks=[CtrlC()]),
    }
    monkeypatch.setattr("cr_sklearn.cli._select_models", lambda requested: models)
    out, before = earlier_run
    assert _ctrl_c_run(out, "--random-state", "1") == 130
    captured = capsys.readouterr()
    assert "Interrupted" in captured.err and "Wrote" not in captured.out
    assert _files(out) == before


def test_ctrl_c_while_writing_leaves_the_earlier_set(earlier_run, monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    # The CSV is written first, the plot second.
    monkeypatch.setattr("cr_sklearn.cli._save_plot", interrupted)
    out, before = earlier_run
    assert _ctrl_c_run(out, "--random-state", "1") == 130
    assert _files(out) == before  # no hidden folder left either
    # Into an empty folder: nothing at all.
    assert _ctrl_c_run(out.parent / "new", "--random-state", "1") == 130
    assert _files(out.parent / "new") == {}


def test_ctrl_c_while_the_files_are_replaced_waits_for_the_whole_set(
    earlier_run, monkeypatch, capsys
):
    import os
    import signal

    out, before = earlier_run
    assert _ctrl_c_run(out.parent / "reference", "--random-state", "1") == 0
    reference = _files(out.parent / "reference")
    replace = os.replace

    def replace_then_ctrl_c(src, dst):
        replace(src, dst)
        signal.raise_signal(signal.SIGINT)  # after the first file moved

    monkeypatch.setattr(os, "replace", replace_then_ctrl_c)
    assert _ctrl_c_run(out, "--random-state", "1") == 130
    monkeypatch.undo()
    after = _files(out)
    assert sorted(after) == sorted(before)
    assert all(after[name] != before[name] for name in before)  # all new

    def scores(text):  # the rows without their times
        return [row.split(",")[:-2] for row in text.decode().splitlines()]

    assert scores(after["study.csv"]) == scores(reference["study.csv"])
    assert after["study.png"] == reference["study.png"]


def test_an_error_while_the_files_are_replaced_puts_the_earlier_ones_back(
    earlier_run, monkeypatch, capsys
):
    import os

    out, before = earlier_run
    replace, calls = os.replace, []

    def fails_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(dst))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", fails_second)
    with pytest.raises(SystemExit):
        _ctrl_c_run(out, "--random-state", "1")
    monkeypatch.undo()
    assert "No space left on device" in capsys.readouterr().err
    assert _files(out) == before
