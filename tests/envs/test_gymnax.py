"""MinAtar through gymnax: the vectorized env equals a plain Python loop over gymnax's own
``reset_env`` / ``step_env`` with the time limit and auto-reset done by hand; the time
limit is ``truncated``, never ``terminated``; MinAtar runs inside the fused scan runner."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.envs.gymnax import GAMES
from jaxrl.networks import MinAtarCNN
from jaxrl.runners import RunConfig, make_train
from jaxrl.types import ConfigError, Discrete

N, LIMIT, STEPS = 3, 20, 45


def reference_rollout(gymnax_id, actions, reset_key, step_keys):
    """Python loop over single gymnax envs, mirroring ``make_vector_env``'s key use."""
    import gymnax  # here, not at collection (a second in each pytest-xdist worker)

    core, params = gymnax.make(gymnax_id)
    reset_env = jax.jit(lambda k: core.reset_env(k, params))  # jit: speed only
    step_env = jax.jit(lambda k, s, a: core.step_env(k, s, a, params))
    states, obs = [], []
    for k in jax.random.split(reset_key, N):
        o, s = reset_env(k)
        states.append(s)
        obs.append(np.asarray(o))
    ret, length = np.zeros(N), np.zeros(N, int)
    out = []
    for t, key in enumerate(step_keys):
        keys = jax.random.split(key, 2 * N)
        row = {k: [] for k in ("obs", "reward", "term", "trunc", "final", "ep_ret", "ep_len")}
        for i in range(N):
            o, s, r, term, _ = step_env(keys[i], states[i], actions[t, i])
            o, r, term = np.asarray(o), float(r), bool(term)
            ret[i] += r
            length[i] += 1
            trunc = not term and length[i] >= LIMIT
            row["final"].append(o)
            row["ep_ret"].append(ret[i] if term or trunc else 0.0)
            row["ep_len"].append(length[i] if term or trunc else 0)
            if term or trunc:
                o, s = reset_env(keys[N + i])
                o = np.asarray(o)
                ret[i], length[i] = 0.0, 0
            states[i], obs[i] = s, o
            for k, v in (("obs", o), ("reward", r), ("term", term), ("trunc", trunc)):
                row[k].append(v)
        out.append({k: np.array(v) for k, v in row.items()})
    return out


@pytest.mark.parametrize("name", ["MinAtar-Breakout", "MinAtar-SpaceInvaders"])
def test_matches_gymnax_loop_with_time_limit(name):
    env = envs.make(name, num_envs=N, max_episode_steps=LIMIT, backend="gymnax")
    n_actions = env.spec.action_space.n
    # Breakout: always "left" loses the ball quickly (termination); others random.
    actions = np.array(jax.random.randint(jax.random.PRNGKey(1), (STEPS, N), 0, n_actions))
    actions[:, 0] = 0
    reset_key, *step_keys = jax.random.split(jax.random.PRNGKey(0), STEPS + 1)

    def rollout(key0, keys, acts):
        state, ts0 = env.reset(key0)
        _, tss = jax.lax.scan(lambda s, x: env.step(s, x[0], x[1]), state, (acts, keys))
        return ts0, tss

    ts0, tss = jax.jit(rollout)(reset_key, jnp.stack(step_keys), jnp.asarray(actions, jnp.int32))
    ref = reference_rollout(GAMES[name][0], actions, reset_key, step_keys)
    assert ts0.obs.shape == (N, *env.spec.obs_shape) and ts0.obs.dtype == jnp.float32
    for t, r in enumerate(ref):
        np.testing.assert_array_equal(tss.obs[t], r["obs"])
        np.testing.assert_array_equal(tss.info["final_obs"][t], r["final"])
        np.testing.assert_allclose(tss.reward[t], r["reward"])
        np.testing.assert_array_equal(tss.terminated[t], r["term"])
        np.testing.assert_array_equal(tss.truncated[t], r["trunc"])
        np.testing.assert_allclose(tss.info["episode_return"][t], r["ep_ret"])
        np.testing.assert_array_equal(tss.info["episode_length"][t], r["ep_len"])
    # both kinds of episode end happened, and never together
    assert tss.terminated.any() and tss.truncated.any()
    assert not (tss.terminated & tss.truncated).any()


@pytest.mark.parametrize(
    "name, alias, channels, n",
    [
        ("MinAtar-Breakout", "Breakout-MinAtar", 4, 3),
        ("MinAtar-Asterix", "asterix-minatar", 4, 5),
        ("MinAtar-Freeway", "Freeway-MinAtar", 7, 3),
        ("MinAtar-SpaceInvaders", "minatar-spaceinvaders", 6, 4),
    ],
)
def test_registry_specs(name, alias, channels, n):
    assert envs.canonical_name(alias) == name
    spec = envs.make(alias, num_envs=2, backend="gymnax").spec
    assert spec.obs_shape == (10, 10, channels) and spec.obs_dtype == "float32"
    assert spec.action_space == Discrete(n) and spec.num_envs == 2
    assert spec.max_episode_steps == (2500 if name == "MinAtar-Freeway" else 1000)


def test_unknown_option_is_config_error():
    with pytest.raises(ConfigError, match="unknown option 'sticky'"):
        envs.make("MinAtar-Breakout", sticky=0.1)


def test_dqn_picks_minatar_cnn_and_runs_inside_scan():
    env = envs.make("MinAtar-Breakout", num_envs=4)
    agent = agents.make(
        "dqn", env.spec, hidden_sizes=(16,), batch_size=8, buffer_size=512,
        learning_starts=64, target_update_period=64, epsilon_decay_steps=200,
    )  # fmt: skip
    params = jax.jit(agent.init)(jax.random.PRNGKey(0)).params["params"]
    torso = params["torso"]
    assert torso["Conv_0"]["kernel"].shape == (3, 3, 4, 16)  # Young & Tian's conv
    assert torso["Dense_0"]["kernel"].shape == (8 * 8 * 16, 16)
    assert MinAtarCNN((16,)).apply({"params": torso}, jnp.zeros((2, 10, 10, 4))).shape == (2, 16)

    config = RunConfig(steps=640, rollout_len=4, log_every=320, eval_every=0)
    state, metrics = jax.jit(make_train(agent, env, config))(jax.random.PRNGKey(0))
    steps = np.asarray(metrics["step"])
    np.testing.assert_array_equal(steps, 16 * np.arange(1, 41))
    loss = np.asarray(metrics["loss"])
    assert np.isfinite(loss[steps >= 64]).all() and np.isnan(loss[steps < 64]).all()
    # every env step belongs either to a finished episode or to the one in progress
    finished = int(np.sum(metrics["episode_length_sum"]))
    in_progress = int(np.sum(state.env_state.episode_length))
    assert int(np.sum(metrics["episodes"])) > 0
    assert finished + in_progress == 640
