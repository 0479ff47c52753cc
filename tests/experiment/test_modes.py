"""The mode tables (``jaxrl.experiment.modes``): which program and execution a config and
launch choose, and the one-line refusals of each mode, found before anything is built
beyond the envs."""

from __future__ import annotations

import pytest

from jaxrl.experiment import modes
from jaxrl.experiment.config import resolve
from jaxrl.experiment.launch import Launch
from jaxrl.experiment.setup import build_setup
from jaxrl.types import ConfigError

TINY = {"agent.hidden_sizes": [8]}


def program_of(config) -> str:
    return modes.choose(modes.PROGRAMS, config, config.env.make(1)).name


def test_programs_follow_what_env_and_config_declare():
    assert program_of(resolve(agent="dqn", env="CartPole")) == "fused"
    assert program_of(resolve(agent="dqn", env="gym:CartPole-v1")) == "host loop"
    assert program_of(resolve(agent="dqn", env="tic_tac_toe")) == "self-play"
    two = resolve(agent_list=["dqn", "dqn"], env="tic_tac_toe", overrides={"agent.n_step": 1})
    assert program_of(two) == "independent agents"
    team = resolve(agent="ippo", env="mpe:simple_spread", overrides={"env.shared": False})
    assert program_of(team) == "team"


def test_executions_are_the_first_that_applies():
    def execution(**launch) -> str:
        return modes.choose(modes.EXECUTIONS, Launch(loggers=[], **launch)).name

    assert execution() == "one run"
    assert execution(seeds=2) == "batched"
    assert execution(devices=2, seeds=2) == "devices"  # whose check refuses the seeds
    assert execution(actor_threads=2, devices=2) == "actor threads"
    assert execution(actor_processes=2, actor_threads=2) == "actor processes"  # refused


@pytest.mark.parametrize(
    "config, launch, self_play, message",
    [
        (dict(env="CartPole", overrides={"run.opponent_pool": 2}), {}, False,
         "run.opponent_pool .* applies to --self-play only"),
        (dict(agent_list=["dqn", "dqn"], env="connect_four",
              overrides={"run.opponent_scripted": 0.25, "agent.n_step": 1}), {}, False,
         "run.opponent_scripted .* applies to --self-play"),
        (dict(env="CartPole"), {}, True, "--self-play needs a turn-based game"),
        (dict(env="tic_tac_toe"), {}, False, "is a 2-player game: train it with --self-play"),
        (dict(agent="ppo", env="tic_tac_toe"), {}, True,
         "--self-play trains alphazero or dqn or rainbow"),
        (dict(env="tic_tac_toe", overrides={"agent.n_step": 3}), {}, True,
         "n-step windows would mix players"),
        (dict(agent_list=["dqn", "ppo"], env="tic_tac_toe"), {}, None,
         "--agents takes alphazero or dqn or rainbow"),
        (dict(agent_list=["dqn"], env="tic_tac_toe"), {}, None, "give 2 agents, not 1"),
        (dict(agent_list=["dqn", "dqn"], env="CartPole"), {}, None,
         "--agents needs a turn-based game"),
        (dict(agent_list=["dqn", "dqn"], env="tic_tac_toe", overrides={"agent.n_step": 1}),
         dict(seeds=2, sweep={"lr": [1e-3]}), None, "--agents runs with --seeds only"),
        (dict(env="gym:CartPole-v1"), dict(seeds=2), None,
         "--seeds and --sweep need a JAX-native env"),
        (dict(env="gym:CartPole-v1"), dict(actor_threads=1), None, "needs a JAX-native env"),
        (dict(env="tic_tac_toe", overrides={"agent.n_step": 1}), dict(devices=2), None,
         "--devices 2 runs a single-agent env"),
        (dict(env="CartPole"), dict(devices=2, seeds=2), None, "--devices 2 splits one run"),
        (dict(env="CartPole"), dict(actor_threads=1, seeds=2), None,
         "runs one seed on one device"),
    ],
)  # fmt: skip
def test_each_mode_refuses_its_mistakes_in_one_line(config, launch, self_play, message):
    overrides = {**TINY, **config.pop("overrides", {})}
    resolved = resolve(**{"agent": "dqn", **config, "overrides": overrides})
    with pytest.raises(ConfigError, match=message) as caught:
        build_setup(resolved, Launch(loggers=[], **launch), self_play)
    assert "\n" not in str(caught.value)
