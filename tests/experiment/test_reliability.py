"""Runs that never lie and never lose work (issue 13): the bad-input matrix (one stderr
line, exit code 2, no traceback, no file written), the non-finite guard (exit code 3, the
last finite checkpoint kept), SIGINT/SIGTERM (a checkpoint, the summary, exit 128 +
signal), the run-directory lock, resume's checks, suggestions and help."""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from jaxrl import agents, evaluate, plot
from jaxrl.experiment import guards
from jaxrl.experiment.checkpoint import checkpoint_steps
from jaxrl.experiment.lock import RunLock
from jaxrl.train import main
from tests import helpers
from tests.helpers import tiny_run

# The tiny DQN of tests/test_train.py (the same compiled program, from the XLA cache).
TINY = tiny_run("--agent.updates_per_rollout 2 --run.eval_every 512", drop=["--run.rollout_len"])


def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def one_line_error(capsys, fragment):
    err = helpers.one_line_error(capsys, fragment)
    assert err.startswith("error: "), err
    return err


def _setup_files(tmp):
    (tmp / "a_file").write_text("x")
    (tmp / "empty.yaml").write_text("")
    (tmp / "tagged.yaml").write_text("!!python/object:os.system\nagent: {}\n")
    (tmp / "dqn.yaml").write_text("agent: {name: dqn, buffer_size: 100}\n")
    (tmp / "l2.yaml").write_text("agent: {name: dqn, extra_losses: [tests.user_extra_losses:l2]}\n")
    (tmp / "edited.yaml").write_text("agent: {name: ppo, buffer_size: 100}\n")
    run = tmp / "logs" / "dqn_CartPole-v1_s0_1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("agent: {name: dqn}\n")


