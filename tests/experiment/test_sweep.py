"""Seed and hyperparameter sweeps: parsing and the grid, structural names refused, one
vmapped program of (2 learning rates x 2 seeds) whose every curve equals the separate
single run with the same key and learning rate, and the same program sharded over 4
devices giving the same curves."""

import json
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents.q_learning.rainbow import RainbowHparams
from jaxrl.experiment.sweep import check_sweep, grid, member_hparams, parse_sweep
from jaxrl.train import main
from jaxrl.types import ConfigError
from tests.device_script import fake_devices_env
from tests.helpers import one_line_error, tiny_run, train_run

TINY_DQN = tiny_run(
    "--steps 512 --agent.buffer_size 256 --agent.updates_per_rollout 2"
    " --agent.target_update_period 64 --agent.epsilon_decay_steps 256 --run.log_every 128"
)
LRS = ("0.01", "0.0003")
COMPARED = ("episode_return", "episodes", "loss", "q_mean", "epsilon", "eval_return")


def train(logdir, *args):
    return train_run(logdir, *TINY_DQN, *args)


def rows(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def curves(run_dir):
    """{(seed, lr or None): {metric: [values per row]}}."""
    out = {}
    for row in rows(run_dir):
        member = out.setdefault((row.get("seed"), row.get("agent.lr")), {})
        for name in ("step", *COMPARED):
            member.setdefault(name, []).append(np.nan if row[name] is None else row[name])
    return out


def test_parse_and_grid():
    sweep = parse_sweep(["agent.lr=1e-3,3e-4", "agent.gamma=0.99,0.995,1"])
    assert sweep == {"lr": [1e-3, 3e-4], "gamma": [0.99, 0.995, 1.0]}
    points = grid(sweep)
    assert len(points) == 6 and points[0] == {"lr": 1e-3, "gamma": 0.99}
    assert points[1] == {"lr": 1e-3, "gamma": 0.995} and points[5] == {"lr": 3e-4, "gamma": 1.0}
    for bad in ("lr=1", "agent.lr", "agent.lr=fast", "run.steps=1,2"):
        with pytest.raises(ConfigError):
            parse_sweep([bad])
    # Members are point-major: each point's hparams repeated for each seed.
    f = lambda x: jnp.float32(x)
    base = RainbowHparams(f(1e-4), f(0.9), f(1), f(1), f(0.05), f(0), f(0.4))
    stacked = member_hparams(base, grid({"lr": [1e-3, 3e-4]}), seeds=3)
    np.testing.assert_allclose(stacked.lr, [1e-3] * 3 + [3e-4] * 3)
    np.testing.assert_allclose(stacked.gamma, [0.9] * 6)
    check_sweep("dqn", base, {"lr": [1.0], "gamma": [0.9]})
    with pytest.raises(ConfigError, match="must be run as separate jobs"):
        check_sweep("dqn", base, {"batch_size": [32.0]})


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--sweep", "agent.hidden_sizes=8,16"], "'hidden_sizes' is not a continuous"),
        (["--sweep", "agent.n_step=1,3"], "must be run as separate jobs"),
        (["--sweep", "agent.tau=0.5,2"], "tau must be in (0, 1]"),
        (["--seeds", "0"], "--seeds must be >= 1"),
    ],
)
def test_sweep_mistakes_exit_2(tmp_path, capsys, argv, fragment):
    assert main([*TINY_DQN, "--logdir", str(tmp_path), *argv]) == 2
    one_line_error(capsys, fragment)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("sweep")
    return train(logdir, "--seeds", "2", "--seed", "5", "--sweep", f"agent.lr={','.join(LRS)}")


def assert_curves_close(a, b):
    np.testing.assert_array_equal(a["step"], b["step"])
    np.testing.assert_array_equal(a["episodes"], b["episodes"])
    for name in COMPARED:
        np.testing.assert_allclose(a[name], b[name], rtol=2e-4, atol=1e-5, err_msg=name)


