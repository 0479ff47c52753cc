"""Rainbow: every flag on its own compiles and learns a step; all flags off is DQN; the
distributional n-step loss matches a hand computation; noisy acting."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.q_learning.rainbow import RainbowConfig, make_network
from jaxrl.types import Transition
from tests.references import c51_project as project
from tests.references import softmax

OFF = dict(noisy=False, double=False, dueling=False, distributional=False, prioritized=False,
           n_step=1)  # fmt: skip
TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, learning_starts=0, num_atoms=11,
            v_min=-5.0, v_max=5.0, lr=1e-2, target_update_period=1000)  # fmt: skip


def spec(num_envs=2):
    return envs.make("CartPole-v1", num_envs=num_envs).spec


def rollout(rng, t, n, terminated=None):
    return Transition(
        obs=jnp.asarray(rng.normal(size=(t, n, 4)), jnp.float32),
        action=jnp.asarray(rng.integers(0, 2, size=(t, n)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(t, n)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(t, n, 4)), jnp.float32),
        terminated=jnp.asarray(np.zeros((t, n), bool) if terminated is None else terminated),
        truncated=jnp.zeros((t, n), bool),
        extras={},
    )


def changed(a, b):
    return any(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.any(np.asarray(x) != y)), a, b)))


@pytest.mark.parametrize(
    "flag",
    [
        {},
        {"noisy": True},
        {"double": True},
        {"dueling": True},
        {"distributional": True},
        {"n_step": 3},
        {"prioritized": True},
        {"noisy": True, "double": True, "dueling": True, "distributional": True, "n_step": 3,
         "prioritized": True},
    ],
    ids=lambda f: "+".join(f) or "none",
)  # fmt: skip
def test_each_flag_compiles_and_learns_a_step(flag):
    agent = agents.make("rainbow", spec(), **TINY | OFF | flag)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    update = jax.jit(agent.update)
    rng = np.random.default_rng(0)
    new_state, metrics = update(state, rollout(rng, 4, 2), jax.random.PRNGKey(1))
    new_state, metrics = update(new_state, rollout(rng, 4, 2), jax.random.PRNGKey(2))
    assert np.isfinite(float(metrics["loss"])) and int(new_state.updates) == 2
    assert changed(new_state.params, state.params)
    action, _, _ = jax.jit(agent.act, static_argnums=4)(
        new_state, jnp.zeros((2, 4)), (), jax.random.PRNGKey(3), True
    )
    assert action.shape == (2,) and action.dtype == jnp.int32


def test_all_flags_off_is_dqn():
    options = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, learning_starts=0, n_step=2,
                   double=True, dueling=True, lr=1e-2, epsilon_decay_steps=100, eval_epsilon=0.0,
                   max_grad_norm=None)  # fmt: skip
    dqn = agents.make("dqn", spec(), **options)
    rainbow = agents.make(
        "rainbow",
        spec(),
        **options
        | dict(
            noisy=False,
            distributional=False,
            prioritized=False,
            epsilon_end=0.05,
            adam_eps=1e-8,
            target_update_period=500,
            loss="huber",
        ),  # fmt: skip
    )
    rng = np.random.default_rng(1)
    data = [rollout(rng, 4, 2) for _ in range(3)]
    states = [jax.jit(a.init)(jax.random.PRNGKey(0)) for a in (dqn, rainbow)]
    updates = [jax.jit(a.update) for a in (dqn, rainbow)]
    for i, batch in enumerate(data):
        key = jax.random.PRNGKey(i)
        states = [u(s, batch, key)[0] for u, s in zip(updates, states, strict=True)]
    jax.tree.map(np.testing.assert_array_equal, states[0].params, states[1].params)


def cross_entropy(logits, target):
    return -(target * np.log(softmax(logits))).sum()


@pytest.mark.parametrize("terminal_at", [None, 1])
def test_distributional_n_step_loss_matches_hand_computation(terminal_at):
    gamma, n = 0.9, 3
    cfg = dict(TINY | OFF, distributional=True, double=True, n_step=n, buffer_size=3, gamma=gamma)
    agent = agents.make("rainbow", spec(1), **cfg)
    rng = np.random.default_rng(4)
    flags = np.zeros((n, 1), bool)
    if terminal_at is not None:
        flags[terminal_at] = True
    data = rollout(rng, n, 1, terminated=flags)
    state = jax.jit(agent.init)(jax.random.PRNGKey(1))
    _, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(2))

    net = make_network(spec(1), RainbowConfig(**cfg))
    logits = lambda o: np.asarray(net.apply(state.params, jnp.asarray(o)[None]))[0]  # [A, K]
    support = np.linspace(-5.0, 5.0, 11)
    r = np.asarray(data.reward)[:, 0]
    m = n if terminal_at is None else terminal_at + 1
    reward_sum = sum(gamma**k * r[k] for k in range(m))
    boot = np.asarray(data.next_obs)[m - 1, 0]
    next_logits = logits(boot)
    a_star = np.argmax([softmax(next_logits[a]) @ support for a in range(2)])  # double: online
    discount = 0.0 if terminal_at is not None else gamma**m
    target = project(support, reward_sum + discount * support, softmax(next_logits[a_star]))
    online = logits(np.asarray(data.obs)[0, 0])[int(data.action[0, 0])]
    np.testing.assert_allclose(float(metrics["loss"]), cross_entropy(online, target), rtol=1e-4)


def test_noisy_acting_explores_and_evaluates_with_mean_weights():
    cfg = TINY | OFF | dict(noisy=True, sigma0=5.0)
    agent = agents.make("rainbow", spec(), **cfg)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.asarray(np.random.default_rng(0).normal(size=(256, 4)), jnp.float32)
    act = jax.jit(agent.act, static_argnums=4)
    mean_q = make_network(spec(), RainbowConfig(**cfg)).apply(state.params, obs, deterministic=True)
    greedy = np.argmax(np.asarray(mean_q), axis=1)
    for key in range(3):  # evaluation: mean weights, eval_epsilon 0.001 -> nearly all greedy
        assert (
            np.asarray(act(state, obs, (), jax.random.PRNGKey(key), False)[0]) == greedy
        ).mean() > 0.97
    explored = [np.asarray(act(state, obs, (), jax.random.PRNGKey(k), True)[0]) for k in range(3)]
    assert all((e != greedy).any() for e in explored)  # parameter noise changes choices
    assert dataclasses.asdict(RainbowConfig())["sigma0"] == 0.5


@pytest.mark.parametrize("prioritized", [False, True])
def test_image_observations_use_compact_storage_and_the_nature_cnn(prioritized):
    from jaxrl.types import Discrete, EnvSpec

    image = EnvSpec(
        "Frames-v0", (36, 36, 4), "uint8", Discrete(3), num_envs=2, max_episode_steps=100
    )
    options = TINY | OFF | dict(prioritized=prioritized, n_step=2, buffer_size=32, batch_size=4)
    agent = agents.make("rainbow", image, **options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    assert state.buffer.frames.shape == (16, 2, 36, 36)  # one frame per step, not the stack
    assert "Conv_0" in state.params["params"]["torso"]
    rng = np.random.default_rng(0)

    def frames(t):
        obs = rng.integers(0, 256, size=(t, 2, 36, 36, 4), dtype=np.uint8)
        return Transition(
            obs=jnp.asarray(obs),
            action=jnp.asarray(rng.integers(0, 3, size=(t, 2)), jnp.int32),
            reward=jnp.ones((t, 2), jnp.float32),
            next_obs=jnp.asarray(obs),
            terminated=jnp.zeros((t, 2), bool),
            truncated=jnp.zeros((t, 2), bool),
            extras={},
        )

    update = jax.jit(agent.update)
    new_state, _ = update(state, frames(4), jax.random.PRNGKey(1))
    new_state, metrics = update(new_state, frames(4), jax.random.PRNGKey(2))
    assert np.isfinite(float(metrics["loss"])) and changed(new_state.params, state.params)
    assert (
        agents.make("rainbow", image, **options, storage="full")
        .init(jax.random.PRNGKey(0))
        .buffer.__class__.__name__
        != state.buffer.__class__.__name__
    )


def test_noisy_torso_puts_noisy_layers_in_the_mlp():
    from jaxrl.types import ConfigError

    cfg = RainbowConfig(**TINY | dict(noisy=True, noisy_torso=True, distributional=False))
    net = make_network(spec(), cfg)
    obs = jnp.ones((3, 4))
    keys = {"params": jax.random.PRNGKey(0), "noise": jax.random.PRNGKey(1)}
    params = jax.jit(net.init)(keys, obs)
    assert set(params["params"]["torso"]) == {"NoisyLinear_0"}
    torso_params = {"params": params["params"]["torso"]}
    noisy = jax.jit(lambda key: net.torso.apply(torso_params, obs, rngs={"noise": key}))
    assert not np.allclose(noisy(jax.random.PRNGKey(2)), noisy(jax.random.PRNGKey(3)))
    with pytest.raises(ConfigError, match="noisy_torso needs noisy true"):
        agents.make("rainbow", spec(), **TINY | dict(noisy=False, noisy_torso=True))