TRAIN_CASES = [
    # item 2: values out of range, one rule for every declared range
    (["--agent.gamma", "1.5"], "gamma must be in [0, 1], got 1.5"),
    (["--agent.lr", "-1"], "lr must be in (0, inf)"),
    (["--agent.lr", "0"], "lr must be in (0, inf)"),
    (["--agent.lr", "nan"], "lr must be in (0, inf), got nan"),
    (["--agent.lr", "inf"], "lr must be in (0, inf), got inf"),
    (["--agent.gamma", "nan"], "gamma must be in [0, 1]"),
    (["--agent.epsilon_start", "2"], "epsilon_start must be in [0, 1]"),
    (["--agent.eval_epsilon", "1.5"], "eval_epsilon must be in [0, 1]"),
    (["--agent", "ppo", "--agent.gae_lambda", "2"], "gae_lambda must be in [0, 1]"),
    (["--sweep", "agent.gamma=0.9,1.5"], "gamma must be in [0, 1], got 1.5"),
    (["--agent.hidden_sizes", "[]"], "hidden_sizes needs at least 1 entries"),
    (["--agent.hidden_sizes", "[0]"], "hidden_sizes must be in (0, inf)"),
    (["--steps", "99999999999999"], "steps must be in [1, 2147483647]"),
    (["--seed", "99999999999999999999"], "seed must be in [-2147483648, 2147483647]"),
    (["--agent", "dqn", "--agent", "ppo"], "--agent is given twice"),
    (["--agent.tau", "0"], "tau must be in (0, 1]"),
    (["--agent.batch_size", "0"], "batch_size must be in [1, inf)"),
    # item 6: cryptic errors and tracebacks
    (["--agent.buffer_size", "10"], "agent.buffer_size 10 must hold one rollout"),
    (["--logdir", "{tmp}/a_file"], "is a file; give a directory"),
    (["--logdir", "{tmp}/a_file/runs"], "which is a file"),
    (["--logdir", ""], "--logdir is empty"),
    # item 7: errors found while tracing leave no run directory
    (["--agent", "ppo", "--agent.num_minibatches", "3"], "not divisible by num_minibatches"),
    (["--env", "Pong", "--seeds", "100000"], "seeds fit"),
    # item 10 and 13: config files
    (["--config", "{tmp}/empty.yaml"], "is empty"),
    (["--config", ""], "--config is empty"),
    (["--config", "{tmp}"], "is a directory"),
    (["--config", "{tmp}/tagged.yaml"], "has a YAML tag at line 1 that safe loading refuses"),
    (["--agent", "rainbow", "--config", "{tmp}/dqn.yaml"], "is for agent 'dqn', not 'rainbow'"),
    (
        ["--config", "{tmp}/edited.yaml"],
        "unknown option 'buffer_size' for agent 'ppo': it is an option of",
    ),
    (["--resume", "{tmp}/logs"], "holds 1 run directories, not a run"),
    (["--step", "5"], "--step selects the checkpoint a --resume continues from"),
    # item 12: suggestions
    # issue 58: MCTS needs a game's legal-action mask (and its rules)
    (["--agent", "alphazero", "--env", "CartPole-v1"], "env 'CartPole-v1' has no legal-action"),
    (["--env", "Cartpol"], "unknown env 'Cartpol' (did you mean 'CartPole-v1'?)"),
    (
        ["--env", "CartPole-v0"],
        "(did you mean 'CartPole-v1' or 'StatelessCartPole-v1' or 'MultiInputCartPole-v1'?)",
    ),
    (["--agent", "dqm"], "unknown agent 'dqm' (did you mean 'dqn'?)"),
    (["--agent.lrr", "1"], "unknown option 'lrr' for agent 'dqn' (did you mean 'lr'?)"),
    (["--agent.n_stepp", "3"], "(did you mean 'n_step'?)"),
    (["--checkpoint_every", "5"], "(did you mean '--checkpoint-every'?)"),
    # part 4: names from other libraries meaning something else
    (["--agent.target_net_update_fraction", "0.5"], "weighs the other network"),
    # issue 55 part 4: SB3's, CleanRL's and machin's names, refused where they differ
    (["--agent", "ppo", "--agent.n_steps", "128"], "n_steps is PPO's and A2C's rollout length"),
    (
        ["--agent", "sac", "--env", "Pendulum", "--agent.learning_rate", "1e-3"],
        "give --agent.actor_lr and --agent.critic_lr",
    ),
    (["--agent", "ppo", "--agent.batch_size", "64"], "SB3's PPO batch_size is the minibatch size"),
    (["--agent", "ppo", "--agent.vf_coef", "0.5"], "value_weight weigh 0.5 E[(V - R)^2]"),
    (["--agent", "ppo", "--agent.total_timesteps", "9"], "total_timesteps is the run's length"),
    (["--agent.exploration_fraction", "0.15", "--steps", "1001"], "150.15 env steps, not a whole"),
    (
        ["--agent.learning_rate", "1e-3", "--agent.lr", "5e-4"],
        "'--agent.learning_rate' and '--agent.lr' name the same option of agent 'dqn'; give one",
    ),
    # issue 55: wrong suggestions (learning_starts, updates_per_step, latent_size, total_steps)
    (["--agent", "ppo", "--agent.update_rate", "0.1"], "is machin's soft target-update rate"),
    (["--agent", "ppo", "--agent.replay_size", "99"], "is machin's replay buffer capacity"),
    (
        ["--agent", "maddpg", "--env", "mpe:simple_spread", "--agent.sub_policies", "0"],
        "agent 'maddpg': sub_policies must be in [1, inf), got 0",
    ),
    # issue 55 part 6: a user's torso checked at its boundary (tests/user_code.py)
    (
        ["--import", "tests.user_code", "--agent.torso", "one_argument"],
        "torso 'one_argument' must be fn(obs_shape, hidden_sizes) -> flax.linen.Module",
    ),
    (
        ["--import", "tests.user_code", "--agent.torso", "flat_features"],
        "must map observations [2, 4] to features [batch, F] ([2, F] here), got (2,)",
    ),
    (
        ["--import", "tests.user_code", "--agent.torso", "int_features"],
        "its features must be float (float32), got int32",
    ),
    (
        ["--import", "tests.user_code", "--env", "NoNumEnvs-v0"],
        "its factory must be factory(num_envs=1, **options) -> jaxrl.types.Env; it takes",
    ),
    (["--import", "tests.user_code", "--env", "NotAnEnv-v0"], "must return a jaxrl.types.Env"),
    (
        ["--import", "tests.user_code", "--env", "WrongObs-v0"],
        "reset must return obs float32[1, 5] (its spec, num_envs 1), got float32[1, 4]",
    ),
    (["--import", "tests.user_code", "--callback", "os:getcwd"], "on_chunk must take one argument"),
    (
        ["--import", "tests.user_code", "--agent", "not_an_agent"],
        "must return a jaxrl.types.Agent(init, act, update), got dict",
    ),
    (
        ["--import", "tests.user_code", "--agent", "wrong_actions"],
        "act must return actions int32[1] for 1 envs, got float32[1, 2]",
    ),
    # issue 57 part 3: a user's extra loss (tests/user_extra_losses.py)
    (
        [
            "--import",
            "tests.user_extra_losses",
            "--agent.extra_losses",
            "tests.user_extra_losses:per_row_loss",
        ],
        "extra loss 'per_row_loss' must return (float scalar loss, metrics dict); got a loss",
    ),
    (
        ["--config", "{tmp}/l2.yaml"],
        "would import module 'tests.user_extra_losses', which the command line did not name",
    ),
    (
        [
            "--import",
            "tests.user_extra_losses",
            "--agent.extra_losses",
            "tests.user_extra_losses:not_a_loss",
        ],
        "must return a jaxrl.agents.ExtraLoss, got function",
    ),
    (
        ["--import", "tests.user_extra_losses", "--agent.extra_losses", "l2"],
        "option 'extra_losses' needs package.module:function, got 'l2'",
    ),
    (  # l2's callback reads DQN's metric "loss"; SAC logs critic_loss, actor_loss, ...
        [
            "--import",
            "tests.user_extra_losses",
            "--agent",
            "sac",
            "--env",
            "Pendulum",
            "--agent.extra_losses",
            "tests.user_extra_losses:l2",
        ],
        "extra loss 'l2': on_metrics reads metric 'loss', which this agent does not log",
    ),
    # issue 58: memory cells and the partially observed tasks
    (["--agent", "ppo", "--agent.cell", "grux"], "unknown cell 'grux' (did you mean 'gru'?)"),
    (
        ["--agent", "ppo", "--agent.cell", "gru", "--num-envs", "2"],
        "num_envs = 2 is not divisible by num_minibatches = 4 (a minibatch is whole env",
    ),
    (["--env", "MemoryChain", "--env.memory_length", "0"], "memory_length must be a positive"),
    (["--agent", "r2d2", "--agent.cell", "lstmx"], "unknown cell 'lstmx' (did you mean 'lstm'?)"),
    (
        ["--agent", "r2d2", "--agent.sequence_length", "10", "--agent.burn_in", "10"],
        "burn_in = 10 must be less than sequence_length = 10",
    ),
    (
        ["--agent", "r2d2", "--agent.sequence_length", "8", "--agent.burn_in", "9"],
        "burn_in = 9 must be less than sequence_length = 8",
    ),
    (
        ["--agent", "r2d2", "--agent.buffer_size", "100"],
        "buffer_size = 100 holds 100 steps per env, fewer than a sequence",
    ),
    # issue 57 part 2: observations of several inputs (the multi torso)
    (["--agent.torso", "multi"], "torso 'multi' needs dict observations (an env with obs_extras)"),
    (
        ["--env", "MultiInputCartPole", "--agent", "pqn", "--agent.torso", "multi"],
        "agent 'pqn' cannot take torso 'multi' (dict observations); agents that can: dqn,",
    ),
    (
        ["--import", "tests.user_code", "--env", "DictChain-v0", "--agent.torso", "multi"],
        "torso 'multi' has no encoder for observation entry 'grid' of shape [2, 2, 2, 2]",
    ),
    (
        ["--agent", "ppo", "--agent.shared_encoder", "true"],
        "shared_encoder shares the image encoder of torso multi between separate torsos",
    ),
    (
        ["--agent", "sac", "--env", "Pendulum", "--agent.shared_encoder", "true"],
        "shared_encoder needs image observations [H, W, C] and a conv torso (or torso multi)",
    ),
    # issue 55: silent no-ops
    (
        ["--agent.epsilon_decay", "0.99", "--agent.epsilon_schedule", "linear"],
        "the 'linear' schedule does not read it",
    ),
    (["--watchdog", "-1"], "--watchdog must be >= 0"),
]


