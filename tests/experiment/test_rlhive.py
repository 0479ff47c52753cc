"""RLHive's experiment files run as the jaxrl experiments they mean
(``jaxrl/experiment/rlhive.py``): the files in ``tests/experiment/rlhive/`` hold the
settings of RLHive's own ``gym/dqn.yml``, ``atari/dqn.yml`` and ``hanabi/rainbow.yml`` in
its two formats; its ``-p``/``-c`` flags and ``--ag.`` and nested overrides; a key with
another meaning is one line, exit code 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import pytest
import yaml

from jaxrl import agents, envs
from jaxrl.experiment import config
from jaxrl.train import _rlhive_choices, parse_args
from jaxrl.types import ConfigError
from tests.helpers import one_line_error, train_into

FILES = Path(__file__).parent / "rlhive"


def test_gym_dqn_file_trains_as_its_jaxrl_experiment(tmp_path, capsys):
    """``-c gym/dqn.yml``: DQN on CartPole-v0 (cut at 200 steps) with the file's settings
    and RLHive's defaults for the rest, a chunk per test period, its saving period as
    the checkpoint period; what jaxrl does otherwise is said in notes."""
    code, made = train_into(tmp_path, "-c", str(FILES / "gym_dqn.yml"), "--steps", "1000")
    assert code == 0 and len(made) == 1
    err = capsys.readouterr().err
    assert "note: device not used" in err and "logger WandbLogger: not started" in err
    saved = yaml.safe_load((made[0] / "config.yaml").read_text())
    agent, env, run = saved["agent"], saved["env"], saved["run"]
    assert agent["name"] == "dqn" and agent["hidden_sizes"] == [256, 256]
    want = dict(optimizer="adam", lr=1e-3, adam_eps=1e-8, weight_decay=0.0, loss="huber")
    want.update(gamma=0.99, buffer_size=1000, batch_size=128, target_update_period=100)
    want.update(epsilon_start=0.1, epsilon_end=0.1, eval_epsilon=0.001, learning_starts=500)
    want.update(reward_clip=1.0, max_grad_norm=None, updates_per_rollout=1)
    assert {k: agent[k] for k in want} == want
    assert env["name"] == "CartPole-v1" and env["max_episode_steps"] == 200
    assert (run["eval_every"], run["eval_episodes"], run["rollout_len"]) == (200, 10, 1)
    launch = yaml.safe_load((made[0] / "launch.yaml").read_text())
    assert launch["checkpoint_every"] == 10_000
    rows = [json.loads(line) for line in (made[0] / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [200, 400, 600, 800, 1000]
    assert all(row["episode_length"] <= 200 for row in rows if "episode_length" in row)


def test_atari_dqn_file_means_dopamines_dqn_on_asterix():
    """The runner-object format: RMSpropTF as TensorFlow's RMSprop, the Nature CNN with
    RLHive's paddings and Xavier init, one update per 4 agent steps, ale-py's Asterix with
    sticky actions and 30 no-op starts, 27,000 steps per episode at most."""
    experiment = config.resolve(config_file=str(FILES / "atari_dqn.yml"))
    agent = experiment.agent.kwargs()
    torso = dict(channels=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1])
    torso.update(paddings=[2, 2, 1], init_fn="xavier_uniform")
    assert yaml.safe_load(yaml.safe_dump(agent["torso"])) == torso
    want = dict(optimizer="rmsprop", lr=2.5e-4, rmsprop_decay=0.95, rmsprop_eps=1e-5)
    want.update(rmsprop_centered=True, rmsprop_eps_in_sqrt=True, rmsprop_initial_scale=1.0)
    want.update(hidden_sizes=[512], target_update_period=8000, learning_starts=20_000)
    want.update(epsilon_start=1.0, epsilon_end=0.01, epsilon_decay_steps=250_000)
    want.update(buffer_size=1_000_000, updates_per_rollout=1, reward_clip=1.0)
    assert {k: agent[k] for k in want} == want
    assert experiment.env.name == "ALE/Asterix-v5"
    options = dict(noop_max=30, repeat_action_probability=0.25, stack_num=4)
    assert experiment.env.options == {**options, "max_num_frames_per_episode": 108_000}
    assert (experiment.run.steps, experiment.run.rollout_len) == (50_000_000, 4)
    translated = config.rlhive_file(FILES / "atari_dqn.yml")
    assert translated is not None and translated.checkpoint_every == 1_000_000


def test_hanabi_rainbow_file_is_self_play():
    """The multi-agent file: one Rainbow playing every seat (self_play), distributional
    without noise, prioritized replay, Hanabi of 2 players; the MLP torso with RLHive's
    variance-scaling init builds."""
    translated = config.rlhive_file(FILES / "hanabi_rainbow.yml")
    assert translated is not None and translated.self_play
    experiment = config.resolve(config_file=str(FILES / "hanabi_rainbow.yml"))
    agent = experiment.agent.kwargs()
    want = dict(distributional=True, noisy=False, double=False, dueling=False, v_min=-25.0)
    want.update(v_max=25.0, num_atoms=51, prioritized=True, lr=2.5e-5, adam_eps=3.125e-5)
    want.update(hidden_sizes=[512, 512], target_update_period=500, epsilon_end=0.0)
    assert {k: agent[k] for k in want} == want
    assert experiment.env.name == "hanabi" and experiment.env.options == {"num_players": 2}
    # RLHive's init_fn of an MLP: a torso spec of no convolutions with that initializer
    torso = yaml.safe_load(yaml.safe_dump(agent["torso"]))
    assert torso["init_fn"] == "variance_scaling" and not torso.get("channels")
    spec = envs.make("CartPole", 1).spec
    agent_fns = agents.make("rainbow", spec, torso=agent["torso"], hidden_sizes=(8,))
    params = jax.eval_shape(agent_fns.init, jax.random.PRNGKey(0))
    assert jax.tree.leaves(params)


def _resolved(*argv: str) -> config.Experiment:
    args, overrides = parse_args(list(argv))
    _rlhive_choices(args)
    return config.resolve(
        agent=args.agent,
        env=args.env,
        config_file=args.config,
        overrides=overrides,
        preset=args.preset,
    )


def test_rlhive_overrides_and_preset_paths():
    """``--ag.KEY`` is ``--agent.KEY``; RLHive's nested keys name jaxrl's options; a field
    of a torso is set in its spec; ``-p atari/dqn.yml`` is the preset of its settings on
    its game."""
    gym = str(FILES / "gym_dqn.yml")
    agent = _resolved("-c", gym, "--ag.discount_rate", "0.95").agent.kwargs()
    assert agent["gamma"] == 0.95
    agent = _resolved("-c", gym, "--ag.replay_buffer.capacity", "5000").agent.kwargs()
    assert agent["buffer_size"] == 5000
    experiment = _resolved("-p", "atari/dqn.yml", "--agent.torso.channels", "[16, 32, 32]")
    assert experiment.env.name == "ALE/Asterix-v5" and experiment.preset == "atari-dqn-rmsprop"
    assert experiment.agent.kwargs()["optimizer"] == "rmsprop"
    torso = experiment.agent.kwargs()["torso"]
    assert list(torso["channels"]) == [16, 32, 32] and list(torso["strides"]) == [4, 2, 1]
    with pytest.raises(ConfigError, match="unknown preset 'gym/ppo.yml'.*RLHive's: atari/dqn"):
        _resolved("-p", "gym/ppo.yml")
    with pytest.raises(ConfigError, match="preset 'atari-dqn' is for a family"):
        _resolved("-p", "atari-dqn")


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        (
            "    test_epsilon: .001",
            "    target_net_update_fraction: 0.05",
            "'target_net_update_fraction' weighs the other network",
        ),
        ("name: 'DQNAgent'", "name: 'DRQNAgent'", "jaxrl has no recurrent DQN"),
        ("name: 'SmoothL1Loss'", "name: 'KLDivLoss'", "loss KLDivLoss"),
        ("name: 'GymEnv'", "name: 'MarlGridEnv'", "environment MarlGridEnv has no jaxrl"),
        ("max_steps_per_episode: 1000", "max_steps: 1000", "runner key(s) ['max_steps']"),
        ("stack_size: &stack_size 1", "stack_size: &stack_size 4", "stack_size 4 stacks"),
    ],
)
def test_a_key_with_another_meaning_is_one_line(tmp_path, capsys, old, new, fragment):
    """Each key jaxrl would read otherwise, or has nothing for: one line naming it, exit
    code 2, no run directory."""
    text = (FILES / "gym_dqn.yml").read_text()
    assert old in text
    path = tmp_path / "hive.yml"
    path.write_text(text.replace(old, new))
    assert train_into(tmp_path / "runs", "-c", str(path)) == (2, [])
    one_line_error(capsys, fragment)


def test_a_nested_override_that_does_not_exist_is_one_line(tmp_path, capsys):
    argv = ["--agent", "dqn", "--env", "CartPole", "--agent.lr.scale", "2"]
    assert train_into(tmp_path / "runs", *argv) == (2, [])
    one_line_error(capsys, "nested override '--agent.lr.scale' does not exist")
