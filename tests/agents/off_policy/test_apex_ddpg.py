"""Ape-X DDPG (``agents/off_policy/apex_ddpg.py``): new items enter at a NumPy n-step TD
error of the actors' copy of the actor, critic and targets; actors explore with their copy
and the per-actor noise scale ``0.4 ** (1 + 7 i / (K - 1))``; bad layouts are one line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.common import apex_actors
from jaxrl.agents.off_policy.apex_ddpg import ApexDDPGConfig
from jaxrl.agents.off_policy.core import make_critic
from jaxrl.buffers import sum_tree
from jaxrl.networks.continuous import DeterministicActor
from tests.helpers import assert_refused, random_transitions

N, T, GAMMA, ALPHA, EPS = 4, 5, 0.9, 0.6, 1e-6
CFG = dict(num_actors=2, hidden_sizes=(8,), batch_size=8, buffer_size=N * 16, n_step=3,
           learning_starts=10**6, gamma=GAMMA, priority_alpha=ALPHA, priority_eps=EPS,
           actor_update_period=10**6, noise_sigma=0.3)  # fmt: skip


def rollout(rng):
    actions = lambda rng, shape: jnp.asarray(rng.uniform(-2, 2, size=(*shape, 1)), jnp.float32)
    return random_transitions(rng, (T, N), (3,), actions)


@pytest.fixture(scope="module")
def setup():
    spec = envs.make("Pendulum-v1", num_envs=N).spec
    agent = agents.make("apex_ddpg", spec, **CFG)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    bump = lambda tree, c: jax.tree.map(lambda x: x + c * jnp.cos(5.0 * x), tree)  # noqa: E731
    actors = {k: bump(v, 0.2 + 0.1 * i) for i, (k, v) in enumerate(state.actors.items())}
    return spec, agent, state.replace(actors=actors)


def test_new_items_enter_with_the_actors_td_errors(setup):
    spec, agent, state = setup
    cfg = ApexDDPGConfig(**CFG)
    actor = DeterministicActor(1, cfg.hidden_sizes, obs_ndim=1)
    critic = make_critic(cfg, spec, 1)
    a = state.actors
    mu_t = lambda s: np.asarray(actor.apply(a["target_actor_params"], s[None]))[0]  # noqa: E731
    q = lambda p, s, u: float(critic.apply(p, s[None], u[None])[0, 0])  # noqa: E731
    rng = np.random.default_rng(0)
    rollouts = [rollout(rng), rollout(rng)]
    update = jax.jit(agent.update)
    for r in rollouts:  # no learning (learning_starts): the priorities are the actors'
        state, _ = update(state, r, jax.random.PRNGKey(1))
    d = jax.tree.map(lambda *x: np.concatenate(x), *rollouts)._asdict()
    d["action"] = d["action"] / 2.0  # stored normalized: Pendulum's box is [-2, 2]
    rows, env_ = np.repeat(np.arange(2 * T - 2), N), np.tile(np.arange(N), 2 * T - 2)
    expected = []
    for r, e in zip(rows, env_, strict=True):
        g, m, term = 0.0, 3, False
        for k in range(3):
            g += GAMMA**k * d["reward"][r + k, e]
            if d["terminated"][r + k, e] or d["truncated"][r + k, e]:
                m, term = k + 1, bool(d["terminated"][r + k, e])
                break
        boot = d["next_obs"][r + m - 1, e]
        y = g + (0.0 if term else GAMMA**m * q(a["target_critic_params"], boot, mu_t(boot)))
        delta = y - q(a["critic_params"], d["obs"][r, e], d["action"][r, e])
        expected.append((abs(delta) + EPS) ** ALPHA)
    leaves = sum_tree.get(state.buffer.tree, rows * N + env_)
    np.testing.assert_allclose(leaves, expected, rtol=1e-4, atol=1e-6)


def test_actors_explore_with_their_copy_and_their_noise_scale(setup):
    _, agent, state = setup
    state = state.replace(step=jnp.asarray(10**7, jnp.int32))  # past the random warm-up
    obs = jnp.asarray(np.random.default_rng(1).normal(size=(N, 3)), jnp.float32)
    key = jax.random.PRNGKey(2)
    action, _, _ = agent.act(state, obs, (), key, True)
    actor = DeterministicActor(1, (8,), obs_ndim=1)
    mu = np.asarray(actor.apply(state.actors["actor_params"], obs))
    _, noise_key, _ = jax.random.split(key, 3)
    scale = np.repeat(np.asarray(apex_actors.actor_epsilons(2)), N // 2)[:, None]
    noise = scale * 0.3 * np.asarray(jax.random.normal(noise_key, (N, 1)))
    np.testing.assert_allclose(action, 2.0 * np.clip(mu + noise, -1, 1), rtol=1e-5, atol=1e-6)


def test_bad_layouts_are_config_errors():
    spec = envs.make("Pendulum-v1", num_envs=4).spec
    assert_refused("apex_ddpg", spec, "num_actors 3 does not divide the 4 envs", num_actors=3)
    assert_refused("apex_ddpg", spec, "num_actors", num_actors=0)
    assert_refused("apex_ddpg", spec, "option .replay_shards.: it is fixed at 1", replay_shards=2)
