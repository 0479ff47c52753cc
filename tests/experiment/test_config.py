import pytest
import yaml

from jaxrl import agents
from jaxrl.experiment import config
from jaxrl.types import ConfigError


def test_preset_chosen_for_agent_env_pair_and_named():
    cfg = config.resolve(agent="dqn", env="CartPole").to_dict()
    preset = config.load_preset("cartpole-dqn")
    assert cfg["preset"] == "cartpole-dqn"
    assert cfg["env"]["name"] == "CartPole-v1"
    assert cfg["agent"]["lr"] == preset["agent"]["lr"]
    assert cfg["agent"]["hidden_sizes"] == preset["agent"]["hidden_sizes"]
    assert cfg["run"]["rollout_len"] == preset["run"]["rollout_len"]
    assert config.find_preset("random", "CartPole-v1") is None
    assert config.resolve(agent="random", env="CartPole").to_dict()["preset"] is None


def test_presets_are_read_once_per_version_and_handed_out_as_copies(tmp_path, monkeypatch):
    """A preset file is parsed once while it is unchanged; an edit is read on the next
    call; a caller that changes what ``load_preset`` returned changes no later result."""
    monkeypatch.setattr(config, "PRESET_DIR", tmp_path)
    path = tmp_path / "mine.yaml"
    path.write_text("agent: {name: dqn, lr: 0.001}\nenv: {name: CartPole-v1}\n")
    first = config.load_preset("mine")
    first["agent"]["lr"] = 5.0
    assert config.load_preset("mine")["agent"]["lr"] == 0.001
    assert config.find_preset("dqn", "CartPole-v1") == "mine"
    assert config.find_preset("dqn", "Acrobot-v1") is None
    path.write_text("agent: {name: dqn, lr: 0.00025}\nenv: {name: Acrobot-v1}\n")
    assert config.load_preset("mine")["agent"]["lr"] == 0.00025
    assert config.find_preset("dqn", "Acrobot-v1") == "mine"
    assert config.find_preset("dqn", "CartPole-v1") is None


def test_flags_and_dotted_overrides_win_over_preset():
    cfg = config.resolve(
        agent="dqn",
        env="CartPole-v1",
        steps=1234,
        seed=7,
        num_envs=3,
        overrides={"agent.lr": 3e-4, "agent.n_step": 3, "run.eval_every": 0},
    ).to_dict()
    assert cfg["run"]["steps"] == 1234 and cfg["run"]["seed"] == 7
    assert cfg["env"]["num_envs"] == 3
    assert cfg["agent"]["lr"] == 3e-4 and cfg["agent"]["n_step"] == 3
    assert cfg["run"]["eval_every"] == 0
    # Every option of the agent is resolved, defaults included.
    assert cfg["agent"]["double"] is False and "reward_clip" in cfg["agent"]


def test_saved_config_reproduces_itself(tmp_path):
    cfg = config.resolve(agent="dqn", env="Acrobot", overrides={"agent.gamma": 0.95})
    path = tmp_path / "config.yaml"
    path.write_text(config.dump(cfg))
    assert config.resolve(config_file=str(path)) == cfg
    # A config file may start from a preset and change a few values.
    preset_sizes = config.load_preset("cartpole-dqn")["agent"]["hidden_sizes"]
    partial = tmp_path / "partial.yaml"
    partial.write_text(yaml.safe_dump({"preset": "cartpole-dqn", "agent": {"lr": 0.01}}))
    cfg = config.resolve(config_file=str(partial)).to_dict()
    assert cfg["agent"]["lr"] == 0.01 and cfg["agent"]["hidden_sizes"] == preset_sizes


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (
            dict(agent="dqnn"),
            "unknown agent 'dqnn' (did you mean 'dqn' or 'mdqn' or 'qrdqn'?); available: "
            + ", ".join(sorted(agents.available())),
        ),
        (dict(env="CartPol"), "CartPol"),
        (dict(overrides={"agent.lrate": 1.0}), "unknown option 'lrate'"),
        (dict(overrides={"agent.lr": "fast"}), "option 'lr': expected float"),
        (dict(overrides={"model.lr": 1.0}), "--agent.KEY, --env.KEY or --run.KEY"),
        (dict(overrides={"run.steps": 0}), "steps must be in [1, 2147483647], got 0"),
        (dict(config_file="/nonexistent/config.yaml"), "does not exist"),
    ],
)
def test_user_mistakes(kwargs, fragment):
    with pytest.raises(ConfigError) as e:
        config.resolve(**kwargs).to_dict()
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_malformed_config_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.resolve(config_file=str(bad))
    bad.write_text("agnet: {name: dqn}\n")
    with pytest.raises(ConfigError, match="unknown key"):
        config.resolve(config_file=str(bad))


