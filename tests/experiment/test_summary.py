"""What a run's summary tells (experiment/report.py, driver.py): each member's first step
at the target, the IQM and its CI and the fraction at the target of a seed run's final
returns, the evaluation a single run stopped at with a final evaluation of at least 20
episodes of the policy it saved; and ``--seeds`` beyond memory refused in one line."""

import dataclasses
import io
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console

from jaxrl.experiment import report, sweep
from jaxrl.train import main
from tests import references
from tests.helpers import one_line_error, tiny_run

TINY = tiny_run(
    "--steps 1024 --agent.buffer_size 256 --run.eval_episodes 8", drop=["--run.stop_return"]
)


def summary(**changes):
    base = report.Summary(
        run_dir=Path("/runs/x"),
        steps=1024,
        compile_time=1.0,
        run_time=2.0,
        sps=512.0,
        final_eval_return=math.nan,
        best_eval_return=math.nan,
        first_solved_time=None,
        solved=False,
    )
    return report.Summary(**{**base.__dict__, **changes})


def printed(s, members, batched, stop):
    out = io.StringIO()
    report.print_summary(s, members, batched, 10, stop, Console(file=out, width=200))
    return out.getvalue()


def test_first_solves_keep_each_members_first_step_at_the_target():
    rows = lambda step, evals: [{"step": step, "eval_return": e} for e in evals]
    found = [None, None, None]
    found = report.first_solves(rows(256, [500.0, math.nan, 100.0]), 475.0, found)
    found = report.first_solves(rows(512, [100.0, 475.0, 474.9]), 475.0, found)
    found = report.first_solves(rows(768, [480.0, 490.0, 10.0]), 475.0, found)
    assert found == [256, 512, None]
    assert report.first_solves(rows(1, [1e9]), None, [None]) == [None]


def test_seed_summary_gives_iqm_ci_fraction_and_first_solves():
    finals = [500.0, 10.0, 480.0, 475.0, 200.0, 499.0, 30.0, 500.0]
    members = [{"seed": i} for i in range(8)]
    solves = [1280, None, 2560, 3840, 640, 1280, None, 5120]
    s = report.across_members(
        summary(final_eval_returns=finals, target=475.0, first_solve_steps=solves), members
    )
    # The middle half of the sorted finals: 200, 475, 480, 499.
    assert s.final_iqm == pytest.approx((200 + 475 + 480 + 499) / 4)
    low, high = s.final_iqm_ci
    assert min(finals) <= low < s.final_iqm < high <= max(finals)
    assert s.fraction_at_target == 5 / 8
    text = printed(s, members, True, 475.0)
    assert "final IQM [95% CI]" in text and f"{s.final_iqm:.1f} [{low:.1f}, {high:.1f}]" in text
    assert "final return >= 475" in text and "5 of 8 members" in text
    assert "seed 1" in text and "first >= 475: never" in text
    assert "first >= 475: step 5,120" in text
    data = yaml.safe_load(yaml.safe_dump({k: v for k, v in s.__dict__.items() if k != "run_dir"}))
    assert data["first_solve_steps"] == solves and data["fraction_at_target"] == 0.625


def test_sweep_summary_gives_each_configs_iqm_and_ci_never_one_pooled_over_configs():
    """``--seeds 8 --sweep agent.lr=1e-3,3e-4``: the members are the grid's points times the
    seeds (point-major); each learning rate's eight final returns get their own IQM and
    stratified-bootstrap CI (references: ``tests/references.py``), no IQM pools them."""
    rng = np.random.default_rng(7)
    lrs = (1e-3, 3e-4)
    by_lr = {1e-3: rng.uniform(300, 500, 8), 3e-4: rng.uniform(100, 350, 8)}
    members = [{"seed": i, "agent.lr": lr} for lr in lrs for i in range(8)]
    finals = [float(by_lr[m["agent.lr"]][m["seed"]]) for m in members]
    s = report.across_members(summary(final_eval_returns=finals, target=300.0), members)
    assert s.final_iqm is None and s.final_iqm_ci is None and s.fraction_at_target is None
    assert [c["values"] for c in s.configs] == [{"agent.lr": lr} for lr in lrs]
    text = printed(s, members, True, 300.0)
    for config, lr in zip(s.configs, lrs, strict=True):
        scores = list(by_lr[lr])
        assert config["seeds"] == list(range(8))
        assert config["final_iqm"] == pytest.approx(references.iqm(scores), rel=1e-12)
        low, high = references.bootstrap_iqm_interval(scores, reps=50_000)
        assert config["final_iqm_ci"] == pytest.approx([low, high], rel=1e-12)
        reached = sum(x >= 300.0 for x in scores)
        assert config["fraction_at_target"] == reached / 8
        assert f"agent.lr {lr:g}: final IQM [95% CI]" in text
        assert f"{config['final_iqm']:.1f} [{low:.1f}, {high:.1f}]" in text
        assert f"{reached} of 8 seeds" in text
    pooled = f"{references.iqm(finals):.1f}"
    assert text.count("final IQM [95% CI]") == 2 and pooled not in text
    data = yaml.safe_load(yaml.safe_dump({k: v for k, v in s.__dict__.items() if k != "run_dir"}))
    assert data["configs"][1]["values"] == {"agent.lr": 3e-4}


