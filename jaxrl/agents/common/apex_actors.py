r"""Ape-X's actors (Horgan et al. 2018, "Distributed Prioritized Experience Replay"), shared
by Ape-X DQN (``agents/q_learning/apex.py``) and Ape-X DDPG (``agents/off_policy/apex_ddpg.py``):
their options, per-actor epsilons, the refresh of their stale parameters, the items a
rollout completed (which get actor-side priorities) and the learner's replay layout."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.buffers import ReplayBuffer, make_prioritized_replay, make_sharded_prioritized_replay
from jaxrl.types import ConfigError, EnvSpec
from jaxrl.validation import Options, option


@dataclasses.dataclass(frozen=True)
class ApexOptions(Options):
    """The actors and the replay layout of an Ape-X agent.

    Attributes:
      num_actors: ``K``, the number of actors, each a group of ``num_envs / K`` envs. It
        must divide ``num_envs``; None: one actor per env (the paper's actors each
        step one env).
      actor_epsilon, actor_epsilon_alpha: the schedule's ``epsilon`` (0.4) and ``alpha``
        (7), Horgan et al. 2018, section 4.1.
      actor_update_period: an actor's steps between refreshes of its parameters. Steps
        are vector-env steps (the paper: 400 frames = 100 agent steps).
      replay_shards: shards of the replay (``buffers/sharded.py``); 1: one prioritized
        buffer. Must divide ``num_envs``; ``--devices D`` puts ``S / D`` on each device
        (``D`` must divide ``S``).
    """

    num_actors: int | None = option(None, ge=1)
    actor_epsilon: float = option(0.4, ge=0, le=1)
    actor_epsilon_alpha: float = option(7.0, ge=0)
    actor_update_period: int = option(100, ge=1)
    replay_shards: int = option(1, ge=1)


def actor_epsilons(num_actors: int, epsilon: Any = 0.4, alpha: Any = 7.0) -> jax.Array:
    r"""``[K]`` float32, :math:`\epsilon_i = \epsilon^{1 + \alpha\, i / (K - 1)}` for
    ``i = 0 .. K - 1`` (Horgan et al. 2018, section 4.1); ``[epsilon]`` for ``K = 1``."""
    i = jnp.arange(num_actors, dtype=jnp.float32)
    exponent = 1.0 + alpha * i / max(num_actors - 1, 1)
    return jnp.asarray(epsilon, jnp.float32) ** exponent


def env_epsilons(num_envs: int, num_actors: int, epsilon: Any, alpha: Any) -> jax.Array:
    """``[N]`` float32: env ``j`` belongs to actor ``floor(j K / N)`` (contiguous groups of
    ``N / K`` envs when ``K`` divides ``N``) and explores with that actor's epsilon."""
    actor = jnp.arange(num_envs) * num_actors // num_envs
    return actor_epsilons(num_actors, epsilon, alpha)[actor]


def actor_count(opts: ApexOptions, num_envs: int) -> int:
    """``K``: ``opts.num_actors``, or one actor per env when it is None."""
    return num_envs if opts.num_actors is None else opts.num_actors


def check_actors(opts: ApexOptions, num_envs: int, name: str) -> None:
    """A one-line ``ConfigError`` unless ``num_actors`` and ``replay_shards`` divide the
    envs."""
    actors = actor_count(opts, num_envs)
    for what, count in (("num_actors", actors), ("replay_shards", opts.replay_shards)):
        if num_envs % count:
            valid = [k for k in range(1, num_envs + 1) if num_envs % k == 0]
            raise ConfigError(
                f"agent '{name}': {what} {count} does not divide the {num_envs} envs; "
                f"valid: {valid} (or change --env.num_envs)"
            )


def make_apex_replay(spec: EnvSpec, cfg: Any, name: str) -> ReplayBuffer:
    """The learner's prioritized replay: one buffer, or ``cfg.replay_shards`` shards
    (``buffers/sharded.py``), which ``--devices D`` splits over ``D`` devices
    (``runners/distributed/devices.py``)."""
    check_actors(cfg, spec.num_envs, name)
    args = (cfg.buffer_size, spec.num_envs, cfg.batch_size, cfg.n_step)
    try:
        if cfg.replay_shards == 1:
            return make_prioritized_replay(*args)
        return make_sharded_prioritized_replay(*args, num_shards=cfg.replay_shards)
    except ValueError as e:
        raise ConfigError(f"agent '{name}': {e}") from None


def completed_items(
    rows_before: jax.Array, num_steps: int, num_envs: int, num_rows: int, window: int
):
    """``(time_index, env_index)``, ``[T N]`` each: the items whose ``window``-step window
    ended in the ``T`` rows just written after ``rows_before`` rows (a ring of
    ``num_rows``): rows ``position - window - k`` for ``k < T``. Items among them that are
    not valid yet (fewer rows written than a window) are ignored by ``update_priorities``."""
    position = (rows_before + num_steps) % num_rows
    rows = (position - window - jnp.arange(num_steps, dtype=jnp.int32)) % num_rows
    time_index = jnp.repeat(rows, num_envs)
    env_index = jnp.tile(jnp.arange(num_envs, dtype=jnp.int32), num_steps)
    return time_index.astype(jnp.int32), env_index


def refresh_actors(actors: Any, new: Any, rows: jax.Array, num_steps: int, period: int) -> Any:
    """``new`` (the learner's parameters) where the actors' step count ``rows`` crossed a
    multiple of ``period`` in its last ``num_steps`` steps, else the old copy ``actors``."""
    crossed = rows // period > (rows - num_steps) // period
    return jax.tree.map(lambda old, n: jnp.where(crossed, n, old), actors, new)


def process_options(options: dict[str, Any], num_envs: int, processes: int, index: int):
    r"""The options actor process ``index`` of ``processes`` acts with (``--actor-processes``):
    it steps envs ``[index n, (index + 1) n)``, ``n = num_envs / processes``, which are
    actors ``a .. a + k - 1`` of the run's ``K`` (``k = K / processes``, ``a = index k``).
    Their epsilons :math:`\epsilon^{c + \alpha j / (K - 1)}`, ``c = 1 + alpha a / (K - 1)``,
    are the ladder of ``k`` actors with ``epsilon' = epsilon^c`` and ``alpha' = alpha (k -
    1) / (c (K - 1))``; ``ConfigError`` unless ``processes`` divides ``K``."""
    actors = num_envs if options.get("num_actors") is None else options["num_actors"]
    if actors % processes:
        valid = [p for p in range(1, actors + 1) if actors % p == 0]
        raise ConfigError(
            f"--actor-processes {processes} must divide the {actors} Ape-X actors "
            f"(num_actors); valid: {valid}"
        )
    k = actors // processes
    c = 1.0 + options["actor_epsilon_alpha"] * index * k / max(actors - 1, 1)
    alpha = options["actor_epsilon_alpha"] * (k - 1) / (c * max(actors - 1, 1))
    return {
        **options,
        "num_actors": None if options.get("num_actors") is None else k,
        "actor_epsilon": float(options["actor_epsilon"] ** c),
        "actor_epsilon_alpha": float(alpha),
        "replay_shards": 1,
    }
