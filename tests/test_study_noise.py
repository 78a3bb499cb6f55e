import numpy as np
import pytest

from cr_sklearn.study import add_gaussian_noise, corrupt_labels


def test_corrupt_labels_changes_exactly_the_rate_to_other_classes():
    y = np.repeat(["a", "b", "c"], 100)
    y_bad = corrupt_labels(y, 0.4, random_state=0)
    assert (y_bad != y).sum() == 120
    assert set(np.unique(y_bad)) == {"a", "b", "c"}
    assert y[0] == "a"  # input untouched


def test_corrupt_labels_draws_all_other_classes():
    y = np.zeros(3000, dtype=int)
    y[:3] = [1, 2, 3]
    y_bad = corrupt_labels(y, 1.0, random_state=0)
    changed_from_zero = y_bad[3:]
    counts = np.bincount(changed_from_zero, minlength=4)
    assert counts[0] == 0
    assert counts[1:].min() > 900  # ~1/3 each


def test_corrupt_labels_reproducible_and_identity_at_zero():
    y = np.repeat([0, 1], 50)
    np.testing.assert_array_equal(
        corrupt_labels(y, 0.3, random_state=1), corrupt_labels(y, 0.3, random_state=1)
    )
    np.testing.assert_array_equal(corrupt_labels(y, 0.0, random_state=1), y)


@pytest.mark.parametrize("rate", [-0.1, 1.5, "x"])
def test_corrupt_labels_rejects_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        corrupt_labels([0, 1], rate)


def test_corrupt_labels_needs_two_classes():
    with pytest.raises(ValueError, match="2 classes"):
        corrupt_labels([1, 1, 1], 0.5)


@pytest.mark.parametrize("snr_db", [-10.0, 0.0, 20.0])
def test_gaussian_noise_has_the_requested_snr(snr_db):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20000, 3)) * [1.0, 5.0, 0.1] + [0, 100, -3]
    noise = add_gaussian_noise(X, snr_db, random_state=0) - X
    snr = 10 * np.log10(X.var(axis=0) / noise.var(axis=0))
    np.testing.assert_allclose(snr, snr_db, atol=0.15)
    assert abs(noise.mean()) < 0.1 * noise.std()


def test_gaussian_noise_skips_constant_features_and_is_reproducible():
    X = np.column_stack([np.ones(50), np.arange(50.0)])
    noisy = add_gaussian_noise(X, -10, random_state=3)
    np.testing.assert_array_equal(noisy[:, 0], 1.0)
    np.testing.assert_array_equal(noisy, add_gaussian_noise(X, -10, random_state=3))
    assert not np.array_equal(noisy, X)


@pytest.mark.parametrize("snr_db", [np.inf, np.nan, "10"])
def test_gaussian_noise_rejects_bad_snr(snr_db):
    with pytest.raises(ValueError, match="snr_db"):
        add_gaussian_noise(np.ones((3, 2)), snr_db)
