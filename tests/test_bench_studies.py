"""The studies' configurations (``benchmarks/bench_studies.py``) on tiny inputs."""

import numpy as np
from conftest import load_benchmark

run = load_benchmark("run")
studies = load_benchmark("bench_studies")


def test_the_rows_below_the_lowest_other_family_are_told_apart():
    medians = {
        'CR poly, dreg="stream"': 1.6,
        'CR poly, dreg="stream", no encoding': 1.2,
        'CR poly, dreg="local"': 1.8,
        "MLPClassifier(64,64)": 1.7,
        "SVC (RBF)": 1.75,
    }
    lines = studies.restate_claim(medians)
    assert lines[0].startswith("The papers state that CR networks keep tau in")
    assert "CR networks 1.20-1.80; the other families 1.70-1.75." in lines[0]
    # Row names hold commas: the list of them is separated by semicolons.
    assert lines[1].endswith(
        'CR rows below it: CR poly, dreg="stream"; CR poly, dreg="stream", no encoding.'
    )


def test_every_cr_row_below_the_others_is_said_so():
    lines = studies.restate_claim({"CR poly, a": 1.2, "CR poly, b": 1.3, "SVC": 1.7})
    assert lines[1] == (
        "Every CR network's tau is below every other family's, but none is "
        "within [1.01, 1.02]."
    )


def test_quintiles_split_values_in_five_equal_groups():
    q = studies.quintiles(np.arange(100.0))
    assert np.bincount(q).tolist() == [20] * 5 and q[0] == 0 and q[-1] == 4


def test_the_core_tau_rows_leave_the_extra_ones_out():
    core = studies.tau_models(core=True)
    assert not set(core) & set(studies.EXTRA_TAU_ROWS)
    assert set(studies.EXTRA_TAU_ROWS) <= set(studies.tau_models())


def test_pima_pairs_every_baseline_with_cr(monkeypatch, tmp_path, capsys):
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression

    models = {
        "CRClassifier (raw X)": LogisticRegression(max_iter=500),
        "Dummy": DummyClassifier(),
    }
    monkeypatch.setattr(studies, "pima_models", lambda: models)
    output = tmp_path / "pima.md"
    run.main(["pima", "--repeats", "1", "--n-jobs", "1", "--output", str(output)])
    text = output.read_text()
    assert "Command: `python benchmarks/run.py pima --repeats 1" in text
    assert "RepeatedStratifiedKFold(5 x 1, random_state=0)" in text
    row = next(line for line in text.splitlines() if line.startswith("| Dummy | +"))
    difference, se, p = (float(c) for c in row.strip("|").split("|")[1:])
    assert difference > 5 and se > 0 and 0 <= p < 0.05


def test_the_fraction_study_rebuilds_from_its_records(monkeypatch, tmp_path):
    import pandas as pd

    from cr_sklearn.study import StudyResult

    class Result:
        def to_markdown(self, reference, test, details):
            return f"table of {reference} by {test}"

    read = []
    monkeypatch.setattr(pd, "read_csv", lambda path: read.append(path))
    monkeypatch.setattr(StudyResult, "from_frame", staticmethod(lambda f: Result()))
    output = tmp_path / "fraction.md"
    run.main(["fraction", "--from-csv", "records.csv", "--output", str(output)])
    text = output.read_text()
    assert read == ["records.csv"]
    assert "table of CR by corrected_t" in text and "table of CR by wilcoxon" in text
    assert "results from the records in records.csv" in text


def _two_folds(y, repeats):
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(2, shuffle=True, random_state=0)
    return list(folds.split(np.zeros(len(y)), y))


def test_reliability_reports_the_quintiles_of_pima(monkeypatch, tmp_path):
    monkeypatch.setattr(studies, "_folds", _two_folds)
    output = tmp_path / "reliability.md"
    argv = ["reliability", "--n-jobs", "1", "--skip-sst5", "--output", str(output)]
    run.main(argv)
    text = output.read_text()
    assert "### Pima, CRClassifier (defaults)" in text
    quintiles = [
        line.split("|")[1].strip()
        for line in text.splitlines()
        if line.startswith("| Q")
    ]
    assert quintiles == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert "SST-5" not in text
