"""jaxrl.stats against slow references written from Agarwal et al. 2021's definitions:
IQM (the mean of the middle half of the sorted scores), the stratified bootstrap (each
task's runs resampled from that task alone) with its percentile interval, and the
performance profile (the fraction of runs scoring above tau)."""

import numpy as np
import pytest

from jaxrl import stats
from tests.references import iqm as iqm_reference
from tests.references import percentile as percentile_reference


def test_iqm_is_the_mean_of_the_middle_half():
    import scipy.stats  # here, not at collection (1.5 s in each pytest-xdist worker)

    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 4, 5, 7, 8, 13, 32):
        x = rng.normal(size=n) * 100
        assert stats.iqm(x) == pytest.approx(iqm_reference(x), rel=1e-12)
        assert stats.iqm(x) == pytest.approx(scipy.stats.trim_mean(x, 0.25), rel=1e-12)
    # Eight runs: the two lowest and two highest are dropped, whatever their size.
    assert stats.iqm([-1e9, 1, 2, 3, 4, 5, 6, 1e9]) == pytest.approx(3.5)
    # Runs and tasks are pooled; ``axis`` keeps the other axes.
    x = rng.normal(size=(3, 10, 4))
    assert stats.iqm(x[0]) == pytest.approx(iqm_reference(x[0]))
    np.testing.assert_allclose(stats.iqm(x, axis=(1, 2)), [iqm_reference(r) for r in x])
    per_task = [[iqm_reference(x[i, :, t]) for t in range(4)] for i in range(3)]
    np.testing.assert_allclose(stats.iqm(x, axis=1), per_task)


def test_stratified_bootstrap_and_interval_match_the_slow_loops():
    rng = np.random.default_rng(1)
    runs, tasks, reps = 7, 3, 200
    # Tasks with disjoint score ranges: a resample that mixed tasks would show it.
    x = rng.uniform(size=(runs, tasks)) + 10.0 * np.arange(tasks)
    samples = stats.stratified_bootstrap(x, lambda s: s, reps=reps, seed=3)
    assert samples.shape == (reps, runs, tasks)
    for t in range(tasks):
        assert set(samples[:, :, t].ravel()) <= set(x[:, t])
    # The same draws, resample by resample, in loops.
    rows = np.random.default_rng(3).integers(0, runs, size=(reps, runs, tasks))
    expected = [
        iqm_reference([[x[rows[r, i, t], t] for t in range(tasks)] for i in range(runs)])
        for r in range(reps)
    ]
    got = stats.interval_estimate(x, reps=reps, seed=3, confidence=0.9)
    assert float(got.point) == pytest.approx(iqm_reference(x))
    assert float(got.lower) == pytest.approx(percentile_reference(expected, 5.0))
    assert float(got.upper) == pytest.approx(percentile_reference(expected, 95.0))
    assert got.lower <= got.point <= got.upper


def test_interval_of_identical_runs_is_a_point_and_narrows_with_more_runs():
    same = stats.interval_estimate(np.full(16, 475.0), reps=500)
    assert same.point == same.lower == same.upper == 475.0
    rng = np.random.default_rng(2)
    few = stats.interval_estimate(rng.normal(size=8), reps=2000)
    many = stats.interval_estimate(rng.normal(size=512), reps=2000)
    assert many.upper - many.lower < (few.upper - few.lower) / 3


def test_performance_profile_counts_runs_above_tau():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 5, size=(9, 2)).astype(float)  # ties with tau on purpose
    taus = np.array([-1.0, 0.0, 1.5, 2.0, 4.0, 9.0])
    expected = [sum(v > tau for v in x.ravel()) / x.size for tau in taus]
    np.testing.assert_allclose(stats.performance_profile(x, taus), expected)
    one_task = [sum(v > tau for v in x[:, 0]) / 9 for tau in taus]
    np.testing.assert_allclose(stats.performance_profile(x[:, 0], taus), one_task)
    profile = stats.performance_profile_interval(x, taus, reps=300)
    np.testing.assert_allclose(profile.point, expected)
    assert np.all(profile.lower <= profile.point) and np.all(profile.point <= profile.upper)
    assert profile.lower[0] == profile.upper[0] == 1.0 and profile.upper[-1] == 0.0


def test_wilcoxon_signed_rank_is_scipys_exact_test():
    """Against scipy's exact test (no ties), and by hand: five positive differences give
    W+ = 15 and p = 2 / 32 (only all-plus and all-minus are as extreme)."""
    import scipy.stats  # here, not at collection

    rng = np.random.default_rng(0)
    for n in (5, 9, 16):
        d = rng.normal(0.3, 1.0, n)
        w, p = stats.wilcoxon_signed_rank(d)
        ref = scipy.stats.wilcoxon(d, method="exact")
        assert p == pytest.approx(ref.pvalue, rel=1e-9)
        assert w == pytest.approx(n * (n + 1) / 2 - ref.statistic) or w == ref.statistic
    assert stats.wilcoxon_signed_rank([0.1, 0.2, 0.05, 0.17, 0.3]) == (15.0, 0.0625)
    # ties share their mean rank; zeros are dropped
    w, p = stats.wilcoxon_signed_rank([1.0, -1.0, 2.0, 0.0])
    assert w == 1.5 + 3.0 and p == 6 / 8  # |W+ - 3| >= 1.5 in 6 of the 8 patterns
    assert stats.wilcoxon_signed_rank([]) == (0.0, 1.0)
    with pytest.raises(ValueError, match="at most 20"):
        stats.wilcoxon_signed_rank(np.ones(21))


def test_curve_interval_resamples_whole_runs_like_the_slow_loop():
    from tests import references

    rng = np.random.default_rng(5)
    runs, steps, reps = 6, 4, 300
    x = rng.normal(size=(runs, steps)) * 10 + np.arange(steps)
    got = stats.curve_interval(x, reps=reps, seed=2)
    np.testing.assert_allclose(got.point, [references.iqm(x[:, t]) for t in range(steps)])
    rows = np.random.default_rng(2).integers(0, runs, size=(reps, runs))
    for t in range(steps):
        resampled = [references.iqm([x[rows[r, i], t] for i in range(runs)]) for r in range(reps)]
        assert got.lower[t] == pytest.approx(references.percentile(resampled, 2.5))
        assert got.upper[t] == pytest.approx(references.percentile(resampled, 97.5))
    # The mean, and a resample takes a run's steps together: two runs, one always above.
    mean = stats.curve_interval(x, lambda v: v.mean(axis=-2), reps=reps, seed=2)
    np.testing.assert_allclose(mean.point, x.mean(axis=0))
    pair = stats.curve_interval([[0.0, 0.0], [1.0, 3.0]], lambda v: v.mean(axis=-2), reps=reps)
    draws = np.random.default_rng(0).integers(0, 2, size=(reps, 2)).sum(axis=1) / 2
    assert pair.lower[1] == pytest.approx(3 * np.percentile(draws, 2.5))
    assert pair.upper[1] == pytest.approx(3 * np.percentile(draws, 97.5))
