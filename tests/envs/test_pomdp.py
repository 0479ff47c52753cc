"""The partially observed tasks (envs/pomdp.py): the stateless control tasks are their
full envs with the velocities dropped, and MemoryChain follows bsuite's memory task
(a NumPy episode written out step by step)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import envs

N = 4


def _trajectory(env, actions, key=0):
    """The ``TimeStep``s from the reset on, stacked ``[T + 1, N, ...]``: one jitted
    program (a scan over ``actions``)."""

    def run(key, actions):
        state, ts = env.reset(key)
        keys = jax.random.split(key, len(actions))
        step = lambda state, inputs: env.step(state, *inputs)
        _, steps = jax.lax.scan(step, state, (actions, keys))
        return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), ts, steps)

    return jax.tree.map(np.asarray, jax.jit(run)(jax.random.PRNGKey(key), actions))


def test_stateless_control_is_the_full_env_without_velocities():
    """Same keys and actions: the same rewards and episode ends, and the observations are
    the full env's positions (CartPole ``[x, theta]``, Pendulum ``[cos, sin]``)."""
    for name, full, keep in (
        ("StatelessCartPole-v1", "CartPole-v1", [0, 2]),
        ("StatelessPendulum-v1", "Pendulum-v1", [0, 1]),
    ):
        masked, whole = envs.make(name, num_envs=N), envs.make(full, num_envs=N)
        space = whole.spec.action_space
        if name.startswith("StatelessCartPole"):
            actions = np.random.default_rng(0).integers(0, 2, (40, N))
        else:
            actions = np.random.default_rng(0).uniform(-2, 2, (40, N, *space.shape))
        actions = jnp.asarray(actions, jnp.int32 if name.startswith("StatelessCart") else None)
        assert masked.spec.obs_shape == (2,) and masked.spec.action_space == space
        a, b = _trajectory(masked, actions), _trajectory(whole, actions)
        np.testing.assert_array_equal(a.obs, b.obs[..., keep])
        np.testing.assert_array_equal(a.reward, b.reward)
        np.testing.assert_array_equal(a.terminated | a.truncated, b.terminated | b.truncated)


def np_memory_chain(context, actions, length):
    """bsuite's memory task for one env: observations ``(1 - t / L, query, context at t
    = 0)``, reward +1 / -1 at the last step for naming the context (1 for +1), 0 before."""
    obs, rewards = [], []
    for t in range(length):
        obs.append([1 - t / length, float(t == length - 1), context if t == 0 else 0.0])
        right = actions[t] == (1 if context > 0 else 0)
        rewards.append((1.0 if right else -1.0) if t == length - 1 else 0.0)
    return np.asarray(obs, np.float32), np.asarray(rewards, np.float32)


def test_memory_chain_follows_bsuite():
    length = 4
    env = envs.make("MemoryChain-v0", num_envs=N, memory_length=length)
    actions = jnp.asarray(np.random.default_rng(1).integers(0, 2, (2 * length, N)), jnp.int32)
    steps = _trajectory(env, actions, key=3)
    obs, rewards, ends = steps.obs, steps.reward[1:], steps.terminated[1:]  # obs [2L + 1, N, 3]
    assert not steps.truncated.any()
    for episode in range(2):
        first = episode * length
        for n in range(N):
            context = obs[first, n, 2]
            assert context in (-1.0, 1.0)
            ref_obs, ref_rewards = np_memory_chain(context, actions[first:, n], length)
            np.testing.assert_allclose(obs[first : first + length, n], ref_obs, rtol=1e-6)
            np.testing.assert_array_equal(rewards[first : first + length, n], ref_rewards)
            assert list(ends[first : first + length, n]) == [False] * (length - 1) + [True]
    assert len({tuple(obs[0, :, 2]), tuple(obs[length, :, 2])}) == 2  # a fresh context
