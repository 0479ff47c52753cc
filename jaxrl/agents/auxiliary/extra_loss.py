"""The public type of an extra learning term (``ExtraLoss``), how a user's is named and
checked (``load``, ``check``), and ``sample_data`` for its data group.

An ``ExtraLoss`` is pure functions over its own state pytree, attached to an agent's
gradient step by ``agents/auxiliary/base.py`` (whose docstring is the step-by-step
contract). AMP, action symmetry, CURL and the VAE prior are ``ExtraLoss`` values; a
user's is named ``package.module:function`` in ``--agent.extra_losses`` (a function of the
env's ``EnvSpec`` returning an ``ExtraLoss``). See ``docs/how-to/extra-losses.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import trust
from jaxrl.buffers.demonstrations import sample_demos
from jaxrl.types import ConfigError, EnvSpec, Transition, batched_spec
from jaxrl.validation import first_line


class InitFn(Protocol):
    """``init(key, params) -> state``: the term's state pytree (arrays only); ``params`` the
    agent's initial network parameters (those ``loss`` sees)."""

    def __call__(self, key: jax.Array, params: Any, /) -> Any: ...


class UpdateFn(Protocol):
    """``update(state, batch, hparams, key) -> (state, metrics)``: a step before the
    agent's loss, on the replay batch (AMP's discriminator)."""

    def __call__(
        self, state: Any, batch: Transition, h: dict[str, jax.Array], key: jax.Array, /
    ) -> tuple[Any, dict[str, jax.Array]]: ...


class RewardFn(Protocol):
    """``reward(state, batch [B], hparams) -> [B]`` float32, added to the batch's reward."""

    def __call__(self, state: Any, batch: Transition, h: dict[str, jax.Array], /) -> jax.Array: ...


class LossFn(Protocol):
    """``loss(state, params, batch, hparams, key) -> (term, metrics)``: a float32 scalar
    added to the agent's loss, differentiated with respect to the agent's ``params`` and
    the term's own ``state["params"]``."""

    def __call__(
        self,
        state: Any,
        params: Any,
        batch: Transition,
        h: dict[str, jax.Array],
        key: jax.Array,
        /,
    ) -> tuple[jax.Array, dict[str, jax.Array]]: ...


class AfterStepFn(Protocol):
    """``after_step(state, grads, params, hparams) -> state``: after the agent's optimizer
    step, with the term's gradient of ``state["params"]`` and the agent's new ``params``."""

    def __call__(self, state: Any, grads: Any, params: Any, h: dict[str, jax.Array], /) -> Any: ...


class MetricsFn(Protocol):
    """``on_metrics(metrics, state) -> metrics``: the update's metrics (float32 scalars, NaN
    in an update that did not learn) seen, and maybe extended, inside the compiled update."""

    def __call__(self, metrics: dict[str, jax.Array], state: Any, /) -> dict[str, jax.Array]: ...


class ExtraLoss(NamedTuple):
    """An extra learning term of an agent (``agents/auxiliary/base.py``): every function but
    ``init`` optional.

    init: ``InitFn``. A term whose ``loss`` has parameters of its own keeps them at
      ``state["params"]`` (a dict state).
    loss: ``LossFn``, the term added to the agent's loss (CURL's InfoNCE).
    update: ``UpdateFn``, a step of the term's own before the agent's loss (AMP).
    reward: ``RewardFn``, a reward term (AMP's style reward).
    after_step: ``AfterStepFn``, the term's own optimizer step (None: ``state["params"]``
      stay as they are).
    hparams: continuous hyperparameters (name -> float) added to the agent's ``hparams``,
      passed to every function as ``h`` and reached by ``--sweep``.
    data: a data group (demonstrations, a reference dataset, model rollouts): a pytree of
      NumPy arrays ``[M, ...]``, put at ``state["data"]`` (a dict state) by ``init``; draw
      rows with ``sample_data``.
    on_metrics: ``MetricsFn``, called once per agent update.
    """

    init: Callable[..., Any]
    loss: LossFn | None = None
    update: UpdateFn | None = None
    reward: RewardFn | None = None
    after_step: AfterStepFn | None = None
    hparams: dict[str, float] = {}
    data: Any = None
    on_metrics: MetricsFn | None = None


