"""The one mechanism by which auxiliary learners and demonstrations attach to an agent.

An auxiliary learner (AMP's discriminator, an action-symmetry discriminator, the VAE
action prior of ``agents/latent_prior.py``; later a CURL encoder) is an ``AuxLearner``:
pure functions over its own state pytree (its parameters, its optimizer state, reference
data), in the way the agent is.
An ``Auxiliary`` bundles the learners an agent was configured with and, optionally, a
read-only demonstration buffer (``buffers/demonstrations.py``). The agent keeps one
field for it, ``aux`` (``LearnerState.aux`` in the off-policy actor-critic skeleton,
``QLearningState.aux`` in the Q-learning agent): **None when nothing is attached**, so
that the state pytree and the compiled program of every existing configuration are
unchanged, bit for bit.

Contract
--------
``AuxLearner``:

* ``init(key) -> aux_state``: a pytree of arrays (no Python objects), built once with the
  agent's state (its key is ``fold_in(agent_key, AUX_KEY + i)``, so the agent's own
  random draws are unchanged).
* ``update(aux_state, batch, hparams, key) -> (aux_state, metrics)``: one gradient step
  on a replay batch ``Transition`` ``[B, ...]`` (the agent's own data: actions as the
  agent stores them, e.g. normalized to ``[-1, 1]`` by the actor-critic skeleton);
  ``metrics`` are float32 scalars, named ``<learner>/<metric>`` by ``step``.
* ``reward(aux_state, batch, hparams) -> [B]`` float32 or None: a reward term *added* to
  the batch's reward before the agent's loss (a reward transform; no gradient flows).
* ``hparams``: the learner's continuous hyperparameters (name -> float), added to the
  agent's ``hparams`` so that ``--sweep`` reaches them (e.g. ``style_reward_weight``).

``step(aux, aux_state, batch, hparams, key)`` runs, inside the agent's jitted gradient
step and before the agent's own loss: (1) every learner's ``update`` on the replay batch
(policy data), (2) demonstrations mixed into the batch (its last
``round(demo_ratio * B)`` rows), (3) every learner's ``reward`` added to the mixed
batch's reward. The agent then takes its gradient step on the returned batch. Its keys
come from ``fold_in(key, AUX_KEY)`` of the step's key, so the agent's own sampling is the
same with or without auxiliaries: an auxiliary whose reward weight is 0 leaves the
agent's parameters bit-identical to the plain agent's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxrl.buffers.demonstrations import mix_batch, sample_demos
from jaxrl.types import Transition

AUX_KEY = 0x5EED  # folded into the agent's keys for everything auxiliary


class AuxLearner(NamedTuple):
    """An auxiliary learner as pure functions over its own state (module docstring)."""

    init: Callable[[jax.Array], Any]
    update: Callable[..., tuple[Any, dict[str, jax.Array]]]
    reward: Callable[..., jax.Array] | None = None
    hparams: dict[str, float] = {}


class Auxiliary(NamedTuple):
    """What is attached to one agent.

    learners: ``((name, AuxLearner), ...)``; ``name`` keys its state and metrics.
    demos: the demonstrations, a ``Transition`` of NumPy arrays ``[M, ...]`` (actions as
      the agent stores them), or None.
    demo_count: demonstrations per batch, ``round(demo_ratio * batch_size)`` (0: none).
    """

    learners: tuple[tuple[str, AuxLearner], ...] = ()
    demos: Transition | None = None
    demo_count: int = 0


def init(aux: Auxiliary | None, key: jax.Array) -> dict[str, Any] | None:
    """The ``aux`` state field: None without auxiliaries, else ``{"demos": ...,
    name: learner state, ...}``."""
    if aux is None:
        return None
    state: dict[str, Any] = {}
    if aux.demo_count:
        state["demos"] = jax.tree.map(jax.numpy.asarray, aux.demos)
    for i, (name, learner) in enumerate(aux.learners):
        state[name] = learner.init(jax.random.fold_in(key, AUX_KEY + i))
    return state


def hparams(aux: Auxiliary | None) -> dict[str, float]:
    """The learners' continuous hyperparameters, merged (for the agent's ``hparams``)."""
    out: dict[str, float] = {}
    for _, learner in aux.learners if aux is not None else ():
        out.update(learner.hparams)
    return out


def step(
    aux: Auxiliary,
    aux_state: dict[str, Any],
    batch: Transition,
    h: dict[str, jax.Array],
    key: jax.Array,
) -> tuple[dict[str, Any], Transition, dict[str, jax.Array]]:
    """``(aux_state, batch, metrics)`` after the learners' updates, demonstration mixing and
    reward terms (module docstring); ``key`` is the agent's step key (folded here)."""
    key = jax.random.fold_in(key, AUX_KEY)
    demo_key, *keys = jax.random.split(key, len(aux.learners) + 1)
    aux_state, metrics = dict(aux_state), {}
    for (name, learner), k in zip(aux.learners, keys, strict=True):
        aux_state[name], m = learner.update(aux_state[name], batch, h, k)
        metrics.update({f"{name}/{key}": value for key, value in m.items()})
    if aux.demo_count:
        batch = mix_batch(batch, sample_demos(aux_state["demos"], demo_key, aux.demo_count))
    reward = batch.reward
    for name, learner in aux.learners:
        if learner.reward is not None:
            term = jax.lax.stop_gradient(learner.reward(aux_state[name], batch, h))
            metrics[f"{name}/reward"] = term.mean()
            reward = reward + term
    return aux_state, batch._replace(reward=reward), metrics
