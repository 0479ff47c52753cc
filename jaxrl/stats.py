"""Aggregate statistics over many runs (Agarwal et al. 2021, "Deep Reinforcement Learning
at the Edge of the Statistical Precipice", NeurIPS; the ``rliable`` library).

Host-side NumPy, pure functions of a score array ``[runs]`` (one task) or ``[runs,
tasks]`` (float64 on the way in):

* ``iqm``: the interquartile mean, the mean of the middle 50% of all scores (runs and
  tasks pooled): sorted, the lowest and highest ``floor(n / 4)`` of the ``n`` scores
  dropped (``scipy.stats.trim_mean(scores, 0.25, axis=None)``, as rliable's
  ``aggregate_iqm``). Robust to outlier runs, less noisy than the median.
* ``stratified_bootstrap``: statistics of ``reps`` resamples in which each task's runs
  are drawn with replacement from that task's own runs (strata = tasks), as rliable's
  ``StratifiedBootstrap``; ``interval_estimate``: the point estimate and its percentile
  confidence interval from those resamples (rliable's default method, ``percentile``,
  95%, 50,000 replications for aggregate metrics and 2,000 for profiles).
* ``curve_interval``: a learning curve's statistic over runs at each step ``[runs,
  steps]`` with its percentile band, each resample drawing whole runs (all their steps
  together) with replacement, as rliable's sample-efficiency curves (one task: the
  stratified bootstrap is over runs), 2,000 replications.
* ``wilcoxon_signed_rank``: the exact two-sided p-value of paired differences (one
  run's score under two settings, seed by seed; Wilcoxon 1945), by enumerating every
  sign pattern of the ranks (``scipy.stats.wilcoxon(d, method="exact")`` without ties).
* ``performance_profile``: for each threshold ``tau``, the fraction of runs (over all
  tasks) whose score is strictly above ``tau`` (rliable's ``run_score_deviation``, the
  paper's "score distribution").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

IQM_REPS = 50_000  # rliable's get_interval_estimates default
PROFILE_REPS = 2_000  # rliable's create_performance_profile default
CURVE_REPS = 2_000  # per learning curve: a statistic at every step of every resample


def _runs_by_tasks(scores: ArrayLike) -> np.ndarray:
    x = np.asarray(scores, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"scores must be [runs] or [runs, tasks], non-empty; got {x.shape}")
    return x


def iqm(scores: ArrayLike, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """The interquartile mean: the mean of the sorted scores with the lowest and highest
    ``floor(n / 4)`` of the ``n`` removed (25% trimmed mean).

    ``axis`` None pools every entry (a float64 scalar); an int or tuple pools those axes
    and keeps the others (so ``iqm(x [reps, runs, tasks], axis=(1, 2))`` is ``[reps]``).
    """
    x = np.asarray(scores, np.float64)
    axes = tuple(range(x.ndim)) if axis is None else np.atleast_1d(axis).tolist()
    axes = tuple(a % x.ndim for a in axes)
    kept = [a for a in range(x.ndim) if a not in axes]
    x = np.transpose(x, (*kept, *axes)).reshape(*(x.shape[a] for a in kept), -1)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("iqm of no scores")
    cut = n // 4
    return np.sort(x, axis=-1)[..., cut : n - cut].mean(axis=-1)


def stratified_bootstrap(
    scores: ArrayLike,
    statistic: Callable[[np.ndarray], ArrayLike],
    reps: int = IQM_REPS,
    seed: int = 0,
) -> np.ndarray:
    """``statistic`` of ``reps`` stratified resamples: ``[reps, ...]``.

    Each resample ``[runs, tasks]`` draws, for each task independently, ``runs`` runs
    with replacement from that task's runs. ``statistic`` is called once on all resamples
    stacked, ``[reps, runs, tasks]``, and returns ``[reps, ...]``.
    """
    x = _runs_by_tasks(scores)
    runs, tasks = x.shape
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, runs, size=(reps, runs, tasks))
    resampled = x[rows, np.arange(tasks)[None, None, :]]
    return np.asarray(statistic(resampled), np.float64)


class Interval(NamedTuple):
    """A point estimate and its confidence interval ``[lower, upper]`` (arrays of the
    statistic's shape; floats for a scalar statistic)."""

    point: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def interval_estimate(
    scores: ArrayLike,
    statistic: Callable[[np.ndarray], ArrayLike] | None = None,
    reps: int = IQM_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``statistic`` of ``scores`` and its stratified-bootstrap percentile CI.

    ``statistic`` maps ``[reps, runs, tasks]`` to ``[reps, ...]``; default the IQM over
    runs and tasks. The interval holds the ``(1 - confidence) / 2`` and ``(1 + confidence)
    / 2`` quantiles (linear interpolation) of the ``reps`` resampled statistics.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    statistic = statistic or (lambda x: iqm(x, axis=(1, 2)))
    x = _runs_by_tasks(scores)
    point = np.asarray(statistic(x[None]), np.float64)[0]
    samples = stratified_bootstrap(x, statistic, reps, seed)
    tail = 100.0 * (1.0 - confidence) / 2.0
    lower, upper = np.percentile(samples, [tail, 100.0 - tail], axis=0)
    return Interval(point, lower, upper)


def curve_interval(
    values: ArrayLike,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    reps: int = CURVE_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """A curve's ``statistic`` over runs at each step and its bootstrap percentile band.

    ``values`` ``[runs, steps]``; ``statistic`` maps ``[..., runs, steps]`` to ``[...,
    steps]`` (default the IQM over runs). Each of the ``reps`` resamples draws ``runs``
    whole runs with replacement (``default_rng(seed).integers(0, runs, (reps, runs))``);
    the band holds the ``(1 -+ confidence) / 2`` quantiles of the resampled statistics at
    each step. Returns ``[steps]`` float64 arrays.
    """
    x = np.asarray(values, np.float64)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"values must be [runs, steps], non-empty; got {x.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    statistic = statistic or (lambda v: iqm(v, axis=-2))
    runs, steps = x.shape
    rows = np.random.default_rng(seed).integers(0, runs, size=(reps, runs))
    chunk = max(1, 2**24 // (reps * runs))  # at most 16M resampled values at once
    samples = np.concatenate(
        [statistic(x[:, i : i + chunk][rows]) for i in range(0, steps, chunk)], axis=-1
    )
    tail = 100.0 * (1.0 - confidence) / 2.0
    lower, upper = np.percentile(samples, [tail, 100.0 - tail], axis=0)
    return Interval(np.asarray(statistic(x), np.float64), lower, upper)


def performance_profile(scores: ArrayLike, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """``[len(taus)]`` float64: for each ``tau``, the fraction of all runs of all tasks
    whose score is strictly above ``tau``. ``scores`` may carry leading resample axes:
    ``[..., runs, tasks]`` -> ``[..., len(taus)]``."""
    x = np.asarray(scores, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    taus = np.asarray(taus, np.float64)
    above = x[..., None] > taus  # [..., runs, tasks, taus]
    return above.mean(axis=(-3, -2))


def performance_profile_interval(
    scores: ArrayLike,
    taus: Sequence[float] | np.ndarray,
    reps: int = PROFILE_REPS,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``performance_profile`` with its stratified-bootstrap percentile CI per ``tau``."""
    statistic = lambda x: performance_profile(x, taus)
    return interval_estimate(scores, statistic, reps, confidence, seed)


MAX_EXACT_PAIRS = 20  # 2^20 sign patterns


def wilcoxon_signed_rank(differences: ArrayLike) -> tuple[float, float]:
    """``(W+, p)`` of the Wilcoxon signed-rank test of paired ``differences`` ``[n]``.

    Zero differences are dropped (Wilcoxon's convention); the others are ranked by
    absolute value (ties get their mean rank), ``W+`` is the sum of the ranks of the
    positive ones, and ``p`` the exact two-sided probability, under the null hypothesis
    that each sign is + or - with probability 1/2 independently, of a ``W+`` at least as
    far from its mean ``sum(ranks) / 2`` as the one observed. At most
    ``MAX_EXACT_PAIRS`` non-zero pairs (ValueError otherwise); ``p`` is 1 with none.
    """
    d = np.asarray(differences, np.float64).ravel()
    d = d[d != 0]
    n = len(d)
    if n > MAX_EXACT_PAIRS:
        raise ValueError(f"exact test of at most {MAX_EXACT_PAIRS} pairs, got {n}")
    if n == 0:
        return 0.0, 1.0
    a = np.abs(d)
    ranks = np.array([((a < x).sum() + (a <= x).sum() + 1) / 2.0 for x in a])
    observed = float(ranks[d > 0].sum())
    signs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # [2^n, n]: every sign pattern
    everything = signs @ ranks
    centre = ranks.sum() / 2.0
    p = np.mean(np.abs(everything - centre) >= abs(observed - centre) - 1e-9)
    return observed, float(p)
