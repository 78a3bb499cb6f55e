"""``cr-sklearn compare``: several tables, tests named, a rerun resumes."""

import numpy as np
import pytest

from cr_sklearn.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

FAST = ["--folds", "2", "--repeats", "1", "--n-jobs", "1", "--no-progress"]


def _csvs(folder, n=3):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        X = rng.normal(size=(60 + 10 * i, 3))
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        frame["colour"] = rng.choice(["red", "blue"], size=len(frame))
        frame["label"] = np.where(X[:, 0] + 0.5 * rng.normal(size=len(X)) > 0, "y", "n")
        frame.loc[::9, "b"] = np.nan
        frame.to_csv(folder / f"table{i}.csv", index=False)
    return sorted(folder.glob("*.csv"))


def test_compare_writes_csv_markdown_png_and_resumes(tmp_path, capsys):
    paths = _csvs(tmp_path / "data")
    out = tmp_path / "run"
    argv = ["compare", *(a for p in paths for a in ("--dataset", str(p)))]
    argv += ["--target", "label", "--models", "logreg,rf,svc", "--out", str(out)]
    assert main([*argv, *FAST]) == 0
    captured = capsys.readouterr()
    for name in (
        "Friedman test",
        "Holm's step-down",
        "Nemenyi post-hoc test",
        "Wins / ties / losses",
        "Bayesian signed-rank",
    ):
        assert name in captured.out
    assert "18 fits in" in captured.err and "0 read from the cache" in captured.err
    frame = pd.read_csv(out / "compare.csv")
    assert len(frame) == 3 * 3 * 2 and set(frame["table"]) == {
        "table0",
        "table1",
        "table2",
    }
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "compare.md").read_text()
    assert report.startswith("# Comparison on 3 tables")
    assert "![critical differences](compare.png)" in report
    assert len(list((out / "cache").glob("*/*.json"))) == 18
    # the same command again: every fit from the cache, the same records
    assert main([*argv, *FAST]) == 0
    assert "0 fits in" in capsys.readouterr().err
    again = pd.read_csv(out / "compare.csv")
    cols = ["table", "model", "split", "metric", "value"]
    assert again[cols].equals(frame[cols])


def test_compare_reads_a_folder_and_fractions(tmp_path, capsys):
    _csvs(tmp_path / "data", n=2)
    out = tmp_path / "run"
    argv = [
        "compare",
        "--dataset-dir",
        str(tmp_path / "data"),
        "--target",
        "label",
        "--models",
        "logreg,rf,svc",
        "--fractions",
        "0.5,1",
        "--out",
        str(out),
    ]
    assert main([*argv, *FAST]) == 0
    assert (out / "compare_curves.png").exists()
    assert "fraction" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, match",
    [
        ([], "Name the tables"),
        (["--dataset-dir", "nowhere"], "not a folder"),
        (["--dataset", "missing.csv", "--target", "y"], "No such file"),
        (
            ["--dataset", "pima", "--cr-param", "max_iter=2", "--models", "logreg"],
            "leaves out",
        ),
    ],
)
def test_compare_refuses_bad_options(tmp_path, capsys, extra, match):
    with pytest.raises(SystemExit):
        main(["compare", *extra, "--out", str(tmp_path / "o"), *FAST])
    assert match in capsys.readouterr().err


def test_compare_named_datasets_need_no_target(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "compare",
        "--dataset",
        "pima",
        "--dataset",
        "breast-cancer",
        "--models",
        "logreg,svc",
        "--out",
        str(out),
        *FAST,
    ]
    assert main(argv) == 0
    assert set(pd.read_csv(out / "compare.csv")["table"]) == {"pima", "breast-cancer"}
    # two models: Friedman needs three, the report says so
    assert "not run" in (out / "compare.md").read_text()
