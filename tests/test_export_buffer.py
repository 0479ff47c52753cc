"""``python -m jaxrl.export_buffer``: a replay buffer exported to ``.npz`` and imported
as another agent's demonstrations is the same data, and a user's mistake (here and in
``jaxrl.train``'s demonstration options) is one line, exit code 2, nothing written."""

import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.buffers.demonstrations import load_npz, save_npz
from jaxrl.export_buffer import buffer_transitions
from jaxrl.export_buffer import main as export_main
from jaxrl.train import main as train_main
from jaxrl.types import Transition
from tests.helpers import one_line_error

TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=64, learning_starts=1000)


def test_exported_and_reimported_buffer_is_identical(tmp_path):
    env = envs.make("Pendulum-v1", num_envs=2)
    agent = agents.make("sac", env.spec, **TINY)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    rng = np.random.default_rng(0)
    rollout = Transition(
        obs=rng.normal(size=(5, 2, 3)).astype(np.float32),
        action=rng.uniform(-2, 2, size=(5, 2, 1)).astype(np.float32),
        reward=rng.normal(size=(5, 2)).astype(np.float32),
        next_obs=rng.normal(size=(5, 2, 3)).astype(np.float32),
        terminated=rng.random((5, 2)) < 0.3,
        truncated=rng.random((5, 2)) < 0.3,
        extras={},
    )
    state, _ = jax.jit(agent.update)(state, rollout, jax.random.PRNGKey(1))
    exported = buffer_transitions(state, env.spec)
    # Oldest first, env by env: the rollout flattened, actions back in the env's units.
    for field in ("obs", "action", "reward", "next_obs", "terminated", "truncated"):
        want = getattr(rollout, field).reshape((10, *getattr(rollout, field).shape[2:]))
        np.testing.assert_array_equal(getattr(exported, field), want)
    save_npz(tmp_path / "buffer.npz", exported)
    again = load_npz(tmp_path / "buffer.npz", env.spec)
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(exported), strict=True):
        np.testing.assert_array_equal(a, b)
    # Imported as demonstrations: the agent holds them as its buffer held them.
    seeded = agents.make("sac", env.spec, **TINY, demo_file=str(tmp_path / "buffer.npz"),
                         demo_ratio=0.5)  # fmt: skip
    demos = jax.jit(seeded.init)(jax.random.PRNGKey(0)).learner.aux["demos"]
    stored = jax.tree.map(
        lambda x: np.asarray(x)[:5].reshape((10, *x.shape[2:])), state.buffer.data
    )
    for field in ("obs", "action", "reward", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(demos, field), getattr(stored, field))


@pytest.mark.parametrize(
    "args, message",
    [
        (["RUN", "out.npz"], "has no checkpoint"),
        (["RUN", "out.txt"], "OUT must be a .npz"),
        (["RUN", "out.npz", "--last", "0"], "--last must be >= 1"),
    ],
)
def test_export_mistakes_are_one_line_exit_2(tmp_path, capsys, args, message):
    (tmp_path / "RUN").mkdir()
    args = [str(tmp_path / a) if a in ("RUN", "out.npz", "out.txt") else a for a in args]
    assert export_main(args) == 2
    one_line_error(capsys, message)
    assert not (tmp_path / "out.npz").exists()


def test_train_refuses_bad_demonstration_options(tmp_path, capsys):
    np.savez(tmp_path / "wrong.npz", obs=np.zeros((4, 3), np.float32))
    base = ["--agent", "sac", "--env", "Pendulum", "--logdir", str(tmp_path / "runs")]
    cases = [
        (["--agent.demo_ratio", "1.5"], "demo_ratio"),
        (["--agent.amp", "true"], "amp needs reference data"),
        (["--agent.demo_file", str(tmp_path / "wrong.npz"), "--agent.demo_ratio", "0.25"],
         "missing ['action'"),
    ]  # fmt: skip
    for extra, message in cases:
        assert train_main([*base, *extra]) == 2
        one_line_error(capsys, message)
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