def test_single_run_stopped_at_target_says_where_and_evaluates_20_episodes(tmp_path, capsys):
    # Every CartPole episode returns at least 1: the first evaluation (step 256) stops it.
    assert main([*TINY, "--run.stop_return", "1", "--logdir", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    data = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert data["steps"] == 256 and data["stopped_at_step"] == 256 and data["solved"]
    assert data["stopped_at_return"] >= 1 and data["first_solve_steps"] == [256]
    assert data["final_eval_episodes"] == 24  # 3 evaluations of 8 episodes: >= 20
    assert data["target"] == 1.0
    out = capsys.readouterr().out
    assert "final evaluation (24 episodes)" in out
    assert "stopped at the evaluation of step 256" in out
    # The policy evaluated at the end is the one the checkpoint saved there.
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit()) == [
        "256"
    ]


def test_seeds_beyond_memory_exit_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "available_memory", lambda: 1 << 10)  # 1 KiB
    assert main([*TINY, "--seeds", "4", "--logdir", str(tmp_path)]) == 2
    one_line_error(capsys, "--seeds 4", "GiB is available; at most 0 seeds fit")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--presets", "cartpole-nosuch"], "unknown preset 'cartpole-nosuch'; available: "),
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--presets", "atari-dqn"], "cannot run as one vmapped program"),
        (["--presets", "minatar-dqn", "--env", "MinAtar-Nosuch"], "unknown env 'MinAtar-Nosuch'"),
    ],
)
def test_presets_benchmark_mistakes_exit_2(tmp_path, capsys, argv, fragment):
    module = presets_benchmark()
    results, out_dir = tmp_path / "RESULTS.md", tmp_path / "plots"
    args = [*argv, "--results", str(results), "--out-dir", str(out_dir)]
    assert module.main(args) == 2
    one_line_error(capsys, fragment)
    assert list(tmp_path.iterdir()) == []


def presets_benchmark():
    """``benchmarks/presets.py`` as a module (benchmarks/ is not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "presets.py"
    spec = importlib.util.spec_from_file_location("presets_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_presets_benchmark_judges_each_preset_on_an_env_of_its_own():
    """A family preset (``env: {family: minatar}``) names no game: the benchmark must train
    it on a game of that family with the preset's env options, not on the default env."""
    module = presets_benchmark()
    from jaxrl import envs
    from jaxrl.experiment.config import load_config_file, presets

    checked = []
    for name, path in presets().items():
        if name.startswith(module.NOT_VMAPPABLE):
            continue
        family = load_config_file(path).get("env", {}).get("family")
        if family in (None, "*"):
            continue
        cfg = module.preset_config(name)
        assert envs.family(cfg.env.name) == family, (name, cfg.env.name)
        assert cfg.run.stop_return is None
        checked.append(name)
    assert {"minatar-dqn", "minatar-pqn", "minatar-rainbow"} <= set(checked)
    cfg = module.preset_config("minatar-pqn")
    assert cfg.env.num_envs == 32 and cfg.agent.option("epsilon_decay_steps") == 100_000
    other = module.preset_config("minatar-pqn", env="MinAtar-Asterix")  # --env
    assert other.env == dataclasses.replace(cfg.env, name="MinAtar-Asterix")
    assert other.agent == cfg.agent