@pytest.mark.parametrize("argv, fragment", TRAIN_CASES, ids=lambda v: str(v)[:40])
def test_bad_train_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv, fragment):
    _setup_files(tmp_path)
    before = files(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    logdir = [] if "--logdir" in argv else ["--logdir", str(tmp_path / "runs")]
    steps = [] if "--steps" in argv else ["--steps", "512"]  # should a case ever run
    assert main([*argv, *logdir, *steps]) == 2
    if "tests.user_code" in sys.modules:  # what a case's --import registered
        sys.modules["tests.user_code"].forget()
    one_line_error(capsys, fragment.replace("{tmp}", str(tmp_path)))
    assert files(tmp_path) == before


def _unwritable_dir(tmp_path):
    """A directory this process cannot create entries in. For a normal user, one made
    read-only with chmod; root ignores permission bits, so for root (the CI container)
    ``/proc/sys``, which ``access(W_OK)`` refuses even to root."""
    if os.geteuid() != 0:
        path = tmp_path / "read_only"
        path.mkdir(mode=0o555)
        return path
    return "/proc/sys"


def test_read_only_logdir_is_one_line_exit_2(tmp_path, capsys):
    """Item 6: --logdir under a directory that cannot be written (found before the
    program compiles), and one whose mkdir is refused though access() allows it (root in
    /sys: EPERM; found when the run directory is made, after compiling): one line, exit
    code 2, nothing written."""
    read_only = _unwritable_dir(tmp_path)
    before = files(tmp_path)
    assert main([*TINY, "--steps", "512", "--logdir", f"{read_only}/runs"]) == 2
    one_line_error(capsys, f"'{read_only}' is not writable")
    refused = "/sys/jaxrl-test-runs"
    assert main([*TINY, "--steps", "512", "--logdir", refused]) == 2
    err = helpers.one_line_error(capsys, refused)
    assert "cannot create a run directory" in err or "is not writable" in err, err
    assert files(tmp_path) == before and not os.path.exists(refused)
    assert not os.path.exists(f"{read_only}/runs")


# jaxrl tune (issue 56 part 2): a bad space or study database is found before any file
# (study folder, database) is written.
TUNE_CASES = [
    (["--space", "{tmp}/space.yaml"], "agent.lrr: unknown option 'lrr' for agent 'dqn' (did you"),
    (["--space", "{tmp}/tagged.yaml"], "is not valid YAML"),
    (["--space", "{tmp}/empty.yaml"], "must map option names to distributions"),
    (["--space", "{tmp}/dqn.yaml"], "'agent' must be an option like agent.lr, env.X or run.X"),
    (["--space", "{tmp}/scalar.yaml"], "agent.lr must be a mapping such as {low: 0.1, high: 1.0}"),
    (["--space", "{tmp}/lows.yaml"], "agent.lr has unknown key 'lo'; valid: low, high, log"),
    (["--space", "{tmp}/missing.yaml"], "no such file"),
    (["--agent", "rainbow"], "no built-in space for agent 'rainbow'; built-in: a2c, dqn, ppo"),
    (["--storage", "sqlite:///{tmp}/a_file"], "a_file' is not a SQLite database"),
    (["--storage", "sqlite:///{tmp}/missing/s.db"], "cannot be opened: unable to open database"),
    (["--storage", "sqlite:///{tmp}/dqn.yaml"], "is not a SQLite database"),
    (["--storage", "nosuchdb://x"], "cannot be opened: Can't load plugin"),
    (["--pruner", "best"], "argument --pruner: invalid choice: 'best'"),
    (["--trials", "0"], "--trials must be >= 1, got 0"),
]


@pytest.mark.parametrize("argv, fragment", TUNE_CASES, ids=lambda v: str(v)[:40])
def test_bad_tune_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv, fragment):
    from jaxrl.tune.__main__ import main as tune

    _setup_files(tmp_path)
    (tmp_path / "space.yaml").write_text("agent.lrr: {low: 1.0e-4, high: 1.0e-3}\n")
    (tmp_path / "scalar.yaml").write_text("agent.lr: 0.001\n")
    (tmp_path / "lows.yaml").write_text("agent.lr: {lo: 0.001}\n")
    before = files(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert tune([*argv, "--logdir", str(tmp_path / "tunes"), "--steps", "512"]) == 2
    one_line_error(capsys, fragment)
    assert files(tmp_path) == before


def test_unknown_env_lists_families_not_every_game(capsys):
    assert main(["--env", "Cartpol"]) == 2
    err = one_line_error(capsys, "classic control (CartPole-v1")
    assert "Atari (104 envs" in err and "gym:ID" in err and "Pong" not in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--out", "{tmp}/missing/p.png"], "does not exist"),
        (["--out", "{tmp}/p.xyz"], "unknown image type '.xyz'"),
    ],
)
def test_bad_plot_output_is_one_line_exit_2(tmp_path, capsys, argv, fragment):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert plot.main([str(tmp_path), *argv]) == 2
    one_line_error(capsys, fragment)
    assert files(tmp_path) == []


