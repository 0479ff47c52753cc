"""Plain-Python and NumPy references of the library's ops, written from the papers and
shared by the tests of the ops and of the agents built on them."""

import math

import numpy as np


def c51_project(z, tz, p):
    """The C51 projection of probabilities ``p`` at the shifted atoms ``tz`` onto the
    support ``z``: Algorithm 1 of Bellemare et al. (2017), one row, with the l == u case
    fixed."""
    k = len(z)
    v_min, v_max = float(z[0]), float(z[-1])
    dz = (v_max - v_min) / (k - 1)
    out = np.zeros(k)
    for j in range(k):
        t = min(max(float(tz[j]), v_min), v_max)
        b = (t - v_min) / dz
        lo, up = math.floor(b), math.ceil(b)
        if lo == up:
            out[lo] += p[j]
        else:
            out[lo] += p[j] * (up - b)
            out[up] += p[j] * (b - lo)
    return out


def softmax(x):
    m = max(x)
    e = [math.exp(v - m) for v in x]
    s = sum(e)
    return np.array([v / s for v in e])


def q_lambda_returns(r, next_q, terminated, truncated, gamma, lam):
    """Peng's Q(lambda) returns ``[T, N]`` backwards in time: a terminal step's reward; a
    truncated or last step's bootstraps from ``next_q``; otherwise ``r + gamma ((1 - lam)
    next_q + lam G')``."""
    T, N = np.shape(r)
    G = np.zeros((T, N))
    for n in range(N):
        for t in reversed(range(T)):
            if terminated[t, n]:
                G[t, n] = r[t, n]
            elif truncated[t, n] or t == T - 1:
                G[t, n] = r[t, n] + gamma * next_q[t, n]
            else:
                G[t, n] = r[t, n] + gamma * ((1 - lam) * next_q[t, n] + lam * G[t + 1, n])
    return G


def hl_gauss_target(y, lo, hi, k, sigma):
    """The HL-Gauss histogram of target ``y`` over ``k`` bins of ``[lo, hi]``: a normal
    of scale ``sigma`` at ``y`` (clipped into the range), its mass per bin, renormalized."""
    edges = [lo + (hi - lo) * i / k for i in range(k + 1)]
    y = min(max(y, lo), hi)
    cdf = [0.5 * (1 + math.erf((e - y) / (math.sqrt(2) * sigma))) for e in edges]
    z = cdf[-1] - cdf[0]
    return [(cdf[i + 1] - cdf[i]) / z for i in range(k)]


def quantile_huber(theta, taus, targets, kappa):
    """sum_i mean_j |tau_i - 1{u_ij < 0}| L_kappa(u_ij) / kappa, u_ij = y_j - theta_i."""
    total = 0.0
    for i in range(len(theta)):
        row = 0.0
        for j in range(len(targets)):
            u = float(targets[j]) - float(theta[i])
            if kappa == 0:
                rho = abs(u)
            elif abs(u) <= kappa:
                rho = 0.5 * u * u / kappa
            else:
                rho = abs(u) - 0.5 * kappa
            row += abs(float(taus[i]) - (1.0 if u < 0 else 0.0)) * rho
        total += row / len(targets)
    return total


def iqm(values):
    """The interquartile mean: the mean of the sorted values with the lowest and highest
    quarter (``floor(n / 4)`` each) dropped."""
    ordered = sorted(float(v) for v in np.ravel(values))
    cut = len(ordered) // 4
    middle = ordered[cut : len(ordered) - cut]
    return sum(middle) / len(middle)


def percentile(values, q):
    """Linear interpolation between the closest ranks (numpy's default method)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap_iqm_interval(values, reps, seed=0):
    """The 95% percentile interval of the IQM of ``reps`` resamples of one task's runs
    ``values`` ``[runs]``, each drawn with replacement, one resample at a time; the draws
    are ``jaxrl.stats``'s (``default_rng(seed).integers(0, runs, (reps, runs, 1))``)."""
    runs = len(values)
    rows = np.random.default_rng(seed).integers(0, runs, size=(reps, runs, 1))
    resampled = [iqm([values[rows[r, i, 0]] for i in range(runs)]) for r in range(reps)]
    return percentile(resampled, 2.5), percentile(resampled, 97.5)
