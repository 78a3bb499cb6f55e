"""Tests of the cr-sklearn command line."""

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