@pytest.mark.parametrize(
    "text, value",
    [
        ("3e-4", 3e-4),
        ("3", 3),
        ("0.5", 0.5),
        ("true", True),
        ("null", None),
        ("[64, 64]", [64, 64]),
        ("huber", "huber"),
    ],
)
def test_parse_override(text, value):
    got = config.parse_override(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("name", sorted(config.presets()))
def test_every_preset_is_valid(name):
    cfg = config.resolve(config_file=str(config.presets()[name])).to_dict()
    preset = config.load_yaml(config.presets()[name])
    for section in ("agent", "run"):
        for key, value in preset[section].items():
            assert cfg[section][key] == value, (section, key)


@pytest.mark.parametrize("agent", ["dqn", "rainbow"])
def test_atari_preset_chosen_for_every_atari_game(agent):
    for env in ("Pong", "ALE/Breakout-v5", "mspacman"):
        cfg = config.resolve(agent=agent, env=env).to_dict()
        assert cfg["preset"] == f"atari-{agent}"
        assert cfg["env"]["noop_max"] == 0 and "family" not in cfg["env"]
        assert cfg["agent"]["torso"] == "nature" and cfg["agent"]["buffer_size"] == 1_000_000
    assert config.find_preset(agent, "CartPole-v1") == f"cartpole-{agent}"
    # The family preset's env options are dropped for an env of another family.
    path = str(config.presets()[f"atari-{agent}"])
    assert config.resolve(config_file=path, env="CartPole").to_dict()["env"] == {
        "name": "CartPole-v1",
        "num_envs": 1,
    }
    assert config.resolve(config_file=path, env="Breakout").env.name == "ALE/Breakout-v5"


def test_atari_pqn_preset_chosen_for_every_atari_game():
    """``--agent pqn --env Breakout`` runs purejaxql's Atari settings (``atari-pqn``), not
    the ``pqn`` preset for every env; its update is whole minibatches of the rollout."""
    for env in ("Pong", "Breakout", "ALE/MsPacman-v5"):
        cfg = config.resolve(agent="pqn", env=env).to_dict()
        assert cfg["preset"] == "atari-pqn", env
        assert cfg["agent"]["torso"] == "nature" and cfg["agent"]["layer_norm"] is True
        assert cfg["env"]["num_envs"] == 128 and cfg["env"]["episodic_life"] is True
        assert cfg["env"]["repeat_action_probability"] == 0.0 and "family" not in cfg["env"]
        rollout = cfg["run"]["rollout_len"] * cfg["env"]["num_envs"]
        assert rollout % cfg["agent"]["num_minibatches"] == 0
        assert cfg["run"]["log_every"] % rollout == 0 and cfg["run"]["eval_every"] % rollout == 0
        assert cfg["agent"]["epsilon_decay_steps"] == cfg["run"]["steps"] // 10


@pytest.mark.parametrize("agent", ["dqn", "rainbow"])
def test_minatar_preset_chosen_for_every_minatar_game(agent):
    for env in ("MinAtar-Breakout", "MinAtar-Asterix", "MinAtar-Seaquest"):
        cfg = config.resolve(agent=agent, env=env).to_dict()
        assert cfg["preset"] == f"minatar-{agent}", env
        assert cfg["env"] == {"name": env, "backend": "pgx", "num_envs": 4}
        assert cfg["agent"]["buffer_size"] == 100_000


def test_minatar_pqn_preset_decays_epsilon_within_its_budget():
    # PQNConfig decays epsilon over 1M steps (a tenth of purejaxql's 10M); the MinAtar
    # preset's 1M budget takes purejaxql's ratio instead, and wins over the "*" preset.
    for env in ("MinAtar-Breakout", "MinAtar-Asterix"):
        cfg = config.resolve(agent="pqn", env=env).to_dict()
        assert cfg["preset"] == "minatar-pqn", env
        assert cfg["agent"]["epsilon_decay_steps"] == cfg["run"]["steps"] // 10
    assert config.find_preset("pqn", "CartPole-v1") == "cartpole-pqn"
    assert config.find_preset("pqn", "Acrobot-v1") == "pqn"


def test_agents_list_resolves_and_round_trips(tmp_path):
    """``--agents`` (independent agents): each agent resolved with its own preset, the
    ``--agent.KEY`` overrides on every agent, ``agent`` the first; the saved YAML has no
    aliases and resolves again to the same config."""
    typed = config.resolve(
        agent="rainbow",
        agent_list=["rainbow", "dqn"],
        env="connect_four",
        overrides={"agent.n_step": 1, "agent.gamma": 0.9},
    )
    cfg = typed.to_dict()
    assert [a["name"] for a in cfg["agents"]] == ["rainbow", "dqn"]
    assert cfg["agent"] == cfg["agents"][0] and cfg["agents"][0]["num_atoms"] == 51
    assert all(a["n_step"] == 1 and a["gamma"] == 0.9 for a in cfg["agents"])
    text = config.dump(typed)
    assert "&id" not in text and "*id" not in text
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert config.resolve(config_file=str(path)) == typed
    path.write_text("agents: {name: dqn}\n")
    with pytest.raises(ConfigError, match="'agents' must be a list"):
        config.resolve(config_file=str(path))


@pytest.mark.parametrize(
    "agent, env, alias, canonical, value",
    [
        ("dqn", "CartPole", "discount_rate", "gamma", 0.95),
        ("dqn", "CartPole", "min_replay_history", "learning_starts", 500),
        ("rainbow", "Pong", "atoms", "num_atoms", 21),
        ("sac", "Pendulum", "target_q_tau", "tau", 0.01),
    ],
)
def test_an_option_given_under_another_name_overrides_the_preset(
    agent, env, alias, canonical, value
):
    """A command-line value wins over the preset's value of the same option, whichever
    accepted name it uses (the preset sets ``canonical``; the user types ``alias``)."""
    preset = config.load_preset(config.find_preset(agent, config.envs.canonical_name(env)))
    assert canonical in preset["agent"]  # the case is only a test where the preset sets it
    resolved = config.resolve(agent=agent, env=env, overrides={f"agent.{alias}": value})
    assert resolved.agent.option(canonical) == value


def test_independent_agents_leave_a_self_play_preset_s_opponents_out():
    """The README's example: ``--agents rainbow,dqn --env connect_four --agent.n_step 1``
    resolves although ``connect_four-rainbow`` (a self-play preset) sets training
    opponents; opponents asked for on the command line are still refused."""
    assert config.load_preset("connect_four-rainbow")["run"].get("opponent_pool")
    resolved = config.resolve(
        agent_list=["rainbow", "dqn"], env="connect_four", overrides={"agent.n_step": 1}
    )
    assert resolved.run.opponent_pool == 0 and resolved.run.opponent_scripted == 0
    asked = {"agent.n_step": 1, "run.opponent_pool": 2}
    typed = config.resolve(agent_list=["rainbow", "dqn"], env="connect_four", overrides=asked)
    assert (
        typed.run.opponent_pool == 2
    )  # refused by the mode's check (tests/experiment/test_modes.py)