KEY = jax.ShapeDtypeStruct((2,), jnp.uint32)  # an abstract PRNG key, for eval_shape
RESERVED = ("amp", "symmetry", "curl", "demos", "vae_prior")  # the built-ins' state keys


def sample_data(data: Any, key: jax.Array, count: int) -> Any:
    """``count`` rows (leaves ``[count, ...]``) drawn uniformly with replacement from a data
    group ``data`` (leaves ``[M, ...]``)."""
    return sample_demos(data, key, count)


def load(names: Sequence[str], spec: EnvSpec, agent: str) -> tuple[tuple[str, ExtraLoss], ...]:
    """``((attr, ExtraLoss), ...)`` of ``package.module:function`` names, each function
    called with ``spec``; ConfigError (one line) where a name cannot be imported, is not
    trusted (``jaxrl.trust``) or does not give an ``ExtraLoss``."""
    out: list[tuple[str, ExtraLoss]] = []
    for path in names:
        fn = trust.user_function(path, "extra_losses", agent)
        what = f"agent '{agent}' option 'extra_losses': '{path}'"
        if path.partition(":")[2] in RESERVED + tuple(n for n, _ in out):
            raise ConfigError(f"{what}: the name '{path.partition(':')[2]}' is taken; rename it")
        try:
            made = fn(spec)
        except Exception as e:  # noqa: BLE001 - the user's function, reported in one line
            raise ConfigError(f"{what} fails on the env's spec: {first_line(e)}") from None
        if not isinstance(made, ExtraLoss):
            raise ConfigError(
                f"{what} must return a jaxrl.agents.ExtraLoss, got {type(made).__name__}"
            )
        out.append((path.partition(":")[2], made))
    return tuple(out)


def check(
    learners: Sequence[tuple[str, ExtraLoss]], params: Any, batch: Transition, agent: str
) -> None:
    """ConfigError (one line) unless each term's ``init`` and ``loss`` trace on abstract
    agent ``params`` and a replay ``batch`` ``[B, ...]`` and the loss is a float scalar."""
    for name, term in learners:
        _check_one(f"agent '{agent}' extra loss '{name}'", term, params, batch)


def _check_one(what: str, term: ExtraLoss, params: Any, batch: Transition) -> None:
    h = {k: jnp.float32(v) for k, v in term.hparams.items()}
    loss = term.loss
    try:
        state = jax.eval_shape(term.init, KEY, params)
        if term.data is not None:
            state = {**state, "data": jax.tree.map(np.asarray, term.data)}
        if loss is None:
            return
        out = jax.eval_shape(lambda s, p, b, k: loss(s, p, b, h, k), state, params, batch, KEY)
    except Exception as e:  # noqa: BLE001 - the user's function, reported in one line
        raise ConfigError(f"{what} fails on the agent's parameters: {first_line(e)}") from None
    value = out[0] if isinstance(out, tuple) and len(out) == 2 else out
    if getattr(value, "shape", None) != () or not jnp.issubdtype(value.dtype, jnp.floating):
        got = list(value.shape) if hasattr(value, "shape") else type(value).__name__
        raise ConfigError(
            f"{what} must return (float scalar loss, metrics dict); got a loss of shape {got}"
        )


def check_attached(
    learners: Sequence[tuple[str, ExtraLoss]],
    names: Sequence[str],
    params: Any,
    spec: EnvSpec,
    action: jax.ShapeDtypeStruct,
    agent: str,
) -> None:
    """``check`` of the learners the ``extra_losses`` ``names`` attached, on a replay
    batch of 2 transitions of ``spec`` whose one stored action is ``action``."""
    wanted = {n.partition(":")[2] for n in names}
    users = [(n, term) for n, term in learners if n in wanted]
    if not users:
        return
    lead = lambda s: jax.ShapeDtypeStruct((2, *s.shape), s.dtype)
    flag = jax.ShapeDtypeStruct((2,), jnp.bool_)
    obs = batched_spec(spec.obs_spec, 2)
    reward = jax.ShapeDtypeStruct((2,), jnp.float32)
    check(users, params, Transition[Any](obs, lead(action), reward, obs, flag, flag, {}), agent)


__all__ = ["ExtraLoss", "check", "load", "sample_data"]
