"""Part 1 of issue 13: every agent runs on every built-in env it can act in, with no
flags.

* Every agent is built on every classic-control env and MinAtar Breakout (the config the
  CLI resolves: a preset, or the agent's defaults with its ``family: "*"`` preset); a
  pair whose action space does not fit is refused with one line naming the space.
* ``test_every_agent_runs_on_classic_control`` runs pairs for a few hundred env steps
  through ``run_experiment`` (what ``python -m jaxrl.train --agent A --env E`` calls),
  from that same config shrunk only in sizes that leave the code path as it is (``shrunk``):
  the run must finish, every metric be finite or "not computed", and an agent with a loss
  must have logged a finite one (an update happened). The pixel and MuJoCo pairs are in
  ``test_agent_env_matrix_pixels.py`` (a second file, so that the two pytest-xdist
  workers share the compiles).

Grouping (compiling one pair's program costs seconds even at these sizes, so the full
product, 63 pairs, would take minutes): the classic-control envs share one code path
(vector observations, an MLP torso, the same fused runner), so each agent runs on one
classic env per action space it fits, the envs taken in turn so that every classic env
is run by several agents; every agent also runs on one pixel or MuJoCo env
(``test_agent_env_matrix_pixels.py``). Agents and envs come from the registries, so
new ones join. ``benchmarks/agent_env_matrix.py`` runs any pair at full size and records
what it reaches (benchmarks/journal/2026-11-23-reliability.md).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import math
import re

import jax
import pytest
from rich.console import Console

from jaxrl import agents, envs
from jaxrl.experiment.config import Experiment, resolve
from jaxrl.experiment.run import run_experiment
from jaxrl.experiment.setup import Launch, build_setup
from jaxrl.types import ConfigError, Discrete, EnvSpec

CLASSIC = [n for n in envs.available() if envs.group(n) == "classic"]
TOY_TEXT = [n for n in envs.available() if envs.group(n) == "toy_text"]
# The refusals of a pair that does not fit: its action space, (tabular Q-learning)
# observations that are not one-hot states, (maddpg, ippo) a single player, or (alphazero)
# no legal-action mask.
DOES_NOT_FIT = (
    r"action space|one-hot observations|simultaneous-move env of 2\+ players"
    r"|has no legal-action mask"
)
# Where an agent of several players (maddpg, ippo) runs: a simultaneous-move game.
MULTI_PLAYER = ["mpe:simple_spread"]
# Where an agent of turn-based games only (alphazero: a search over the game's rules) is
# built and its runner's init traced (``jax.eval_shape``), as the MuJoCo pairs of
# ``test_agent_env_matrix_pixels.py``: compiling a search per move costs minutes here.
TURN_BASED = ["tic_tac_toe"]
ENVS = CLASSIC + [n for n in envs.available() if envs.group(n) == "minatar"][:1]
AGENTS = list(agents.available())

# Sizes only: fewer and narrower layers, a small replay buffer and batch, learning from
# 64 steps, few quantiles/atoms, a short target period. Options an agent lacks are left out.
SMALL = {
    "hidden_sizes": [8],
    "buffer_size": 512,
    "batch_size": 8,
    "learning_starts": 64,
    "target_update_period": 32,
    "num_atoms": 11,
    "num_quantiles": 8,
    "num_tau_samples": 4,
    "num_tau_prime_samples": 4,
    "num_quantile_samples": 4,
    "embedding_dim": 8,
    # MBPO's model: a narrow ensemble, few rollouts, few model steps.
    "model_hidden_sizes": [8],
    "model_batch_size": 8,
    "model_train_steps": 4,
    "holdout_size": 8,
    "rollout_batch_size": 8,
    # AlphaZero's search and ResNet.
    "num_simulations": 2,
    "channels": 4,
    "value_hidden": 8,
}
SHORT_EPISODES = {  # env options that cut episodes short, so the final evaluation is quick
    "classic": {"max_episode_steps": 50},
    "mujoco": {"max_episode_steps": 20},
    "atari": {"max_num_frames_per_episode": 200},
}
STEPS = 256  # env steps of a run (at least two chunks, of at least 128 env steps each)


def shrunk(agent: str, env: str) -> Experiment:
    """The config of ``--agent agent --env env``, shrunk: at most 4 envs x 32 steps a
    rollout (PPO's minibatches still divide it), the sizes of ``SMALL``, short episodes,
    chunks of about 128 env steps, no evaluation during training."""
    cfg = resolve(agent=agent, env=env).to_dict()
    num_envs = min(cfg["env"]["num_envs"], 4)
    rollout = min(cfg["run"]["rollout_len"], 32)
    chunk = num_envs * rollout * max(1, 128 // (num_envs * rollout))
    overrides = {f"agent.{k}": v for k, v in SMALL.items() if k in cfg["agent"]}
    group = envs.group(cfg["env"]["name"])
    overrides |= {f"env.{k}": v for k, v in SHORT_EPISODES.get(group, {}).items()}
    overrides |= {
        "run.rollout_len": rollout,
        "run.log_every": chunk,
        "run.eval_every": 10**9,
        "run.eval_episodes": 4,
        "run.stop_return": None,
    }
    steps = max(STEPS, 2 * chunk)
    return resolve(agent=agent, env=env, num_envs=num_envs, steps=steps, overrides=overrides)


@functools.cache
def _spec(env: str, num_envs: int, options: str) -> EnvSpec:
    """The spec of ``env`` made with ``options`` (JSON): made once per process."""
    return envs.make(env, num_envs=num_envs, **json.loads(options)).spec


@functools.cache
def fits(agent: str, env: str) -> bool:
    """Whether ``agent`` can act in ``env`` (its factory does not refuse the env's spec:
    the refusals of ``DOES_NOT_FIT`` are raised there, before a runner is built)."""
    config = resolve(agent=agent, env=env)
    options = json.dumps(dict(config.env.options), sort_keys=True)
    spec = _spec(config.env.name, config.env.num_envs, options)
    try:
        agents.build(config.agent, spec)
    except ConfigError as e:
        if re.search(DOES_NOT_FIT, str(e)):
            return False
        raise
    return True


def run_pair(agent: str, env: str, tmp_path) -> None:
    """Trains the shrunk pair and checks that it finished and learned (see module doc)."""
    cfg = shrunk(agent, env)
    launch = Launch(keep=1, loggers=[])
    summary = run_experiment(cfg, tmp_path, Console(file=io.StringIO()), launch)
    (run,) = tmp_path.iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert summary.steps == rows[-1]["step"] >= STEPS and len(rows) >= 2
    assert math.isfinite(summary.final_eval_return)
    for row in rows:  # finite, or None: "not computed this chunk" (NaN in the runners)
        bad = {k: v for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)}
        assert not bad, (agent, env, bad)
    losses = [v for row in rows for k, v in row.items() if "loss" in k and v is not None]
    config = agents.entry(agent).config
    if config is not None and dataclasses.fields(config):  # random: no options, no loss
        # tabular Q-learning has no loss: its updates show in q_mean leaving 0.
        learned = losses or [row["q_mean"] for row in rows if row.get("q_mean")]
        assert learned and all(map(math.isfinite, learned)), (agent, env, rows[-1])


def discrete(env: str) -> bool:
    return isinstance(_spec(env, 1, "{}").action_space, Discrete)


CLASSIC_DISCRETE = [e for e in CLASSIC if discrete(e)]
CLASSIC_CONTINUOUS = [e for e in CLASSIC if not discrete(e)]
CLASSIC_PAIRS = [
    (agent, kind[i % len(kind)])
    for i, agent in enumerate(AGENTS)
    for kind in (CLASSIC_DISCRETE, CLASSIC_CONTINUOUS)
    if kind
]
# An agent for other observations than classic control's (tabular Q-learning: one-hot
# states) runs on the first toy-text env it fits; one of turn-based games only on
# tic-tac-toe; one for several players on MPE (not made
# here, at collection: importing JaxMARL takes seconds in each pytest-xdist worker;
# ``test_every_classic_env_and_agent_is_run`` checks that the agent fits it).
CLASSIC_PAIRS += [
    (
        agent,
        next(
            (e for e in TOY_TEXT if fits(agent, e)),
            TURN_BASED[0] if agents.entry(agent).plays_turns else MULTI_PLAYER[0],
        ),
    )
    for agent in AGENTS
    if not any(fits(a, e) for a, e in CLASSIC_PAIRS if a == agent)
]


@pytest.mark.parametrize("agent, env", CLASSIC_PAIRS)
def test_every_agent_runs_on_classic_control(agent, env, tmp_path):
    """A pair that does not fit is refused with one line naming the action space."""
    if not fits(agent, env):
        with pytest.raises(ConfigError, match=DOES_NOT_FIT):
            run_experiment(shrunk(agent, env), tmp_path, Console(file=io.StringIO()))
        assert list(tmp_path.iterdir()) == []
        return
    if env in TURN_BASED:  # a tree search per move: compiling a whole run costs minutes
        setup = build_setup(shrunk(agent, env), Launch(loggers=[]))
        state = jax.eval_shape(setup.runner.init, jax.random.PRNGKey(0))  # traced: act, warm-up
        assert jax.tree.leaves(state.agent_state), agent
        return
    run_pair(agent, env, tmp_path)


def test_every_agent_builds_on_every_env_it_fits():
    """Every pair builds (env, agent, runner) or is refused with one line."""
    for env in ENVS:
        for agent in AGENTS:
            if fits(agent, env):
                build_setup(resolve(agent=agent, env=env), Launch(loggers=[]))
            else:
                with pytest.raises(ConfigError, match=DOES_NOT_FIT):
                    build_setup(resolve(agent=agent, env=env), Launch())


def test_every_classic_env_and_agent_is_run():
    assert {e for _, e in CLASSIC_PAIRS} >= set(CLASSIC)
    assert {a for a, e in CLASSIC_PAIRS if fits(a, e)} == set(AGENTS)


def test_presets_by_name_then_family_then_any():
    from jaxrl.experiment.config import find_preset

    assert find_preset("ppo", "CartPole-v1") == "cartpole-ppo"
    assert find_preset("ppo", "Acrobot-v1") == "acrobot-ppo"
    assert find_preset("ppo", "MountainCar-v0") == "ppo"  # family "*": no preset of its own
    assert find_preset("ppo", "ALE/Pong-v5") == "atari-ppo"
    assert find_preset("a2c", "Pendulum-v1") == "a2c"
    assert find_preset("random", "Acrobot-v1") is None
