r"""The math of MBPO (Janner et al. 2019, "When to Trust Your Model: Model-Based Policy
Optimization", arXiv:1906.08253): the probabilistic ensemble's Gaussian negative
log-likelihood with learned log-variance bounds, the linear rollout-length schedule, and
the split of a minibatch between real and model data. Pure functions, no state.

The reference implementation is github.com/jannerm/mbpo (``mbpo/models/bnn.py`` for the
loss and bounds, ``mbpo/algorithms/mbpo.py`` for the schedule and the split).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def bound_log_var(log_var: jax.Array, max_log_var: jax.Array, min_log_var: jax.Array):
    r"""Soft bounds of a predicted log-variance (Chua et al. 2018, PETS, appendix A.1;
    ``bnn.py``'s ``_compile_outputs``), differentiable in the learned bounds:

    .. math:: v \leftarrow v_{max} - \operatorname{softplus}(v_{max} - v),\qquad
              v \leftarrow v_{min} + \operatorname{softplus}(v - v_{min})

    ``log_var`` ``[..., D]``; ``max_log_var``, ``min_log_var`` ``[D]`` (broadcast).
    """
    log_var = max_log_var - jax.nn.softplus(max_log_var - log_var)
    return min_log_var + jax.nn.softplus(log_var - min_log_var)


def gaussian_nll(
    mean: jax.Array,
    log_var: jax.Array,
    target: jax.Array,
    max_log_var: jax.Array,
    min_log_var: jax.Array,
    bound_coef: float = 0.01,
) -> tuple[jax.Array, jax.Array]:
    r"""The ensemble's training loss and each member's NLL (``bnn.py``'s ``_compile_losses``
    with ``inc_var_loss``), constants dropped:

    .. math:: L_e = \operatorname{mean}_{b,d}\big[(\mu_{ebd} - y_{ebd})^2 e^{-v_{ebd}}
              + v_{ebd}\big],\qquad
              L = \sum_e L_e + c\,\big(\textstyle\sum_d v^{max}_d - \sum_d v^{min}_d\big)

    with ``c = bound_coef`` (0.01 in the reference code), which keeps the learned bounds
    tight. ``mean``, ``log_var`` (already bounded), ``target``: ``[E, B, D]`` float32 (E
    members); ``max_log_var``, ``min_log_var``: ``[D]``. Returns ``(L, L_e [E])``; ``L_e`` is
    twice the mean per-dimension Gaussian NLL minus ``log 2 pi``.
    """
    per_member = jnp.mean((mean - target) ** 2 * jnp.exp(-log_var) + log_var, axis=(-2, -1))
    bound = bound_coef * (jnp.sum(max_log_var) - jnp.sum(min_log_var))
    return jnp.sum(per_member) + bound, per_member


def rollout_length(
    epoch: jax.Array, min_epoch: float, max_epoch: float, min_length: int, max_length: int
) -> jax.Array:
    r"""MBPO's model-rollout length at ``epoch`` for the schedule ``[a, b, x, y]`` (the
    paper's appendix C: "linearly increasing from x to y over epochs a to b";
    ``mbpo.py``'s ``_set_rollout_length``):

    .. math:: k = \Big\lfloor \min\Big(\max\Big(x + \frac{e - a}{b - a}(y - x),\ x\Big),
              \ y\Big)\Big\rfloor

    ``epoch`` int or float array (may be traced); ``a < b`` (or ``x == y``) and ``1 <= x``,
    ``1 <= y`` are static. Returns int32 of ``epoch``'s shape.
    """
    epoch = jnp.asarray(epoch, jnp.float32)
    span = max_epoch - min_epoch
    if min_length == max_length or span <= 0:
        frac = jnp.zeros_like(epoch)
    else:
        frac = (epoch - min_epoch) / span
    k = jnp.clip(min_length + frac * (max_length - min_length), min_length, max_length)
    return jnp.floor(k).astype(jnp.int32)


def real_batch_size(batch_size: int, real_ratio: float) -> int:
    """How many of a minibatch's ``batch_size`` items are real (the rest come from the
    model buffer): ``int(batch_size * real_ratio)``, as ``mbpo.py``'s ``_train``
    (``env_batch_size = int(batch_size * real_ratio)``). Static Python ints."""
    return int(batch_size * real_ratio)