def test_presets_benchmark_groups_resume_from_their_files(tmp_path, monkeypatch):
    """Members run in groups equal the same seeds run as one program; with ``group_dir``
    each finished group is kept and read back instead of run again, and only for the
    config that wrote it."""
    module = presets_benchmark()
    name, steps = "frozenlake-tabular_q", 10240
    whole = module.run_preset(name, 2, steps, 2)
    grouped = module.run_preset(name, 2, steps, 1, group_dir=tmp_path)
    assert sorted(p.name.split("-")[2] for p in tmp_path.iterdir()) == ["seed0x1", "seed1x1"]
    np.testing.assert_array_equal(grouped["finals"], whole["finals"])
    np.testing.assert_array_equal(grouped["curves"], whole["curves"])
    assert grouped["solves"] == whole["solves"] and grouped["curves"].shape == (2, 1)
    assert grouped["finals"][0] != grouped["finals"][1]  # two seeds, not one seed twice

    def must_not_run(*args):
        raise AssertionError("a kept group was run again")

    monkeypatch.setattr(module, "run_group", must_not_run)
    again = module.run_preset(name, 2, steps, 1, group_dir=tmp_path)
    for key in ("finals", "aucs", "curves", "steps"):
        np.testing.assert_array_equal(again[key], grouped[key])
    assert again["solves"] == grouped["solves"]
    assert again["wall"] == pytest.approx(grouped["wall"]) and again["agent_state"] is None
    with pytest.raises(AssertionError, match="run again"):
        module.run_preset(name, 2, steps, 1, {"agent.alpha": 0.2}, group_dir=tmp_path)


def test_presets_benchmark_group_continues_from_its_progress(tmp_path, monkeypatch):
    """A group killed mid-run continues from its last periodic save, one stopped by SIGTERM
    saves after its current chunk, and either ends as the same group run unbroken: same
    finals and curves, only the chunks not saved run again; the progress is removed once
    the group's file is written."""
    import signal

    module = presets_benchmark()
    name, steps = "frozenlake-tabular_q", 3 * 10240  # three chunks, an evaluation each
    whole = module.run_preset(name, 2, steps, 2)
    compile_chunk, calls = module.compile_chunk, []

    class Killed(Exception):
        pass

    def counting(runner, state, stop_at=None, signum=None):
        run_chunk = compile_chunk(runner, state)

        def run(state):
            calls.append(1)
            if len(calls) == stop_at and signum is None:
                raise Killed  # as a kill: no save after this
            if len(calls) == stop_at:
                os.kill(os.getpid(), signum)
                time.sleep(0.2)  # the handler's thread notes it while the chunk runs
            return run_chunk(state)

        return run

    def saved(progress):
        return [p.name for p in (progress / "checkpoints").iterdir() if p.name.isdigit()]

    monkeypatch.setattr(module, "SAVE_EVERY_S", 0.0)  # a save after every chunk
    monkeypatch.setattr(module, "compile_chunk", lambda r, s: counting(r, s, stop_at=2))
    with pytest.raises(Killed):
        module.run_preset(name, 2, steps, 2, group_dir=tmp_path)
    (progress,) = tmp_path.glob("*.progress")
    assert saved(progress) == ["1"]
    calls.clear()
    monkeypatch.setattr(module, "SAVE_EVERY_S", 1e9)  # no periodic save: the signal's only
    monkeypatch.setattr(
        module, "compile_chunk", lambda r, s: counting(r, s, stop_at=1, signum=signal.SIGTERM)
    )
    with pytest.raises(module.guards.Interrupted, match="after chunk 2 of 3") as stopped:
        module.run_preset(name, 2, steps, 2, group_dir=tmp_path)
    assert stopped.value.exit_code == 143 and saved(progress) == ["2"] and len(calls) == 1
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored
    calls.clear()
    monkeypatch.setattr(module, "compile_chunk", counting)
    resumed = module.run_preset(name, 2, steps, 2, group_dir=tmp_path)
    assert len(calls) == 1  # only the third chunk
    np.testing.assert_array_equal(resumed["finals"], whole["finals"])
    np.testing.assert_array_equal(resumed["curves"], whole["curves"])
    assert resumed["curves"].shape == (2, 3) and resumed["curves"].dtype == whole["curves"].dtype
    np.testing.assert_array_equal(resumed["aucs"], whole["aucs"])
    assert list(resumed["steps"]) == list(whole["steps"])
    assert not progress.exists() and len(list(tmp_path.glob("*.json"))) == 1