def test_guard_names_the_first_infinite_metric():
    guard = guards.NonFiniteGuard()
    metrics = {
        "step": np.array([10, 20, 30, 40]),
        "loss": np.array([np.nan, 1.0, np.inf, 2.0]),  # NaN: not computed that iteration
        "q_mean": np.array([np.nan, np.nan, np.nan, -np.inf]),
    }

    def reference(metrics):  # the first (iteration, name) with an infinite value
        hits = [
            (i, k)
            for k, v in metrics.items()
            if k != "step"
            for i, x in enumerate(v)
            if np.isinf(x)
        ]
        return min(hits) if hits else None

    assert guard.metric({k: v for k, v in metrics.items() if k != "step"})[:2] == reference(metrics)
    with pytest.raises(guards.NonFinite, match=r"non-finite loss = inf at step 30"):
        guard.check({"params": jnp.ones(2)}, metrics, 40)
    # Batched [members, iterations]: the earliest iteration of any member.
    batched = {"step": np.array([[1, 2], [1, 2]]), "loss": np.array([[1.0, 1.0], [1.0, np.inf]])}
    with pytest.raises(guards.NonFinite, match="at step 2"):
        guard.check({"params": jnp.ones(2)}, batched, 2)
    nan_only = {"step": np.array([1, 2]), "loss": np.array([np.nan, np.nan])}
    guard.check({"params": jnp.ones(2)}, nan_only, 2)  # NaN alone is "not computed"


def test_guard_checks_the_agent_state_but_not_the_replay_buffer():
    from jaxrl.buffers.replay import ReplayState

    state = {
        "buffer": ReplayState(data=jnp.full((3,), jnp.nan), position=jnp.int32(0), size=0),
        "hparams": {"value_loss_clip": jnp.float32(jnp.inf)},  # "no clip", not divergence
        "params": {"w": jnp.ones((2, 2)), "b": jnp.array([0.0, jnp.nan])},
        "step": jnp.int32(3),
    }
    flat = jax.tree_util.tree_leaves_with_path(state)
    expected = [  # the reference: float leaves outside the buffer that hold a NaN or inf
        jax.tree_util.keystr(p)
        for p, x in flat
        if "buffer" not in jax.tree_util.keystr(p)
        and "hparams" not in jax.tree_util.keystr(p)
        and np.issubdtype(np.asarray(x).dtype, np.floating)
        and not np.isfinite(np.asarray(x)).all()
    ]
    assert guards.first_nonfinite_leaf(state) == expected[0] == "['params']['b']"
    state["params"]["b"] = jnp.zeros(2)
    assert guards.first_nonfinite_leaf(state) is None
    with pytest.raises(guards.NonFinite):
        guards.check_finite_state({"w": jnp.array([jnp.inf])}, "checkpoint 5")


