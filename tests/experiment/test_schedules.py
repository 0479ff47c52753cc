"""Schedules over the run's length follow the steps the run does (issue: ``--steps`` is
rounded up to whole chunks; a resume with ``--steps`` extends the run). Only the
on-policy family has such a schedule (``anneal_lr`` over ``total_steps``); the
Q-learning and off-policy schedules count absolute env steps and do not move with
``--steps``."""

import json

import pytest
import yaml

from jaxrl.experiment import config
from jaxrl.experiment.config import rounded_steps
from tests.helpers import train_run


@pytest.mark.parametrize("agent", ["ppo", "a2c", "impala"])
def test_an_on_policy_schedule_ends_at_the_rounded_last_step(agent):
    exp = config.resolve(agent=agent, env="CartPole", steps=2048)
    end = rounded_steps(exp.run, exp.env.num_envs)
    assert end > 2048  # the preset's chunks are larger than 2,048 env steps
    assert exp.agent.option("total_steps") == end


@pytest.mark.parametrize("agent", ["dqn", "rainbow", "sac", "td3"])
def test_other_families_schedules_do_not_move_with_steps(agent):
    env = "Pendulum" if agent in ("sac", "td3") else "CartPole"
    short = config.resolve(agent=agent, env=env, steps=2048)
    long = config.resolve(agent=agent, env=env, steps=1_000_000)
    assert short.agent == long.agent


PPO = (
    "--agent ppo --env CartPole --num-envs 4 --agent.num_minibatches 2 --agent.update_epochs 1"
    " --agent.hidden_sizes [8] --agent.anneal_lr true --run.rollout_len 16 --run.log_every 64"
    " --run.eval_every 0 --run.stop_return null --seed 0"
).split() + ["--log", ""]


def _rows(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_resume_that_extends_the_run_extends_its_schedule(tmp_path, capsys):
    from jaxrl.train import main

    run_dir = train_run(tmp_path, *PPO, "--steps", "100")  # rounded up to 128
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["agent"]["total_steps"] == 128
    assert _rows(run_dir)[-1]["lr"] > 0  # the schedule ends where the run ends
    capsys.readouterr()
    assert main(["--resume", str(run_dir), "--steps", "256"]) == 0
    out = capsys.readouterr().out
    assert "total_steps 128 -> 256" in out
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["agent"]["total_steps"] == 256
    rows = _rows(run_dir)
    assert [r["step"] for r in rows][-1] == 256
    assert all(r["lr"] > 0 for r in rows if r["step"] > 128)  # not 0 past the old end