def test_seeds_and_lr_sweep_equal_separate_runs(tmp_path, sweep_run):
    batched = curves(sweep_run)
    assert sorted(batched) == sorted((s, float(lr)) for s in (5, 6) for lr in LRS)
    # Four different curves ...
    losses = [tuple(np.round(c["loss"][-2:], 6)) for c in batched.values()]
    assert len(set(losses)) == 4
    returns = {s: batched[(s, float(LRS[0]))]["episode_return"] for s in (5, 6)}
    assert not np.allclose(returns[5], returns[6])
    # ... each equal to the single run with the same key and learning rate.
    for (seed, lr), curve in batched.items():
        single = train(tmp_path, "--seed", str(seed), "--agent.lr", repr(lr))
        ((_, got),) = curves(single).items()
        assert_curves_close(curve, got)


def test_sweep_summary_has_the_iqm_of_each_learning_rates_final_returns(sweep_run):
    import yaml

    from tests.references import iqm

    data = yaml.safe_load((sweep_run / "summary.yaml").read_text())
    finals = data["final_eval_returns"]
    assert len(finals) == 4 and data["final_eval_episodes"] == 20  # 10 evaluations of 2
    assert data["final_iqm"] is None and data["final_iqm_ci"] is None  # nothing pooled
    for p, (lr, config) in enumerate(zip(LRS, data["configs"], strict=True)):
        mine = finals[2 * p : 2 * p + 2]  # member p * K + i
        assert config["values"] == {"agent.lr": float(lr)} and config["seeds"] == [5, 6]
        assert config["final_iqm"] == pytest.approx(iqm(mine))
        low, high = config["final_iqm_ci"]
        assert min(mine) <= low <= config["final_iqm"] <= high <= max(mine)
        assert config["fraction_at_target"] is None
    assert data["target"] is None and data["fraction_at_target"] is None
    assert data["first_solve_steps"] == [None] * 4