def test_guard_warns_once_when_a_finite_loss_leaves_its_scale():
    """Item 1, second half: a finite loss past max(1e10, 1e6 x its first magnitude) gets
    one warning naming the step, the metric and the value, once a run."""
    floor, growth = guards.DIVERGENCE_FLOOR, guards.DIVERGENCE_GROWTH

    def reference(chunks):  # (chunk, step, name) of the first loss over its bound, or None
        scale = {}
        for c, metrics in enumerate(chunks):
            hits = []
            for name in sorted(k for k in metrics if "loss" in k):
                for i, v in enumerate(metrics[name]):
                    bound = max(floor, growth * scale.get(name, 0.0))
                    if np.isfinite(v) and abs(v) > bound:
                        hits.append((i, name))
                first = [abs(v) for v in metrics[name] if np.isfinite(v) and v != 0]
                if first and name not in scale:
                    scale[name] = first[0]
            if hits:
                i, name = min(hits)
                return c, int(metrics["step"][i]), name
        return None

    def run(chunks):
        guard = guards.NonFiniteGuard()
        warnings = [guard.diverging({k: np.array(v) for k, v in m.items()}) for m in chunks]
        found = [(c, w) for c, w in enumerate(warnings) if w is not None]
        assert len(found) <= 1  # once a run
        return found[0] if found else None

    cases = [
        # a legitimately large critic loss (unscaled rewards) that stays within 1e6 x
        [
            {"step": [1, 2], "critic_loss": [np.nan, 5e4]},
            {"step": [3, 4], "critic_loss": [2e9, 3e10]},
        ],
        # past the floor and 1e6 x the first value: warned at its step
        [{"step": [1, 2], "loss": [0.5, 1.0]}, {"step": [3, 4], "loss": [1e3, -2e10]}],
        # past the floor in the very first chunk (DQN --agent.lr 1e6 on CartPole: 1.8e12)
        [{"step": [1, 2], "value_loss": [np.nan, 1.8e12], "q_mean": [1e20, 1.0]}],
        # NaN and inf are the non-finite guard's, not this warning's; non-losses ignored
        [{"step": [1, 2], "loss": [np.nan, np.inf], "q_mean": [1e30, 1e30]}],
        # batched [members, iterations]: any member; named at its iteration's step
        [{"step": [[1, 2], [1, 2]], "loss": [[1.0, 1.0], [1.0, 5e11]]}],
    ]
    expected = [None, (1, 4, "loss"), (0, 2, "value_loss"), None, (0, 2, "loss")]
    for chunks, want in zip(cases, expected, strict=True):
        flat = [{k: np.asarray(v).max(axis=0) if np.ndim(v) > 1 else v for k, v in m.items()}
                for m in chunks]  # fmt: skip
        assert reference(flat) == want
        got = run(chunks)
        if want is None:
            assert got is None, got
        else:
            chunk, step, name = want
            assert got[0] == chunk and f"{name} = " in got[1] and f"at step {step:,} " in got[1]
    warning = run(cases[1])[1]
    assert warning == (
        "loss = 2e+10 at step 4 is past 1e+10; training looks diverged (lower the learning "
        "rate?); Ctrl-C stops it and saves"
    )


