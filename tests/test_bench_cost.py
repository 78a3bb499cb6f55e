"""benchmarks/bench_cost.py: the previous defaults it times against, its
summary, and one fit of each recipe."""

import numpy as np
from conftest import load_benchmark

from cr_sklearn import CRClassifier

cost = load_benchmark("bench_cost")

# Parameters that do not shape a fit (threads, seed, output, device).
RUNTIME = {"n_threads", "random_state", "verbose", "device", "warm_start", "callbacks"}


def test_the_previous_defaults_are_complete_and_differ_only_where_changed():
    current = CRClassifier().get_params()
    assert set(cost.PREVIOUS_DEFAULTS) == set(current) - RUNTIME
    changed = {k for k, v in cost.PREVIOUS_DEFAULTS.items() if current[k] != v}
    assert changed == {"encoding_bins", "dropout"}
    previous = cost.recipes()["previous"](0)
    assert previous.get_params()["encoding_bins"] is None
    assert previous.get_params()["dropout"] == 0.1


def test_the_summary_is_the_median_over_tables_of_the_medians():
    per_table = {
        "a": {"previous": [1.0, 3.0, 2.0], "current": [2.0, 2.0, 2.0]},
        "b": {"previous": [4.0], "current": [6.0]},
        "c": {"previous": [1.0], "current": [5.0]},
    }
    rows, medians, ratio = cost.summarise(per_table)
    assert [r[3] for r in rows] == [1.0, 1.5, 5.0]
    assert medians == {"previous": 2.0, "current": 5.0}
    assert ratio == 2.5


def test_each_recipe_is_timed_on_the_same_data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    times = cost.time_fits(X, y, repeats=2)
    assert set(times) == {"previous", "current"}
    assert all(len(v) == 2 and min(v) > 0 for v in times.values())
