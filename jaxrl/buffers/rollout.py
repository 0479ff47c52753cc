"""On-policy rollouts: the learner's batch and its minibatches.

A rollout arrives from the runner as a ``Transition`` with leading axes ``[T, N]``
(``rollout_len`` steps of ``num_envs`` envs). After the advantages are computed
(``ops.gae``), ``flatten`` merges ``[T, N]`` into one sample axis ``[T * N]`` and
``shuffled_minibatches`` draws one random permutation of it and reshapes to
``[num_minibatches, T * N / num_minibatches]``, so that an epoch is one ``lax.scan`` over
the leading axis, every sample is used once per epoch, and no Python loop is unrolled
(PureJaxRL; CleanRL's ``b_inds`` shuffling). Both work on any pytree whose leaves share
those leading axes (dict observations included); ``agents/on_policy/core.py`` runs the epochs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

Array = jax.Array


class RolloutBatch(NamedTuple):
    """What a policy-gradient update needs per sample, leading axes ``[T, N]`` or ``[B]``.

    Attributes:
      obs: observations the policy acted on: an array, or a dict observation pytree
        (``types.main_obs`` normalized if the agent normalizes; the legal-action mask
        travels with it, so the loss masks what acting masked).
      action: the sampled action (for a Gaussian policy: before clipping to the box).
      log_prob: ``log pi_old(action | obs)`` float32.
      value: ``V_old(obs)`` float32.
      advantage: GAE advantage float32.
      target: value target (``advantage + value``) float32.
    """

    obs: Any
    action: Array
    log_prob: Array
    value: Array
    advantage: Array
    target: Array


def flatten(tree: Any) -> Any:
    """Merges the two leading axes ``[T, N, ...] -> [T * N, ...]`` of every leaf."""
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1], *x.shape[2:])), tree)


def shuffled_minibatches(key: Array, tree: Any, num_minibatches: int) -> Any:
    """A random partition of the leading axis ``[B, ...]`` into
    ``[num_minibatches, B / num_minibatches, ...]``; ``B`` must divide evenly."""
    size = jax.tree.leaves(tree)[0].shape[0]
    if size % num_minibatches:
        raise ValueError(f"batch of {size} does not split into {num_minibatches} minibatches")
    perm = jax.random.permutation(key, size)
    return jax.tree.map(
        lambda x: x[perm].reshape((num_minibatches, size // num_minibatches, *x.shape[1:])), tree
    )
