"""The README's commands, run as printed: every line of its shell blocks is either run
here, with only documented options appended to shorten it (each an option of the run, the
env or the agent that ``--help`` lists), or named below with the test that runs it."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import sys

import numpy as np
import yaml

from jaxrl import agents, envs
from jaxrl.experiment.config import PRESET_DIR
from jaxrl.runners import RunConfig
from tests.test_docs import README, blocks

# The headline command shortened: 512 env steps over 2 envs, episodes cut at 60 agent steps
# (240 frames), a buffer that fits a test, learning from step 128 with 2 gradient steps per
# rollout of 2 x 4 env steps (the preset's 8 are for its 8 envs: one step per 4 env steps,
# as here), one evaluation episode per chunk of 256 steps. The network, the loss, the
# replay and the schedules are the preset's.
SHORTER = {
    "python -m jaxrl.train --agent rainbow --env Pong": (
        "--steps 512 --env.num_envs 2 --env.max_num_frames_per_episode 240 "
        "--agent.buffer_size 512 --agent.learning_starts 128 --agent.updates_per_rollout 2 "
        "--run.eval_every 256 --run.log_every 256 --run.eval_episodes 1"
    ),
}
# Lines run by another test: the installs (tests/test_package.py installs the package and
# checks the extras the README names; the Makefile's install is the editable one) and the
# suite itself.
ELSEWHERE = {
    "pip install -e .": "tests/test_package.py",
    "pip install -e '.[atari]'": "tests/test_package.py",
    "make test": "this suite",
}


def _commands() -> list[str]:
    out = []
    for lang, body in blocks(README):
        if lang == "bash":
            out += [line.split("#", 1)[0].strip() for line in body.splitlines()]
    return [line for line in out if line]


def test_every_readme_command_is_run_by_a_test():
    commands = _commands()
    assert "python -m jaxrl.train --agent rainbow --env Pong" in commands
    assert set(commands) == set(SHORTER) | set(ELSEWHERE)


def test_shortening_options_are_documented_ones():
    """Each appended option is one ``--help`` lists: a run option, an option of the env's
    maker, or the agent's own."""
    for command, extra in SHORTER.items():
        argv = shlex.split(command)
        agent, env = argv[argv.index("--agent") + 1], argv[argv.index("--env") + 1]
        agent_options = {f.name for f in dataclasses.fields(agents.entry(agent).config)}
        _, env_options = envs.options(env)
        run_options = {f.name for f in dataclasses.fields(RunConfig)}
        flags = [flag for flag in shlex.split(extra) if flag.startswith("--")]
        for flag in flags:
            group, _, name = flag[2:].partition(".")
            known = {
                "agent": agent_options,
                "env": {"num_envs", *(env_options or ())},
                "run": run_options,
                "steps": {""},
            }[group]
            assert name in known, f"{flag} is not a documented option of {command}"


def test_headline_command_trains_pong_with_its_preset(tmp_path):
    """``python -m jaxrl.train --agent rainbow --env Pong`` picks the atari-rainbow preset
    and trains Rainbow on ale-py's Pong inside the program: compact replay, a separate
    evaluation env, episodes cut at the frame limit, no loss before learning starts."""
    command = "python -m jaxrl.train --agent rainbow --env Pong"
    argv = [sys.executable, *shlex.split(command)[1:], *shlex.split(SHORTER[command])]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    config = yaml.safe_load((run / "config.yaml").read_text())
    preset = yaml.safe_load((PRESET_DIR / "atari-rainbow.yaml").read_text())
    assert config["preset"] == "atari-rainbow"
    shortened = {"buffer_size", "learning_starts", "updates_per_rollout"}
    for key, value in preset["agent"].items():
        if key not in shortened | {"name"}:
            expected = list(value) if isinstance(value, list) else value
            assert config["agent"][key] == expected, key
    assert config["agent"]["buffer_size"] == 512 and config["env"]["num_envs"] == 2
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [256, 512]
    # 128 agent steps per env per chunk, 60 per episode: 2 episodes per env, 2 envs
    assert [row["episodes"] for row in rows] == [4, 4]
    assert all(row["episode_length"] == 60 for row in rows)
    assert all(np.isfinite(row["loss"]) for row in rows)
    assert all(abs(row["eval_return"]) <= 21 for row in rows)
    summary = yaml.safe_load((run / "summary.yaml").read_text())
    assert summary["steps"] == 512 and summary["final_eval_episodes"] >= 1
