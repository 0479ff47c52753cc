"""The one mechanism by which auxiliary learners and demonstrations attach to an agent.

An auxiliary learner (AMP's discriminator, an action-symmetry discriminator, the VAE
action prior of ``agents/auxiliary/latent_prior.py``, CURL, a user's loss) is an
``ExtraLoss`` (``agents/auxiliary/extra_loss.py``, public as ``jaxrl.agents.ExtraLoss``;
``AuxLearner`` here): pure functions over its own state pytree (its parameters, its
optimizer state, reference data), in the way the agent is.
An ``Auxiliary`` bundles the learners an agent was configured with and, optionally, a
read-only demonstration buffer (``buffers/demonstrations.py``). The agent keeps one
field for it, ``aux`` (``LearnerState.aux`` in the off-policy actor-critic skeleton,
``QLearningState.aux`` in the Q-learning agent): **None when nothing is attached**, so
that the state pytree and the compiled program of every existing configuration are
unchanged, bit for bit.

Contract
--------
``AuxLearner``:

* ``init(key, params) -> aux_state``: a pytree of arrays (no Python objects), built once
  with the agent's state (its key is ``fold_in(agent_key, AUX_KEY + i)``, so the agent's
  own random draws are unchanged; ``params`` the agent's initial network parameters). A
  learner's ``data`` (a data group ``[M, ...]``) is added at ``aux_state["data"]``.
* ``update(aux_state, batch, hparams, key) -> (aux_state, metrics)`` or None: one step
  on a replay batch ``Transition`` ``[B, ...]`` (the agent's own data: actions as the
  agent stores them, e.g. normalized to ``[-1, 1]`` by the actor-critic skeleton);
  ``metrics`` are float32 scalars, named ``<learner>/<metric>`` by ``step``.
* ``reward(aux_state, batch, hparams) -> [B]`` float32 or None: a reward term *added* to
  the batch's reward before the agent's loss (a reward transform; no gradient flows).
* ``hparams``: the learner's continuous hyperparameters (name -> float), added to the
  agent's ``hparams`` so that ``--sweep`` reaches them (e.g. ``style_reward_weight``).
* ``on_metrics(metrics, aux_state) -> metrics`` or None: the agent update's metrics,
  once per update (after its gradient steps), inside the compiled update.

``step(aux, aux_state, batch, hparams, key)`` runs, inside the agent's jitted gradient
step and before the agent's own loss: (1) every learner's ``update`` on the replay batch
(policy data), (2) demonstrations mixed into the batch (its last
``round(demo_ratio * B)`` rows), (3) every learner's ``reward`` added to the mixed
batch's reward. The agent then takes its gradient step on the returned batch. Its keys
come from ``fold_in(key, AUX_KEY)`` of the step's key, so the agent's own sampling is the
same with or without auxiliaries: an auxiliary whose reward weight is 0 leaves the
agent's parameters bit-identical to the plain agent's.

Loss terms on the agent's parameters (CURL)
-------------------------------------------
A learner that must shape the agent's own network (CURL's contrastive loss trains the
agent's encoder) has two more functions, both optional (None for AMP and its kind):

* ``loss(aux_state, params, batch, hparams, key) -> (scalar, metrics)``: a term *added to
  the agent's loss* inside the skeleton's gradient step, a function of the agent's
  network parameters ``params`` and of the learner's own trainable parameters, which
  such a learner keeps at ``aux_state["params"]``. The skeleton differentiates its loss
  plus every such term with respect to ``(params, {name: aux_state[name]["params"]})``
  in one ``value_and_grad``: the agent's optimizer (with its gradient clipping) applies
  the agent's part, so the term's gradient reaches the agent's torso. ``batch`` is the
  agent's replay batch ``[B, ...]`` (the first transition of each n-step window).
* ``after_step(aux_state, grads, params, hparams) -> aux_state``: called after the
  agent's optimizer step with the learner's gradient ``grads`` (of its ``params``) and
  the agent's *new* parameters: the learner applies its own optimizer and updates
  anything it derives from the agent (CURL's momentum encoder).

CURL's ``init`` starts its momentum encoder as a copy of the agent's encoder (``params``).
Its ``after_step`` may be None (its parameters, if any, then stay). Its keys come from
``fold_in(key, AUX_KEY + 1)`` of the step's key. With no loss learner attached (CURL off)
the skeleton's gradient step is the plain one, so its program is unchanged bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeGuard

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.agents.auxiliary.extra_loss import ExtraLoss
from jaxrl.buffers.demonstrations import mix_batch, sample_demos
from jaxrl.types import ConfigError, Transition

AUX_KEY = 0x5EED  # folded into the agent's keys for everything auxiliary


AuxLearner = ExtraLoss  # the name the agents' code uses


class Encoder(NamedTuple):
    """The agent's encoder, as the skeleton that attaches CURL exposes it.

    params: the agent's network parameters -> the encoder's (a sub-tree).
    apply: ``(encoder params, obs [B, H, W, C]) -> [B, F]`` float32 features.
    obs_shape, obs_dtype: one observation's (the main array's) shape and dtype.
    """

    params: Callable[[Any], Any]
    apply: Callable[[Any, jax.Array], jax.Array]
    obs_shape: tuple[int, ...]
    obs_dtype: Any


class Auxiliary(NamedTuple):
    """What is attached to one agent.

    learners: ``((name, AuxLearner), ...)``; ``name`` keys its state and metrics.
    demos: the demonstrations, a ``Transition`` of NumPy arrays ``[M, ...]`` (actions as
      the agent stores them), or None.
    demo_count: demonstrations per batch, ``round(demo_ratio * batch_size)`` (0: none).
    """

    learners: tuple[tuple[str, AuxLearner], ...] = ()
    demos: Transition[np.ndarray] | None = None
    demo_count: int = 0


def init(aux: Auxiliary | None, key: jax.Array, params: Any = None) -> dict[str, Any] | None:
    """The ``aux`` state field: None without auxiliaries, else ``{"demos": ...,
    name: learner state, ...}``; ``params``: the agent's initial network parameters, given
    to the ``init`` of learners with a loss term."""
    if aux is None:
        return None
    state: dict[str, Any] = {}
    if aux.demo_count:
        state["demos"] = jax.tree.map(jax.numpy.asarray, aux.demos)
    for i, (name, learner) in enumerate(aux.learners):
        state[name] = learner.init(jax.random.fold_in(key, AUX_KEY + i), params)
        if learner.data is not None:
            state[name] = {**state[name], "data": jax.tree.map(jnp.asarray, learner.data)}
    return state


def has_loss(aux: Auxiliary | None) -> TypeGuard[Auxiliary]:
    """Whether a learner of ``aux`` adds a term to the agent's loss (module docstring)."""
    return aux is not None and any(learner.loss is not None for _, learner in aux.learners)


