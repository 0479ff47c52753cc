"""Running mean and variance (observation normalization) and reward scaling.

``RunningMeanStd`` holds the count, mean and (population) variance of everything seen so
far; ``update_running_stats`` merges a batch with Chan et al.'s parallel formula (1979,
"Updating Formulae and a Pairwise Algorithm for Computing Sample Variances"), as the
OpenAI baselines' and Stable-Baselines3's ``RunningMeanStd`` do, so one call per rollout
gives the same statistics as per-sample Welford updates. ``scale_rewards`` divides
rewards by the running standard deviation of the discounted return, as SB3's
``VecNormalize(norm_reward=True)`` and Gymnasium's ``NormalizeReward`` do (Engstrom et
al. 2020, "Implementation Matters in Deep RL").
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import FloatOrArray

Array = jax.Array


@flax.struct.dataclass
class RunningMeanStd:
    """``mean`` and ``var`` of shape ``shape``; ``count`` a float32 scalar (starts at a
    tiny ``1e-4`` as in the baselines, so that the first update takes over)."""

    mean: Array
    var: Array
    count: Array


def init_running_stats(shape: tuple[int, ...] = ()) -> RunningMeanStd:
    """Mean 0, variance 1, count 1e-4."""
    return RunningMeanStd(
        jnp.zeros(shape, jnp.float32), jnp.ones(shape, jnp.float32), jnp.full((), 1e-4)
    )


def update_running_stats(stats: RunningMeanStd, batch: Array) -> RunningMeanStd:
    r"""Merges ``batch [..., *shape]`` (all leading axes are samples) into ``stats``:

    .. math::
        n = n_a + n_b,\quad \mu = \mu_a + \delta \frac{n_b}{n},\quad
        \sigma^2 = \frac{n_a \sigma_a^2 + n_b \sigma_b^2 + \delta^2 n_a n_b / n}{n},
        \quad \delta = \mu_b - \mu_a.
    """
    ndim = stats.mean.ndim
    x = batch.astype(jnp.float32).reshape((-1, *batch.shape[batch.ndim - ndim :]))
    n_b = jnp.asarray(x.shape[0], jnp.float32)
    mean_b, var_b = x.mean(axis=0), x.var(axis=0)
    n = stats.count + n_b
    delta = mean_b - stats.mean
    mean = stats.mean + delta * n_b / n
    m2 = stats.var * stats.count + var_b * n_b + jnp.square(delta) * stats.count * n_b / n
    return RunningMeanStd(mean, m2 / n, n)


def normalize(
    stats: RunningMeanStd, x: Array, clip: FloatOrArray | None = 10.0, eps: float = 1e-8
) -> Array:
    """``clip((x - mean) / sqrt(var + eps), -clip, clip)`` as float32 (SB3's defaults)."""
    y = (x.astype(jnp.float32) - stats.mean) / jnp.sqrt(stats.var + eps)
    return y if clip is None else jnp.clip(y, -clip, clip)


def scale_rewards(
    stats: RunningMeanStd,
    discounted_return: Array,
    rewards: Array,
    done: Array,
    discount: ArrayLike,
    clip: FloatOrArray | None = 10.0,
    eps: float = 1e-8,
) -> tuple[RunningMeanStd, Array, Array]:
    r"""Scales a rollout's rewards by the running std of the discounted return.

    Per env, ``G_t = gamma G_{t-1} + r_t`` then ``G_t = 0`` where ``done_t`` (SB3's
    ``VecNormalize``); ``stats`` absorbs all ``G_t`` of the rollout and the rewards are
    ``clip(r_t / sqrt(var + eps))`` with the updated variance.

    Args:
      stats: scalar ``RunningMeanStd`` of returns.
      discounted_return: ``[N]`` the running ``G`` per env, carried between rollouts.
      rewards, done: ``[T, N]``.

    Returns:
      ``(stats, discounted_return [N], scaled rewards [T, N])``.
    """

    def step(g, inputs):
        r, d = inputs
        g = g * discount + r
        return jnp.where(d, 0.0, g), g

    discounted_return, returns = jax.lax.scan(step, discounted_return, (rewards, done))
    stats = update_running_stats(stats, returns)
    scaled = rewards / jnp.sqrt(stats.var + eps)
    if clip is not None:
        scaled = jnp.clip(scaled, -clip, clip)
    return stats, discounted_return, scaled