def test_a_diverging_run_warns_with_one_line_and_goes_on(tmp_path, capsys):
    """DQN --agent.lr 1e6 on CartPole: losses of 1e12 with no message before this issue;
    now one warning line naming the step; the run still finishes (exit 0)."""
    logdir = tmp_path / "runs"
    # SB3's Huber loss and norm clip (the preset has neither): finite, growing losses.
    argv = [*TINY, "--steps", "512", "--agent.lr", "1e6", "--logdir", str(logdir)]
    argv += ["--agent.loss", "huber", "--agent.max_grad_norm", "10"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: loss = "), err
    assert "at step " in err and "training looks diverged" in err


def test_divergence_stops_with_exit_3_and_keeps_the_finite_checkpoints(tmp_path, capsys):
    from jaxrl.experiment.checkpoint import CHECKPOINT_DIR, CheckpointWriter, load
    from jaxrl.experiment.setup import build

    # 512 finite steps of the tiny DQN of tests/test_train.py (its programs are cached) ...
    logdir = tmp_path / "runs"
    argv = [*TINY, "--steps", "512", "--checkpoint-every", "256", "--keep", "1"]
    assert main([*argv, "--logdir", str(logdir)]) == 0
    (run,) = logdir.iterdir()
    # ... whose saved learning rate is then 1e30, as --agent.lr 1e30 would have made it (the
    # learning rate is a hyperparameter in the state): the resumed run diverges at once.
    saved = load(run, build(run).saved_shape())
    hparams = saved.state.agent_state.hparams
    hparams = hparams.replace(lr=jnp.full_like(hparams.lr, 1e30))
    agent_state = saved.state.agent_state.replace(hparams=hparams)
    shutil.rmtree(run / CHECKPOINT_DIR / "512")
    with CheckpointWriter(run, keep=1) as writer:
        writer.save(512, saved.state.replace(agent_state=agent_state), saved.meta)
    capsys.readouterr()
    assert main(["--resume", str(run), "--steps", "2048"]) == 3
    err = one_line_error(capsys, "error: non-finite ")
    step = int(err.split(" at step ")[1].split(";")[0].replace(",", ""))
    assert 512 < step <= 768 and "last finite checkpoint is kept" in err
    assert checkpoint_steps(run) == [512]  # --keep 1 kept the finite one, not a NaN one
    assert yaml.safe_load((run / "summary.yaml").read_text())["steps"] == 512  # no new one
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [256, 512, 768]  # the row that shows it is kept

    # A diverged checkpoint (as runs saved before the guard): evaluate refuses it (exit code 2).
    params = jax.tree.map(lambda x: x * np.nan, agent_state.params)
    diverged = saved.state.replace(agent_state=agent_state.replace(params=params))
    with CheckpointWriter(run, keep=2) as writer:
        writer.save(1024, diverged, saved.meta)
    assert evaluate.main([str(run), "--episodes", "2"]) == 2
    one_line_error(capsys, "checkpoint 1024 of")


def _signal_when_rows(run_parent, signum, rows=1):
    """Sends ``signum`` to this process once a run under ``run_parent`` wrote ``rows``."""

    def wait():
        while True:
            done = [p for p in run_parent.glob("*/metrics.jsonl") if p.read_text().count("\n")]
            if done and done[0].read_text().count("\n") >= rows:
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_sigterm_saves_writes_the_summary_and_says_how_to_resume(tmp_path, capsys):
    logdir = tmp_path / "runs"
    thread = _signal_when_rows(logdir, signal.SIGTERM)
    argv = [*TINY, "--steps", "1000000", "--checkpoint-every", "1000", "--logdir", str(logdir)]
    assert main(argv) == 143
    thread.join()
    out, err = capsys.readouterr()
    # Item 16: rounding to whole chunks of 256 env steps is said, not silent.
    out = " ".join(out.split())
    assert "note: steps 1,000,000 rounded up to 1,000,192" in out
    assert "checkpoints at the first chunk end past every 1,000" in out
    assert err.count("\n") == 1 and "Traceback" not in err
    (run,) = logdir.iterdir()
    assert "stopped by SIGTERM at step" in err and f"--resume {run}" in err
    summary = yaml.safe_load((run / "summary.yaml").read_text())
    (step,) = checkpoint_steps(run)
    assert summary["steps"] == step > 0 and step % 256 == 0
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["step"] == step
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored

    # Item 4: a second writer of the same run gets one line; nothing changes.
    config = (run / "config.yaml").read_text()
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with RunLock(run):
        assert main(["--resume", str(run)]) == 2
        one_line_error(capsys, "is in use by another process")
    # Item 9: --steps below what is done is refused; config.yaml keeps describing the run.
    # (step - 1, not step - 256: the signal may land in the first chunk, and 0 steps is
    # refused for another reason.)
    assert main(["--resume", str(run), "--steps", str(step - 1)]) == 2
    one_line_error(capsys, f"is below the {step:,} steps")
    # Item 5: a resume without the metrics rows the checkpoint recorded is refused.
    jsonl = (run / "metrics.jsonl").read_bytes()
    (run / "metrics.jsonl").unlink()
    assert main(["--resume", str(run)]) == 2
    one_line_error(capsys, "metrics.jsonl' is missing but the checkpoint recorded")
    (run / "metrics.jsonl").write_bytes(jsonl)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert (run / "config.yaml").read_text() == config


def test_ctrl_c_without_checkpoint_every_saves_a_resumable_run(tmp_path, capsys):
    """Item 3: Ctrl-C (SIGINT) in a run without --checkpoint-every saved nothing; now it
    saves a checkpoint at the chunk's end and the summary (exit 130), so the run can be
    resumed or evaluated."""
    logdir = tmp_path / "runs"
    thread = _signal_when_rows(logdir, signal.SIGINT)
    assert main([*TINY, "--steps", "1000000", "--logdir", str(logdir)]) == 130
    thread.join()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stopped by SIGINT at step" in err
    (run,) = logdir.iterdir()
    (step,) = checkpoint_steps(run)
    assert yaml.safe_load((run / "summary.yaml").read_text())["steps"] == step > 0
    assert f"--resume {run}" in err


ABORT_SCRIPT = """
import signal, sys, time
from jaxrl.experiment.guards import StopSignals
with StopSignals() as s:
    s.abort_message = lambda: "aborted in the chunk"
    print("ready", flush=True)
    while True:
        time.sleep(0.01)
"""


def test_a_second_signal_aborts_at_once_with_one_line():
    proc = subprocess.Popen(
        [sys.executable, "-c", ABORT_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline().startswith("SIGINT: stopping after this chunk")
    proc.send_signal(signal.SIGINT)
    assert proc.wait() == 130
    assert proc.stderr.read() == "error: aborted in the chunk\n"


def test_agent_help_lists_options_with_defaults_and_meanings(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--agent", "dqn", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    gamma = next(line for line in out.splitlines() if line.split()[:1] == ["gamma"])
    assert gamma.split()[1] == "0.99" and "[0, 1]" in gamma and "discount" in gamma
    options = dataclasses.fields(agents.entry("dqn").config)
    assert len([line for line in out.splitlines() if line.startswith("  ")]) == len(options)


def test_jaxrl_checkpoint_needs_no_import_of_its_own(monkeypatch):
    import jaxrl

    monkeypatch.delattr(jaxrl, "checkpoint", raising=False)
    monkeypatch.delitem(sys.modules, "jaxrl.checkpoint", raising=False)
    # docs/how-to/checkpoints.md: import jaxrl; jaxrl.checkpoint.restore(...)
    assert jaxrl.checkpoint.restore.__name__ == "restore"


def test_watchdog_ends_a_stalled_chunk_with_one_line_and_the_stacks(tmp_path, capsys, monkeypatch):
    from jaxrl.experiment import driver

    exited = threading.Event()
    codes = []

    def fake_exit(code):  # os._exit, which would end pytest too
        codes.append(code)
        exited.set()

    def stalled_chunk(runner, state):  # a chunk that makes no progress, as a wedged program
        def run_chunk(state):
            exited.wait()
            raise SystemExit(codes[0])

        return run_chunk

    monkeypatch.setattr(guards.os, "_exit", fake_exit)
    monkeypatch.setattr(driver, "compile_chunk", stalled_chunk)
    logdir = tmp_path / "runs"
    with pytest.raises(SystemExit) as exit_:
        main([*TINY, "--steps", "512", "--watchdog", "0.5", "--logdir", str(logdir)])
    assert exit_.value.code == codes[0] == guards.WEDGED_EXIT
    (run,) = logdir.iterdir()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: chunk 1 made no progress for ")
    assert f"{run}/watchdog-stacks.txt" in err
    # nothing saved yet: a --resume would fail, so the line says what to change instead
    assert "--resume" not in err and "no checkpoint was saved" in err and "--watchdog" in err
    stacks = (run / "watchdog-stacks.txt").read_text()
    assert "stalled for" in stacks and "in run_chunk" in stacks  # the stuck frame
    monkeypatch.setattr(driver.checkpoint, "checkpoint_steps", lambda run_dir: [256])
    assert driver._stalled_hint(run, 0.5).endswith(f"--resume {run}")


@pytest.mark.parametrize(
    "agent, given, saved",
    [
        ("dqn", {"discount_rate": 0.9}, {"gamma": 0.9}),
        ("dqn", {"min_replay_history": 5, "test_epsilon": 0.01}, {"learning_starts": 5}),
        ("rainbow", {"std_init": 0.1, "atoms": 21}, {"sigma0": 0.1, "num_atoms": 21}),
        ("sac", {"target_q_tau": 0.01, "t_entropy": -2.0}, {"tau": 0.01, "target_entropy": -2.0}),
        ("ppo", {"discount": 0.95}, {"gamma": 0.95}),
        # SB3 and CleanRL, per agent family
        ("dqn", {"learning_rate": 1e-3, "n_steps": 3}, {"lr": 1e-3, "n_step": 3}),
        ("dqn", {"target_update_interval": 100, "gradient_steps": 2},
         {"target_update_period": 100, "updates_per_rollout": 2}),
        ("dqn", {"exploration_initial_eps": 0.9, "exploration_final_eps": 0.02},
         {"epsilon_start": 0.9, "epsilon_end": 0.02}),
        ("ppo", {"learning_rate": 1e-3, "ent_coef": 0.02, "clip_range": 0.1, "n_epochs": 3},
         {"lr": 1e-3, "entropy_weight": 0.02, "surrogate_loss_clip": 0.1, "update_epochs": 3}),
        ("ppo", {"clip_coef": 0.3, "norm_adv": False},
         {"surrogate_loss_clip": 0.3, "normalize_advantage": False}),
        ("sac", {"policy_lr": 1e-3, "autotune": False, "n_steps": 2, "update_rate": 0.01},
         {"actor_lr": 1e-3, "autotune_alpha": False, "n_step": 2, "tau": 0.01}),
        ("td3", {"policy_frequency": 3, "target_policy_noise": 0.1, "q_lr": 1e-3},
         {"policy_delay": 3, "policy_noise": 0.1, "critic_lr": 1e-3}),
        ("dqn", {"replay_size": 500, "gradient_max": 5.0},
         {"buffer_size": 500, "max_grad_norm": 5.0}),
        # machin's two learning rates: A2C's and PPO's lr is the actor's once critic_lr is set
        ("ppo", {"actor_learning_rate": 1e-3, "critic_learning_rate": 5e-4},
         {"lr": 1e-3, "critic_lr": 5e-4}),
        ("td3", {"actor_learning_rate": 1e-4, "critic_learning_rate": 3e-4},
         {"actor_lr": 1e-4, "critic_lr": 3e-4}),
        ("sac", {"use_terminal_masking": False}, {"terminal_masking": False}),
    ],
)  # fmt: skip
def test_option_names_from_other_libraries_are_aliases(agent, given, saved):
    from jaxrl.agents import resolve_config

    resolved = resolve_config(agent, given)
    assert {k: resolved[k] for k in saved} == saved and not set(given) & set(resolved)


@pytest.mark.parametrize(
    "agent, given, fragment",
    [
        ("rainbow", {"beta": 0.5}, "RLHive's 'beta' is the priority exponent, jaxrl's 'alpha'"),
        ("dqn", {"target_net_update_fraction": 0.5}, "weighs the other network"),
        ("ppo", {"entropy_weight": -0.01}, "machin's 'entropy_weight' has the opposite sign"),
        ("dqn", {"gamma": 0.9, "discount_rate": 0.9}, "name the same option"),
        ("sac", {"ent_coef": 0.1}, "SB3's SAC ent_coef is the temperature"),
        ("sac", {"target_update_interval": 2}, "average the targets with tau every"),
        ("sac", {"q_lr": 1e-3}, "give --agent.critic_lr and --agent.alpha_lr"),
        ("dqn", {"update_rate": 0.01}, "give both"),
        ("ppo", {"clip_range_vf": 0.2}, "the error of the clipped value alone"),
        ("dqn", {"exploration_fraction": 0.1}, "is converted with the run's --steps"),
        ("dqn", {"train_freq": 4}, "give --run.rollout_len"),
        ("maddpg", {"sub_policy_num": 2}, "give --agent.sub_policies sub_policy_num + 1"),
        ("a2c", {"actor_update_times": 2}, "give --agent.update_epochs"),
        ("ppo", {"critic_update_times": 4}, "passes over both"),
    ],
)
def test_option_names_that_mean_something_else_are_refused(agent, given, fragment):
    from jaxrl.agents import resolve_config
    from jaxrl.types import ConfigError

    with pytest.raises(ConfigError, match=re.escape(fragment)):
        resolve_config(agent, given)


def _outside(spec):
    """A value just outside ``spec`` (a ``validation.Range``), or None if it has no bound."""
    if spec.low is not None:
        return spec.low if spec.low_open else spec.low - 1
    if spec.high is not None:
        return spec.high if spec.high_open else spec.high + 1
    return None


def _configs():
    from jaxrl import agents
    from jaxrl.runners import RunConfig

    named = [(f"agent '{n}'", agents.entry(n).config) for n in agents.available()]
    return [("run", RunConfig), *[(w, c) for w, c in named if c is not None]]


@pytest.mark.parametrize("where, cls", _configs(), ids=lambda v: str(v)[:20])
def test_every_declared_range_is_checked_by_the_one_validation_path(where, cls):
    """Walks every field of every agent's config and of RunConfig: a value outside its
    declared range is one ConfigError naming the field; every numeric field (but the few
    that take any real) declares a range. (Environments take keyword arguments, checked
    by their factories, not declared ranges.)"""
    import typing

    from jaxrl.types import ConfigError
    from jaxrl.validation import build_config, declared_range, field_types

    # support bounds (C51's v_min/v_max, HL-Gauss's min_value/max_value) take any real
    any_real = {"log_std_init", "v_min", "v_max", "min_value", "max_value", "stop_return"}
    checked = 0
    for name, tp in field_types(cls).items():
        spec = declared_range(cls, name)
        kinds = {tp, *typing.get_args(tp)}
        if spec is None:
            names = typing.get_args(tp)[:1] == (str,)  # a tuple of names has no range
            numeric = kinds & {int, float} or (typing.get_origin(tp) is tuple and not names)
            assert not numeric or name in any_real, f"{where}: {name} declares no range"
            continue
        bad = _outside(spec)
        if bad is None:
            continue
        value = [bad] * max(1, spec.min_len) if typing.get_origin(tp) is tuple else bad
        with pytest.raises(ConfigError, match=rf"{name} must be in"):
            build_config(cls, {name: value}, where)
        if spec.min_len:
            with pytest.raises(ConfigError, match=rf"{name} needs at least {spec.min_len}"):
                build_config(cls, {name: []}, where)
        checked += 1
    assert checked >= min(5, len(field_types(cls)))


def test_plot_refuses_a_seed_counted_twice(tmp_path, capsys):
    """Item 16: a --seeds 3 run and a separate seed-0 run of the same config: seed 0 is
    one seed, not two; the plot says which runs hold it instead of counting it twice."""
    from tests.test_plot import write_run

    rows = [{"step": s, "episode_return": 1.0, "seed": k} for s in (1, 2) for k in (0, 1, 2)]
    write_run(tmp_path / "seeds3", 0, rows)
    write_run(tmp_path / "seed0", 0, [{"step": s, "episode_return": 2.0} for s in (1, 2)])
    assert plot.main([str(tmp_path / "seeds3"), str(tmp_path / "seed0")]) == 2
    one_line_error(capsys, "seed 0 of dqn on CartPole-v1 is in two runs")


def test_exit_with_2_keeps_the_one_line_and_drops_what_shutdown_prints():
    """``guards.exit_with``: after a user's mistake (exit 2) only the line printed before
    it reaches stderr, not what threads print while the interpreter shuts down (Orbax's
    abandoned reads); any other exit code keeps stderr as it is."""
    script = (
        "import atexit, sys\n"
        "from jaxrl.experiment.guards import exit_with\n"
        "atexit.register(lambda: print('Traceback: late', file=sys.stderr))\n"
        "print('error: the one line', file=sys.stderr)\n"
        "exit_with(int(sys.argv[1]))\n"
    )
    for code, lines in (
        (2, ["error: the one line"]),
        (1, ["error: the one line", "Traceback: late"]),
    ):
        done = subprocess.run(
            [sys.executable, "-c", script, str(code)], capture_output=True, text=True
        )
        assert done.returncode == code and done.stderr.splitlines() == lines
