"""FrozenLake-v1 as a JAX-native env, written to Gymnasium's dynamics
(``gymnasium/envs/toy_text/frozen_lake.py``).

The agent walks on a grid of frozen (``F``) tiles from the start ``S`` to the goal ``G``,
avoiding holes ``H``. Actions ``Discrete(4)``: 0 left, 1 down, 2 right, 3 up; a move off
the grid stays in place. On a slippery lake (``is_slippery``, the default) the move taken
is the intended one or either perpendicular one, each with probability 1/3 (Gymnasium's
``[(a - 1) % 4, a, (a + 1) % 4]``). Reward 1 on reaching ``G``, else 0; the episode
terminates in ``G`` or a hole; time limit 100 steps (4x4) or 200 (8x8), as Gymnasium
registers them (its ``reward_threshold``: 0.70 and 0.85).

Observations: Gymnasium's state is the integer ``row * ncol + col``; here it is that
state one-hot, ``[nrow * ncol]`` bool (RLHive's one-hot convention for tabular agents, and
what a network takes), so ``argmax(obs)`` is Gymnasium's observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.core import make_vector_env
from jaxrl.types import Array, ConfigError, Discrete, Env, PRNGKey

MAPS = {
    "4x4": ("SFFF", "FHFH", "FFFH", "HFFG"),
    "8x8": (
        "SFFFFFFF",
        "FFFFFFFF",
        "FFFHFFFF",
        "FFFFFHFF",
        "FFFHFFFF",
        "FHHFFFHF",
        "FHFFHFHF",
        "FFFHFFFG",
    ),
}
TIME_LIMITS = {"4x4": 100, "8x8": 200}


def move_table(desc: tuple[str, ...]) -> np.ndarray:
    """``[S, 4]`` int32: the state reached from each state by each direction (0 left,
    1 down, 2 right, 3 up), clipped at the walls (Gymnasium's ``inc``)."""
    nrow, ncol = len(desc), len(desc[0])
    table = np.zeros((nrow * ncol, 4), np.int32)
    for row in range(nrow):
        for col in range(ncol):
            moves = (
                (row, max(col - 1, 0)),
                (min(row + 1, nrow - 1), col),
                (row, min(col + 1, ncol - 1)),
                (max(row - 1, 0), col),
            )
            for a, (r, c) in enumerate(moves):
                table[row * ncol + col, a] = r * ncol + c
    return table


def frozen_lake(
    num_envs: int = 1,
    *,
    map_name: str = "4x4",
    is_slippery: bool = True,
    max_episode_steps: int | None = None,
) -> Env:
    """FrozenLake-v1 (module docstring): ``Discrete(4)``, obs one-hot ``[16]`` (4x4) or
    ``[64]`` (8x8) bool (neural agents read it as 0/1 floats)."""
    if map_name not in MAPS:
        raise ConfigError(f"unknown map_name {map_name!r} for FrozenLake-v1; valid: 4x4, 8x8")
    desc = MAPS[map_name]
    tiles = np.array([c for row in desc for c in row])
    num_states = tiles.size
    moves = jnp.asarray(move_table(desc))
    start = int(np.flatnonzero(tiles == "S")[0])
    goal = jnp.asarray(tiles == "G")
    ends = jnp.asarray((tiles == "G") | (tiles == "H"))

    def obs(s: Array) -> Array:
        return jax.nn.one_hot(s, num_states, dtype=jnp.bool_)

    def reset(key: PRNGKey) -> tuple[Array, Array]:
        del key
        s = jnp.asarray(start, jnp.int32)
        return s, obs(s)

    def step(s: Array, action: Array, key: PRNGKey) -> tuple[Array, Array, Array, Array]:
        slip = jax.random.randint(key, (), -1, 2) if is_slippery else 0
        direction = (action.astype(jnp.int32) + slip) % 4
        s = moves[s, direction]
        return s, obs(s), goal[s].astype(jnp.float32), ends[s]

    limit = TIME_LIMITS[map_name] if max_episode_steps is None else max_episode_steps
    return make_vector_env(
        name="FrozenLake-v1",
        obs_shape=(num_states,),
        obs_dtype="bool",
        action_space=Discrete(4),
        max_episode_steps=limit,
        num_envs=num_envs,
        reset_fn=reset,
        step_fn=step,
    )
