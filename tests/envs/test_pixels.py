"""Pixel observations and frame stacks (envs/pixels.py): the stack's order and its reset
at episode ends against a hand-written reference, for a JAX env (fused) and a Gymnasium
host env; grayscale and resize against NumPy; Pendulum's JAX rendering; one-line errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs import pixels
from jaxrl.envs.core import make_vector_env
from jaxrl.types import Box, ConfigError

EPISODE = 3  # the counter env ends after 3 steps


def counter_env(num_envs=2):
    """A 2x2x1 image env whose frame shows the step count t (episode restarts at 0 after
    ``EPISODE`` steps), so each stacked frame says which step it comes from."""

    def frame(t):
        return jnp.full((2, 2, 1), t, jnp.float32)

    def reset(key):
        return jnp.zeros((), jnp.int32), frame(0)

    def step(t, action, key):
        t = t + 1
        return t, frame(t), jnp.float32(0), t >= EPISODE

    return make_vector_env(
        name="counter",
        obs_shape=(2, 2, 1),
        obs_dtype="float32",
        action_space=Box((1,), (-1.0,), (1.0,)),
        max_episode_steps=100,
        num_envs=num_envs,
        reset_fn=reset,
        step_fn=step,
    )


def reference_stacks(k, steps):
    """Hand-written: the stacks (oldest first) seen at steps 0..steps and the final stack
    of each step, for an episode of EPISODE steps restarting at t = 0."""
    obs, final, history = [], [], []
    t = 0
    history = [0] * k
    obs.append(list(history))
    final.append(list(history))
    for _ in range(steps):
        t += 1
        last = history[1:] + [t]
        final.append(last)
        if t >= EPISODE:
            t = 0
            history = [0] * k
        else:
            history = last
        obs.append(list(history))
    return obs, final


def test_jax_frame_stack_order_and_reset_at_episode_end():
    env = pixels.wrap(counter_env(), pixels.PixelOptions(stack_size=3))
    assert env.spec.obs_shape == (2, 2, 3)
    state, ts = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    seen, finals = [ts.obs[0, 0, 0].tolist()], [ts.info["final_obs"][0, 0, 0].tolist()]
    for _ in range(7):
        state, ts = step(state, jnp.zeros((2, 1)), jax.random.PRNGKey(1))
        seen.append(ts.obs[0, 0, 0].tolist())
        finals.append(ts.info["final_obs"][0, 0, 0].tolist())
        np.testing.assert_array_equal(ts.obs[0], ts.obs[1])  # every pixel, both envs
    obs, final = reference_stacks(3, 7)
    assert seen == obs
    assert finals[1:] == final[1:]


def test_push_numpy_matches_hand_reference():
    frames = np.arange(2 * 1 * 1 * 4).reshape(2, 1, 1, 4)  # 2 envs, C=2, k=2
    frame = np.array([[[[8, 9]]], [[[10, 11]]]])
    out = pixels.push(frames, frame, np.array([False, True]), np)
    np.testing.assert_array_equal(out[0, 0, 0], [2, 3, 8, 9])  # shifted, new frame last
    np.testing.assert_array_equal(out[1, 0, 0], [10, 11, 10, 11])  # reset: copies


def test_pendulum_pixels_render_the_rod_where_theta_points():
    env = envs.make("Pendulum", num_envs=1, pixels=True, grayscale=True, resize=16, stack_size=2)
    assert env.spec.obs_shape == (16, 16, 2) and env.spec.obs_dtype == "uint8"
    up = np.asarray(pixels.pendulum_frame(jnp.array([1.0, 0.0, 0.0]), 16))
    right = np.asarray(pixels.pendulum_frame(jnp.array([0.0, 1.0, 0.0]), 16))
    assert up[2:7, 7:9].min() > 0.5 and up[10:, :].max() == 0  # upright: above the centre
    assert right[7:9, 9:13].min() > 0.5 and right[:, :6].max() == 0  # theta = pi/2: right
    _, ts = env.reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(ts.obs[..., 0], ts.obs[..., 1])  # a reset repeats frame


def test_grayscale_and_resize_match_numpy():
    rgb = np.random.default_rng(0).integers(0, 256, (6, 9, 3), dtype=np.uint8)
    out = pixels.host_frame(rgb, resize=4, grayscale=True)
    luma = np.round(rgb.astype(np.float64) @ [0.299, 0.587, 0.114])
    expected = luma[[0, 1, 3, 4]][:, [0, 2, 4, 6]]  # rows i*6//4, cols i*9//4
    np.testing.assert_array_equal(out[..., 0], expected.astype(np.uint8))


def test_gym_host_env_pixels_stack_and_reset():
    env = envs.make("gym:Pendulum-v1", num_envs=1, pixels=True, resize=12, grayscale=True,
                    stack_size=3, max_episode_steps=2)  # fmt: skip
    assert env.spec.obs_shape == (12, 12, 3) and env.spec.obs_dtype == "uint8"
    ts = env.reset(seed=0)
    first = ts.obs[0]
    assert (first[..., 0] == first[..., 2]).all()
    ts = env.step(np.zeros((1, 1), np.float32))
    second = ts.obs[0]
    np.testing.assert_array_equal(second[..., :2], first[..., 1:])  # shifted left
    ts = env.step(np.zeros((1, 1), np.float32))  # truncated: a new episode's stack
    assert ts.truncated[0]
    obs, final = ts.obs[0], ts.info["final_obs"][0]
    assert (obs[..., 0] == obs[..., 2]).all()
    np.testing.assert_array_equal(final[..., :2], second[..., 1:])  # the episode's last
    env.close()


@pytest.mark.parametrize(
    "name,options,match",
    [
        ("CartPole", {"pixels": True}, "no JAX renderer"),
        ("CartPole", {"stack_size": 4}, "add --env.pixels true"),
        ("Pendulum", {"stack_size": 0}, "stack_size must be a positive int"),
        ("Pendulum", {"pixels": "yes"}, "pixels must be true or false"),
    ],
)
def test_bad_pixel_options_are_one_line_errors(name, options, match):
    with pytest.raises(ConfigError, match=match) as e:
        envs.make(name, num_envs=1, **options)
    assert "\n" not in str(e.value)
