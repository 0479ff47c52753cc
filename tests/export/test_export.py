"""Exported greedy policies (StableHLO and ONNX) act as ``agent.act(..., explore=False)``
for every agent family, a dict observation's mask included; ``python -m jaxrl.export``
writes the file whole, and a user's mistake is one line, exit code 2, nothing written."""

import os
import stat

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.export import greedy_policy, to_onnx, to_stablehlo
from jaxrl.export.__main__ import main as export_main
from tests.helpers import one_line_error, tiny_run, train_run
from tests.masked_env import make_masked_env

ort = pytest.importorskip("onnxruntime")

SMALL = {"hidden_sizes": [8]}
# One case per policy family: A2C acts through PPO's code, TD3 through DDPG's actor.
CASES = [
    ("dqn", "CartPole", SMALL),
    ("rainbow", "CartPole", SMALL),
    ("ppo", "CartPole", SMALL),
    ("ppo", "Pendulum", SMALL),
    ("sac", "Pendulum", {}),
    ("ddpg", "Pendulum", {}),
    ("dqn", "MinAtar-Breakout", {}),
]


def reference_actions(agent, state, obs, carry):
    """``agent.act`` greedy with eval_epsilon 0, with another key than the export's."""
    hparams = getattr(state, "hparams", None)
    if hparams is not None and hasattr(hparams, "eval_epsilon"):
        state = state.replace(hparams=hparams.replace(eval_epsilon=0.0 * hparams.eval_epsilon))
    act = jax.jit(agent.act, static_argnums=4)  # one program, not one per operation
    action, carry, _ = act(state, obs, carry, jax.random.PRNGKey(7), False)
    return np.asarray(action), carry


def random_inputs(inputs, batch, seed=0):
    rng = np.random.default_rng(seed)
    feed = {}
    for name, s in inputs.items():
        shape = (batch, *s.shape[1:])
        if s.dtype == np.dtype(bool):
            feed[name] = rng.random(shape) < 0.5
        elif np.dtype(s.dtype).kind == "f":
            feed[name] = (2 * rng.normal(size=shape)).astype(s.dtype)
        else:
            feed[name] = rng.integers(0, 2, shape).astype(s.dtype)
    return feed


