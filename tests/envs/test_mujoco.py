"""MuJoCo HalfCheetah on Brax (``HalfCheetah-brax``, ``--env.backend brax``) behind the Env
contract: spec, clipped actions and the control cost, truncation at the time limit with
auto-reset, final_obs and raw episode returns. Kept tiny (2 envs, a 3-step time limit, one
compiled program) because Brax compiles slowly on CPU; the MJX envs are tests/envs/test_mjx.py."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import envs
from jaxrl.types import Box


def test_halfcheetah_contract():
    env = envs.make("HalfCheetah-brax", num_envs=2, max_episode_steps=3)
    assert env.spec.name == "HalfCheetah-brax" and env.spec.obs_shape == (17,)
    assert env.spec.action_space == Box((6,), (-1.0,) * 6, (1.0,) * 6)
    action = jnp.array([[1.5] * 6, [-0.5] * 6], jnp.float32)  # row 0 beyond the box

    def run(key):
        state, first = env.reset(key)

        def body(state, key):
            state, ts = env.step(state, action, key)
            return state, (ts, state.core.metrics["reward_ctrl"])

        return first, jax.lax.scan(body, state, jax.random.split(key, 4))[1]

    first, (ts, ctrl) = jax.jit(run)(jax.random.PRNGKey(0))
    ctrl = np.asarray(ctrl)
    assert ts.obs.shape == (4, 2, 17) and ts.obs.dtype == jnp.float32
    # Control cost 0.1 * |clip(a)|^2 (Gymnasium's ctrl_cost_weight), on the clipped action,
    # in the reward the env returns on the steps that did not reset.
    np.testing.assert_allclose(ctrl[[0, 1, 3]], [[-0.6, -0.15]] * 3, rtol=1e-5)
    # Truncated after 3 steps in both envs, never terminated.
    truncated = np.asarray(ts.truncated)
    np.testing.assert_array_equal(truncated, [[False] * 2, [False] * 2, [True] * 2, [False] * 2])
    assert not np.asarray(ts.terminated).any()
    info = jax.tree.map(np.asarray, ts.info)
    np.testing.assert_array_equal(info["episode_length"][2], [3, 3])
    np.testing.assert_allclose(
        info["episode_return"][2], np.asarray(ts.reward)[:3].sum(0), rtol=1e-5
    )
    # Auto-reset: obs after the last step is a new episode's first; final_obs the real last.
    assert not np.allclose(info["final_obs"][2], np.asarray(ts.obs)[2])
    np.testing.assert_array_equal(info["final_obs"][[0, 1, 3]], np.asarray(ts.obs)[[0, 1, 3]])
    start = np.asarray(first.obs)
    assert np.abs(np.asarray(ts.obs)[2] - start).max() < 1.0  # near the initial pose again