def trainable(aux: Auxiliary, aux_state: dict[str, Any]) -> dict[str, Any]:
    """``{name: aux_state[name]["params"]}`` of the learners with a loss term."""
    return {
        n: aux_state[n]["params"] if _has_params(aux_state[n]) else {}
        for n, learner in aux.learners
        if learner.loss is not None
    }


def _has_params(state: Any) -> bool:
    return isinstance(state, dict) and "params" in state


def loss_terms(
    aux: Auxiliary,
    aux_params: dict[str, Any],
    aux_state: dict[str, Any],
    params: Any,
    batch: Transition,
    h: dict[str, jax.Array],
    key: jax.Array,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The sum of the learners' loss terms at agent ``params`` and learner parameters
    ``aux_params`` (``trainable``'s layout), and their metrics ``<learner>/<metric>``."""
    key = jax.random.fold_in(key, AUX_KEY + 1)
    total, metrics = jnp.zeros((), jnp.float32), {}
    for i, (name, learner) in enumerate(aux.learners):
        if learner.loss is None:
            continue
        state = aux_state[name]
        if _has_params(state):
            state = {**state, "params": aux_params[name]}
        term, m = learner.loss(state, params, batch, h, jax.random.fold_in(key, i))
        total = total + term
        metrics.update({f"{name}/{k}": v for k, v in m.items()})
    return total, metrics


def after_step(
    aux: Auxiliary, aux_state: dict[str, Any], grads: dict[str, Any], params: Any
) -> dict[str, Any]:
    """Every loss learner's ``after_step`` with its gradient (``loss_grads``'s
    ``aux_grads``) and the agent's new params; the hyperparameters are ``constants``."""
    h, aux_state = constants(aux), dict(aux_state)
    for name, learner in aux.learners:
        if learner.loss is not None and learner.after_step is not None:
            aux_state[name] = learner.after_step(aux_state[name], grads[name], params, h)
    return aux_state


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
        if learner.update is None:
            continue
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


def constants(aux: Auxiliary | None) -> dict[str, jax.Array]:
    """``hparams(aux)`` as float32 scalars, for a skeleton that keeps them constant."""
    return {k: jnp.float32(v) for k, v in hparams(aux).items()}


def step_windows(
    aux: Auxiliary, aux_state: dict[str, Any], batch: Transition, key: jax.Array
) -> tuple[dict[str, Any], Transition, dict[str, jax.Array]]:
    """``step`` on a window batch ``[B, n, ...]`` seen as ``B n`` transitions
    (demonstrations need ``n = 1``), with the learners' hyperparameters ``constants``."""
    b, n = batch.action.shape[:2]
    flat = jax.tree.map(lambda x: x.reshape((b * n, *x.shape[2:])), batch)
    aux_state, flat, metrics = step(aux, aux_state, flat, constants(aux), key)
    return aux_state, jax.tree.map(lambda x: x.reshape((b, n, *x.shape[1:])), flat), metrics


def loss_grads(
    aux: Auxiliary,
    params: Any,
    aux_state: dict[str, Any],
    batch: Transition,
    key: jax.Array,
    windows: bool = True,
) -> tuple[Any, dict[str, Any], dict[str, jax.Array]]:
    """``(grads, aux_grads, metrics)``: the gradients of the learners' loss terms
    (``loss_terms`` on the first transition of each window of ``batch [B, n, ...]``, or on
    ``batch [B, ...]`` itself when not ``windows``) with respect to the agent's ``params``
    and the learners' own (``trainable``), and their metrics. The agent adds ``grads`` to
    its own loss's gradient (computed as without learners) before its optimizer step, then
    calls ``after_step`` with ``aux_grads``."""
    first = jax.tree.map(lambda x: x[:, 0], batch) if windows else batch
    h = constants(aux)

    def terms(both):
        return loss_terms(aux, both[1], aux_state, both[0], first, h, key)

    both = (params, trainable(aux, aux_state))
    (_, metrics), (grads, aux_grads) = jax.value_and_grad(terms, has_aux=True)(both)
    return grads, aux_grads, metrics


class AuxiliarySteps(NamedTuple):
    """What is attached, as a skeleton's gradient step calls it; chosen once by
    ``auxiliary_steps`` (with nothing attached every function is an identity, so the
    skeleton's program is the plain one).

    prepare: ``(aux_state, batch, hparams, key) -> (aux_state, batch, metrics)``, the
      learners' updates, demonstrations and reward terms before the agent's loss.
    loss_grads: ``(params, aux_state, batch, key) -> (grads or None, aux_grads,
      metrics)``, the loss terms' gradient with respect to the agent's ``params``.
    combine: ``(grads, term grads) -> grads``, the agent's gradient plus the terms'.
    after_step: ``(aux_state, aux_grads, new params) -> aux_state``.
    nan_metrics: ``(shapes thunk) -> metrics``, NaN metrics for an update that did not
      learn (``shapes`` returns the learning branch's metric shapes).
    """

    prepare: Callable[..., tuple[Any, Transition, dict[str, jax.Array]]]
    loss_grads: Callable[..., tuple[Any, Any, dict[str, jax.Array]]]
    combine: Callable[[Any, Any], Any]
    after_step: Callable[[Any, Any, Any], Any]
    nan_metrics: Callable[[Callable[[], Any]], dict[str, jax.Array]]


def on_metrics(
    aux: Auxiliary, metrics: dict[str, jax.Array], aux_state: dict[str, Any]
) -> dict[str, jax.Array]:
    """``metrics`` through every learner's ``on_metrics`` (with its state), in order; the
    skeleton calls it once per update, on the update's metrics. A callback that reads a
    metric this agent does not log is a ``ConfigError`` naming the ones it does (raised
    while the update is traced, before a run directory is written)."""
    for name, learner in aux.learners:
        if learner.on_metrics is not None:
            try:
                metrics = learner.on_metrics(dict(metrics), aux_state[name])
            except KeyError as e:
                raise ConfigError(
                    f"extra loss '{name}': on_metrics reads metric {e}, which this agent "
                    f"does not log; it logs {', '.join(sorted(metrics))}"
                ) from None
    return metrics


def auxiliary_steps(aux: Auxiliary | None, windows: bool) -> AuxiliarySteps:
    """``aux``'s steps for a skeleton whose batches are n-step windows ``[B, n, ...]``
    (``windows``: ``step_windows``, the learners' hyperparameters ``constants``) or
    one-step ``[B, ...]`` (``step`` with the skeleton's hyperparameters)."""
    if aux is None:
        return AuxiliarySteps(
            prepare=lambda aux_state, batch, h, key: (aux_state, batch, {}),
            loss_grads=lambda params, aux_state, batch, key: (None, None, {}),
            combine=lambda grads, terms: grads,
            after_step=lambda aux_state, aux_grads, params: aux_state,
            nan_metrics=lambda shapes: {},
        )
    if windows:
        prepare = lambda aux_state, batch, h, key: step_windows(aux, aux_state, batch, key)
    else:
        prepare = lambda aux_state, batch, h, key: step(aux, aux_state, batch, h, key)
    nan = lambda shapes: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes())
    steps = AuxiliarySteps(
        prepare=prepare,
        loss_grads=lambda params, aux_state, batch, key: (None, None, {}),
        combine=lambda grads, terms: grads,
        after_step=lambda aux_state, aux_grads, params: aux_state,
        nan_metrics=nan,
    )
    if not has_loss(aux):
        return steps
    return steps._replace(
        loss_grads=lambda params, aux_state, batch, key: loss_grads(
            aux, params, aux_state, batch, key, windows=windows
        ),
        combine=lambda grads, terms: jax.tree.map(jnp.add, grads, terms),
        after_step=lambda aux_state, aux_grads, params: after_step(
            aux, aux_state, aux_grads, params
        ),
    )
