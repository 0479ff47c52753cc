"""Warm starts (experiment/warmstart.py, ``--init-from RUN[:STEP]``): a run started from
another's last checkpoint evaluates its starting policy exactly as the source's final
evaluation (same seed, same evaluation key), records where it started; the parts of an
agent state are told apart by their fields and only the chosen ones are taken (members
broadcast from a single source); a run of another agent, a network of another shape, a
part the agent lacks and a mismatch of members are refused in one line, exit 2, with no
run directory written."""

import jax
import numpy as np
import pytest
import yaml

from jaxrl import agents, envs
from jaxrl.experiment import warmstart
from jaxrl.experiment.checkpoint import checkpoint_steps
from jaxrl.train import main
from jaxrl.types import member_axes
from tests.helpers import one_line_error, tiny_run, train_into, train_run

TINY = tiny_run("--agent.buffer_size 256 --run.eval_episodes 4")


def train(logdir, *args):
    return train_into(logdir, *TINY, *args)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return train_run(tmp_path_factory.mktemp("source"), *TINY, "--steps", "1024")


def test_a_warm_start_begins_where_the_source_ended(source, tmp_path):
    code, (run_dir,) = train(tmp_path, "--steps", "256", "--init-from", str(source))
    assert code == 0
    record = yaml.safe_load((run_dir / warmstart.INIT_FILE).read_text())
    assert record["init_from"] == str(source.resolve()) and record["step"] == 1024
    assert record["parts"] == ["params"] and record["agent"] == "dqn"
    final = yaml.safe_load((source / "summary.yaml").read_text())["final_eval_return"]
    assert record["start_eval_returns"] == [final]  # the same policy, the same episodes
    launch = yaml.safe_load((run_dir / "launch.yaml").read_text())
    assert launch["init_from"] == f"{source.resolve()}:1024"
    assert launch["init_parts"] == ["params"]
    assert checkpoint_steps(run_dir) == [256]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--agent.hidden_sizes", "[16]"], "the first mismatching array is agent_state.params"),
        (["--init-parts", "params,normalizer"], "agent 'dqn' has no normalizer state"),
        (["--init-parts", "weights"], "unknown --init-parts 'weights'; valid: params, optimizer"),
        ([":999"], "has no checkpoint at step 999; available: 1024"),
    ],
)
def test_what_does_not_fit_is_refused_in_one_line(source, tmp_path, capsys, args, message):
    target = str(source) + (args.pop(0) if args and args[0].startswith(":") else "")
    code, made = train(tmp_path / "runs", "--steps", "256", "--init-from", target, *args)
    one_line_error(capsys, message)
    assert code == 2 and made == []


def test_a_run_of_another_agent_is_refused(source, tmp_path, capsys):
    logdir = tmp_path / "runs"
    args = ["--agent", "pqn", "--env", "CartPole", "--init-from", str(source)]
    assert main([*args, "--logdir", str(logdir)]) == 2
    one_line_error(capsys, "is a run of agent 'dqn'; this run trains 'pqn'")
    assert not logdir.exists()


def test_init_parts_needs_init_from(tmp_path, capsys):
    code, made = train(tmp_path / "runs", "--init-parts", "params")
    assert code == 2 and "give --init-from" in capsys.readouterr().err and made == []


def _state(key, hidden=(8,)):
    spec = envs.make("CartPole-v1", num_envs=2).spec
    agent = agents.make("dqn", spec, hidden_sizes=hidden, buffer_size=16, batch_size=4)
    return jax.jit(agent.init)(jax.random.PRNGKey(key))


def stack(state, k):
    """``k`` members of ``state`` as ``experiment.sweep`` batches them (shared fields not)."""
    axes = member_axes(state)
    return jax.tree.map(
        lambda a, x: x if a is None else np.stack([x] * k), axes, state, is_leaf=lambda a: a is None
    )


def test_parts_are_told_apart_and_only_the_chosen_are_taken():
    src_state, new_state = _state(0), _state(1)
    src_state = src_state.replace(step=src_state.step + 7)
    buffer_marked = jax.tree.map(lambda x: ~x if x.dtype == bool else x + 1, src_state.buffer)
    src_state = src_state.replace(buffer=buffer_marked)
    parts = {warmstart.part_of(p) for p, _ in jax.tree_util.tree_flatten_with_path(new_state)[0]}
    assert parts == {"params", "optimizer", "buffer", None}
    source = warmstart.Source(None, 1, "dqn", 1, src_state)
    merged = warmstart.merge(source, new_state, ["buffer", "params"], 1)
    for name in ("params", "target_params", "buffer"):
        for a, b in zip(
            jax.tree.leaves(getattr(merged, name)),
            jax.tree.leaves(getattr(src_state, name)),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(
        jax.tree.leaves(merged.opt_state), jax.tree.leaves(new_state.opt_state), strict=True
    ):
        np.testing.assert_array_equal(a, b)  # not chosen: fresh
    assert int(merged.step) == int(new_state.step)  # counters start again
    # Three members from one: each member holds the source's arrays; a field the members
    # share (the buffer's position, a counter) keeps its shape.
    stacked = stack(new_state, 3)
    merged = warmstart.merge(source, stacked, ["params", "buffer"], 3)
    kernel = jax.tree.leaves(merged.params)[1]
    np.testing.assert_array_equal(kernel, np.stack([jax.tree.leaves(src_state.params)[1]] * 3))
    assert (
        merged.buffer.position.shape == () and merged.buffer.position == src_state.buffer.position
    )
    two = warmstart.Source(None, 1, "dqn", 2, stack(src_state, 2))
    with pytest.raises(warmstart.ConfigError, match="has 2 members; this run has 3"):
        warmstart.merge(two, stacked, ["params"], 3)


def test_parse_init_from():
    assert warmstart.parse_init_from("runs/a:1024") == (warmstart.Path("runs/a"), 1024)
    assert warmstart.parse_init_from("runs/a") == (warmstart.Path("runs/a"), None)
    assert warmstart.parse_init_from("C:x/run") == (warmstart.Path("C:x/run"), None)