def assert_actions_equal(got, want):
    if np.dtype(want.dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("agent_name,env_name,overrides", CASES)
def test_exports_act_as_the_greedy_agent(agent_name, env_name, overrides):
    spec = envs.make(env_name, num_envs=1).spec
    agent = agents.make(agent_name, spec, **overrides)
    state = jax.jit(agent.init)(jax.random.PRNGKey(1))
    fn, inputs = greedy_policy(agent, state, spec, batch_size=3)
    feed = random_inputs(inputs, 3)
    carry = agent.init_carry(3)
    want, want_carry = reference_actions(agent, state, feed["obs"], carry)
    onnx_out = ort.InferenceSession(to_onnx(fn, inputs).SerializeToString()).run(None, feed)
    assert_actions_equal(onnx_out[0], want)
    # StableHLO has a symbolic batch: call it with 5 envs.
    feed5 = random_inputs(inputs, 5, seed=1)
    carry5 = {k: np.zeros((5, *v.shape[1:]), v.dtype) for k, v in inputs.items() if "carry" in k}
    feed5.update(carry5)
    exported = jax.export.deserialize(bytearray(to_stablehlo(fn, inputs)))
    got = exported.call(*feed5.values())
    want5, want5_carry = reference_actions(agent, state, feed5["obs"], agent.init_carry(5))
    assert_actions_equal(np.asarray(got[0]), want5)
    for a, b in zip(got[1:], jax.tree.leaves(want5_carry), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_exported_policy_takes_the_action_mask():
    env = make_masked_env(num_envs=4)
    agent = agents.make("dqn", env.spec, hidden_sizes=[8])
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    fn, inputs = greedy_policy(agent, state, env.spec, batch_size=4)
    assert list(inputs) == ["obs", "action_mask"]
    feed = random_inputs(inputs, 4)
    feed["action_mask"][:, 0] = True  # at least one legal action
    feed["action_mask"][:, 1] = False
    obs = {k: jnp.asarray(v) for k, v in feed.items()}
    want, _ = reference_actions(agent, state, obs, ())
    (got,) = ort.InferenceSession(to_onnx(fn, inputs).SerializeToString()).run(None, feed)
    np.testing.assert_array_equal(got, want)
    assert feed["action_mask"][np.arange(4), got].all()


# The run the CLI exports (the ``trained_run`` fixture): the tiny DQN on 2 envs, 256 steps.
TRAINED_RUN = tiny_run(
    "--num-envs 2 --steps 256 --run.rollout_len 8 --run.log_every 128 --run.eval_every 0"
    " --run.eval_episodes 1"
)


def test_cli_writes_both_formats(trained_run, capsys):
    from jaxrl.checkpoint import restore

    assert export_main([str(trained_run), "--format", "onnx", "--batch", "2"]) == 0
    assert export_main([str(trained_run), "--format", "stablehlo"]) == 0
    (onnx_file,) = (trained_run / "export").glob("*.onnx")
    (hlo_file,) = (trained_run / "export").glob("*.stablehlo")
    assert "checkpoint step 256" in capsys.readouterr().out
    agent, state, _ = restore(trained_run)
    obs = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    want, _ = reference_actions(agent, state, obs, ())
    (got,) = ort.InferenceSession(str(onnx_file)).run(None, {"obs": obs})
    np.testing.assert_array_equal(got, want)
    exported = jax.export.deserialize(bytearray(hlo_file.read_bytes()))
    np.testing.assert_array_equal(np.asarray(exported.call(obs)[0]), want)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--format", "tflite"], "invalid choice: 'tflite'"),
        (["--format", "onnx", "--step", "5"], "no checkpoint at step 5"),
        (["--format", "onnx", "--member", "1"], "has one member"),
        (["--format", "onnx", "--batch", "0"], "--batch must be >= 1"),
    ],
)
def test_user_mistakes_are_one_line_and_write_nothing(trained_run, tmp_path, capsys, args, message):
    out = tmp_path / "policy.bin"
    assert export_main([str(trained_run), *args, "--out", str(out)]) == 2
    one_line_error(capsys, message)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_exported_file_has_the_mode_the_umask_gives(trained_run, tmp_path):
    """A policy file is shared like any file a user writes: 0666 less the umask (it was
    0600, the mode of a temporary file), and no temporary file is left beside it."""
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        out = tmp_path / f"policy_{umask:o}.stablehlo"
        previous = os.umask(umask)
        try:
            assert export_main([str(trained_run), "--format", "stablehlo", "--out", str(out)]) == 0
        finally:
            os.umask(previous)
        assert stat.S_IMODE(out.stat().st_mode) == mode, oct(out.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "policy_22.stablehlo",
        "policy_27.stablehlo",
    ]


def test_missing_run_is_one_line(tmp_path, capsys):
    assert export_main([str(tmp_path / "nope"), "--format", "onnx"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_exports_the_asked_member_of_a_seeds_run(tmp_path):
    from jaxrl.checkpoint import restore
    from jaxrl.types import take_member

    run = train_run(tmp_path / "runs", *TRAINED_RUN, "--seeds", "2")
    out = tmp_path / "member1.onnx"
    assert export_main([str(run), "--format", "onnx", "--member", "1", "--out", str(out)]) == 0
    agent, state, _ = restore(run)
    obs = np.random.default_rng(1).normal(size=(1, 4)).astype(np.float32) * 2
    (got,) = ort.InferenceSession(str(out)).run(None, {"obs": obs})
    want, _ = reference_actions(agent, take_member(state, 1), obs, ())
    np.testing.assert_array_equal(got, want)
    assert export_main([str(run), "--format", "onnx", "--member", "2", "--out", str(out)]) == 2
