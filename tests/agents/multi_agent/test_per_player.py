"""Independent learners per player (``ippo``): acting and learning equal each player's
own PPO on its slice of the players' layout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import make
from jaxrl.agents.on_policy.ppo import make_ppo
from jaxrl.types import ConfigError, Discrete, EnvSpec, Transition

P, N, D, A, T = 2, 3, 4, 3, 4
SPEC = EnvSpec("fake", (D,), "float32", Discrete(A), N, 10, num_players=P)
OPTIONS = dict(hidden_sizes=[8], update_epochs=1, num_minibatches=1)


def test_ippo_equals_one_ppo_per_player():
    agent = make("ippo", SPEC, **OPTIONS)
    single = make_ppo(EnvSpec("fake", (D,), "float32", Discrete(A), N, 10), **OPTIONS)
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.normal(size=(T, N, P, D)), jnp.float32)
    key = jax.random.PRNGKey(0)

    def run(key):
        state = agent.init(key)
        action, _, extras = agent.act(state, obs[0], (), key, True)
        rollout = Transition(
            obs,
            jnp.broadcast_to(action, (T, N, P)),
            jnp.asarray(rng_reward, jnp.float32),
            obs,
            jnp.zeros((T, N), bool),
            jnp.zeros((T, N), bool),
            jax.tree.map(lambda x: jnp.broadcast_to(x, (T, *x.shape)), extras),
        )
        new, metrics = agent.update(state, rollout, key)
        return state, action, rollout, new, metrics

    rng_reward = rng.normal(size=(T, N, P))
    state, action, rollout, new, metrics = jax.jit(run)(key)
    assert action.shape == (N, P) and np.isfinite(metrics["value_loss"])
    player_keys = jax.random.split(key, P)
    single_act, single_update = jax.jit(single.act, static_argnums=4), jax.jit(single.update)
    for p in range(P):
        take = lambda x, p=p: x[p]
        own = jax.tree.map(take, state)
        ref_action, _, _ = single_act(own, obs[0][:, p], (), player_keys[p], True)
        np.testing.assert_array_equal(action[:, p], ref_action)
        mine = Transition(
            rollout.obs[:, :, p],
            rollout.action[:, :, p],
            rollout.reward[:, :, p],
            rollout.next_obs[:, :, p],
            rollout.terminated,
            rollout.truncated,
            jax.tree.map(lambda x, p=p: x[:, :, p], rollout.extras),
        )
        ref_new, _ = single_update(own, mine, player_keys[p])
        for a, b in zip(
            jax.tree.leaves(jax.tree.map(take, new)), jax.tree.leaves(ref_new), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_ippo_refuses_single_agent_env():
    with pytest.raises(ConfigError, match="simultaneous-move env of 2\\+ players"):
        make("ippo", EnvSpec("one", (D,), "float32", Discrete(A), N, 10))
