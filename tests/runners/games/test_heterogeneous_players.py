"""Independent agents in a game whose players differ (``EnvSpec.players``): player 0 sees
a one-hot of ``x0`` in ``{0, 1, 2}`` and picks among 3 actions, player 1 sees a one-hot of
``x1`` in ``{0, 1}`` with two more features and picks among 2; each is paid 1 for naming
its own ``x``. Each agent is built for its own spec, acts on its own view and its replay
holds its own transitions (the reward is 1 exactly where the action names the ``x`` of the
observation stored with it); DQN learns both players' games."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import agents
from jaxrl.runners import RunConfig
from jaxrl.runners.games.independent import make_multi_agent_runner
from jaxrl.types import (
    ACTION_MASK,
    OBS,
    ArraySpec,
    Discrete,
    Env,
    EnvSpec,
    TimeStep,
    player_spec,
)

SIZES = ((3, 3), (4, 2))  # (observation size, actions) of players 0 and 1


def _spec(name: str, size: int, actions: int, num_envs: int) -> EnvSpec:
    mask = (ArraySpec(ACTION_MASK, (actions,), "bool"),)
    return EnvSpec(name, (size,), "float32", Discrete(actions), num_envs, 2, mask)


def make_two_views(num_envs: int) -> Env:
    """Player 0 moves, then player 1; the game ends after both (module docstring)."""
    players = tuple(_spec("two_views", s, a, num_envs) for s, a in SIZES)
    spec = EnvSpec(
        "two_views", (3,), "float32", Discrete(3), num_envs, 2, players[0].obs_extras,
        num_players=2, turn_based=True, players=players,
    )  # fmt: skip

    def observe(x, turn):
        view0 = jax.nn.one_hot(x[:, 0], 3)
        extra = jnp.stack([turn.astype(jnp.float32), jnp.ones_like(view0[:, 0])], 1)
        view1 = jnp.concatenate([jax.nn.one_hot(x[:, 1], 2), extra], 1)
        mask0 = jnp.broadcast_to((turn == 0)[:, None], (num_envs, 3))
        mask1 = jnp.broadcast_to((turn == 1)[:, None], (num_envs, 2))
        return ({OBS: view0, ACTION_MASK: mask0}, {OBS: view1, ACTION_MASK: mask1})

    def draw(key):
        k0, k1 = jax.random.split(key)
        return jnp.stack([jax.random.randint(k0, (num_envs,), 0, 3),
                          jax.random.randint(k1, (num_envs,), 0, 2)], 1)  # fmt: skip

    def reset(key):
        x, turn = draw(key), jnp.zeros(num_envs, jnp.int32)
        zeros = jnp.zeros((num_envs, 2), jnp.float32)
        info = {"final_obs": observe(x, turn), "episode_return": zeros,
                "episode_length": turn, "current_player": turn}  # fmt: skip
        false = turn > 0
        return (x, turn, zeros), TimeStep(observe(x, turn), zeros, false, false, info)

    def step(state, action, key):
        x, turn, ret = state
        right = (action == x[jnp.arange(num_envs), turn]).astype(jnp.float32)
        reward = jax.nn.one_hot(turn, 2) * right[:, None]
        done, ret = turn == 1, ret + reward
        final_obs = observe(x, jnp.minimum(turn + 1, 1))
        x = jnp.where(done[:, None], draw(key), x)
        turn = jnp.where(done, 0, turn + 1)
        info = {"final_obs": final_obs, "episode_return": jnp.where(done[:, None], ret, 0.0),
                "episode_length": jnp.where(done, 2, 0), "current_player": turn}  # fmt: skip
        ret = jnp.where(done[:, None], 0.0, ret)
        return (x, turn, ret), TimeStep(observe(x, turn), reward, done, done & False, info)

    return Env(spec=spec, reset=reset, step=step)


def test_each_agent_learns_from_its_own_view_and_actions():
    env, eval_env = make_two_views(8), make_two_views(16)
    options = dict(hidden_sizes=[16], buffer_size=512, batch_size=32, learning_starts=64)
    options.update(n_step=1, lr=1e-2, epsilon_decay_steps=512, target_update_period=64)
    players = [agents.make("dqn", player_spec(env.spec, p), **options) for p in range(2)]
    config = RunConfig(steps=1536, rollout_len=4, log_every=1536, eval_every=0)
    runner = make_multi_agent_runner(players, env, config, eval_env)
    state = jax.jit(runner.init)(jax.random.PRNGKey(0))
    state, _ = jax.jit(runner.run_chunk)(state)
    for p, (size, actions) in enumerate(SIZES):
        stored = state.agent_state[p].buffer.data
        obs, action, reward = (
            np.asarray(x) for x in (stored.obs[OBS], stored.action, stored.reward)
        )
        assert obs.shape[-1] == size and action.max() < actions
        named = np.argmax(obs[..., : 3 if p == 0 else 2], -1)
        np.testing.assert_array_equal(reward, (action == named).astype(np.float32))
        assert np.asarray(stored.terminated).all()  # every turn ends the player's game
    # greedy player 0, in seat 0 of 16 games against a random player 1, names x0 in each
    scores = jax.jit(runner.evaluate)(state.agent_state, jax.random.PRNGKey(1))
    np.testing.assert_array_equal(np.asarray(scores), np.ones(16, np.float32))