def test_sharded_over_four_devices_equals_one_device(tmp_path, sweep_run):
    script = textwrap.dedent(
        f"""
        import jax, sys
        assert len(jax.local_devices()) == 4
        from jaxrl.train import main
        from jaxrl.checkpoint import restore
        argv = {TINY_DQN!r} + ["--logdir", sys.argv[1], "--seeds", "2", "--seed", "5",
                               "--sweep", "agent.lr={",".join(LRS)}"]
        assert main(argv) == 0
        import pathlib
        (run,) = pathlib.Path(sys.argv[1]).iterdir()
        agent, state, cfg = restore(run)
        kernel = jax.tree.leaves(state.params)[-1]
        assert kernel.shape[0] == 4 and len(kernel.sharding.device_set) == 4, kernel.sharding
        print("RUN", run)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env=fake_devices_env(4),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    sharded, single_device = curves(run_dir), curves(sweep_run)
    assert sorted(sharded) == sorted(single_device)
    for member, curve in sharded.items():
        assert_curves_close(curve, single_device[member])


def count_primitive(jaxpr, name: str) -> int:
    """Occurrences of primitive ``name`` in ``jaxpr`` and every jaxpr nested in it."""
    found = 0
    for eqn in jaxpr.eqns:
        found += eqn.primitive.name == name
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                if hasattr(sub, "eqns"):
                    found += count_primitive(sub, name)
                elif hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    found += count_primitive(sub.jaxpr, name)
    return found


@pytest.mark.parametrize(
    "agent, env, options",
    [
        ("dqn", "CartPole-v1", dict(hidden_sizes=(8,), batch_size=8, buffer_size=64)),
        ("rainbow", "CartPole-v1", dict(hidden_sizes=(8,), batch_size=8, buffer_size=64)),
        ("td3", "Pendulum-v1", dict(hidden_sizes=(8,), batch_size=8, buffer_size=64)),
    ],
)
def test_batched_program_keeps_schedule_branches(agent, env, options):
    """Every ``lax.cond`` of one member's ``run_chunk`` (evaluation, learning_starts, TD3's
    policy delay) is still a ``cond`` in the program vmapped over 3 members: none has
    become a ``select_n`` that pays both sides each iteration. The counters the branches
    read stay unbatched scalars."""
    from jaxrl import agents, envs
    from jaxrl.experiment.sweep import batch_runner
    from jaxrl.runners import RunConfig, make_runner

    vec = envs.make(env, num_envs=2)
    runner = make_runner(
        agents.make(agent, vec.spec, learning_starts=16, **options),
        vec,
        RunConfig(steps=64, log_every=8, eval_every=16, eval_episodes=2),
    )
    single = jax.make_jaxpr(runner.run_chunk)(jax.eval_shape(runner.init, jax.random.PRNGKey(0)))
    batched_runner = batch_runner(runner)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    state = jax.eval_shape(batched_runner.init, keys)
    assert state.agent_state.step.shape == () and state.chunk.shape == ()
    batched = jax.make_jaxpr(batched_runner.run_chunk)(state)
    conds = count_primitive(single.jaxpr, "cond")
    assert conds >= 2  # evaluation and learning
    assert count_primitive(batched.jaxpr, "cond") == conds


@pytest.fixture(scope="module")
def atari_members():
    """DQN on Pong (10x10 frames, an MLP, random actions: epsilon 1) as one batched
    program of 2 learning rates x 2 seeds: 4 members, one vector env of 4 x 2 emulators
    for training and one of 4 x 2 for evaluation."""
    from jaxrl import agents, envs
    from jaxrl.experiment.sweep import batch_runner
    from jaxrl.runners import RunConfig, make_runner

    kwargs = dict(img_height=10, img_width=10, noop_max=0, max_num_frames_per_episode=200)
    env, eval_env = envs.make("Pong", num_envs=2, **kwargs), envs.make("Pong", 2, **kwargs)
    agent = agents.make(
        "dqn", env.spec, torso="mlp", hidden_sizes=(8,), batch_size=8, buffer_size=256,
        learning_starts=32, target_update_period=32, epsilon_start=1.0, epsilon_end=1.0,
    )  # fmt: skip
    config = RunConfig(steps=128, rollout_len=4, log_every=64, eval_every=128, eval_episodes=2)
    runner = batch_runner(make_runner(agent, env, config, eval_env))
    keys = jnp.stack([jax.random.split(jax.random.PRNGKey(s))[0] for s in (0, 1, 0, 1)])
    base = jax.jit(lambda k: agent.init(k).hparams)(jax.random.PRNGKey(0))
    state = jax.jit(runner.init)(keys, member_hparams(base, grid({"lr": [1e-2, 1e-5]}), 2))
    run_chunk, chunks = jax.jit(runner.run_chunk), []
    for _ in range(runner.num_chunks):
        state, metrics = run_chunk(state)
        chunks.append(metrics)
    metrics = jax.tree.map(lambda *m: np.concatenate(m, axis=1), *chunks)
    return env, keys, jax.tree.map(np.asarray, state.agent_state.buffer), metrics


def test_atari_members_learn_from_their_own_envs_only(atari_members):
    env, keys, buffer, metrics = atari_members
    rows = int(buffer.size)
    assert rows == 64 and buffer.frames.shape[:3] == (4, 128, 2)
    # Member m's buffer holds exactly the frames of its own two emulators: those of an
    # unbatched env reset with m's env key and stepped with m's actions.
    step = jax.jit(lambda s, a: env.step(s, a, keys[0]))
    for m in range(4):
        state, ts = env.reset(jax.random.split(keys[m], 3)[2])
        frames = [ts.obs[..., -1]]
        for action in buffer.action[m, : rows - 1]:
            state, ts = step(state, jnp.asarray(action))
            frames.append(ts.obs[..., -1])
        np.testing.assert_array_equal(buffer.frames[m, :rows], np.stack(frames))
    # Members 0 and 2 (seed 0, learning rates 1e-2 and 1e-5) saw the same frames and
    # the same first loss, then different losses; seeds 0 and 1 saw different frames.
    np.testing.assert_array_equal(buffer.frames[0], buffer.frames[2])
    assert (buffer.frames[0] != buffer.frames[1]).any()
    loss = metrics["loss"]
    learned = ~np.isnan(loss[0])
    assert learned.sum() >= 8 and (np.isnan(loss[:, ~learned])).all()
    first = np.argmax(learned)
    assert loss[0, first] == loss[2, first] and loss[1, first] == loss[3, first]
    assert (loss[0, first + 1 :] != loss[2, first + 1 :]).all()
    assert np.isfinite(metrics["eval_return"][:, -1]).all()


def test_atari_seeds_beyond_the_host_memory_exit_2(tmp_path, capsys):
    argv = ["--agent", "dqn", "--env", "Pong", "--num-envs", "8", "--seeds", "1000000"]
    assert main([*argv, "--logdir", str(tmp_path)]) == 2
    one_line_error(capsys, "emulators", "seeds fit")
    assert list(tmp_path.iterdir()) == []
