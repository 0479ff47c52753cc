"""RLHive's experiment files, read as the jaxrl experiments they mean.

RLHive describes a run as registered objects, each ``{name: Class, kwargs: {...}}``: a
runner (``SingleAgentRunner`` or ``MultiAgentRunner``, or, in its older files, the runner's
keys at the top), its ``environment``, its ``agent`` (or ``agents``) with nested objects for
the network, optimizer, loss, replay buffer and schedules, and ``loggers``. ``translate``
turns one into jaxrl's config (``agent``, ``env``, ``run`` sections, which
``experiment.config`` then validates as any config file, foreign option names included)
and the command-line choices it implies (self-play, the checkpoint period). A key whose
meaning differs in jaxrl, or that jaxrl has no counterpart for, is one line naming it and
what to give instead; keys that only place files or choose hardware (``save_dir``,
``device``) become notes. ``OVERRIDES`` maps RLHive's nested command-line overrides
(``--ag.replay_buffer.capacity``) to jaxrl's options. docs/how-to/rlhive.md shows the
mapping key by key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from jaxrl import aliases
from jaxrl.types import ConfigError

AGENTS = {  # RLHive's registered agents -> jaxrl's
    "DQNAgent": "dqn",
    "RainbowDQNAgent": "rainbow",
    "LegalMovesRainbowAgent": "rainbow",  # jaxrl's agents honour action masks by default
    "RandomAgent": "random",
    "TabularQLearningAgent": "tabular_q",
    "PPOAgent": "ppo",
    "SACAgent": "sac",
    "TD3": "td3",
    "DDPG": "ddpg",
}
NOT_HERE = {  # RLHive agents jaxrl has no counterpart for, and the nearest one
    "DRQNAgent": "jaxrl has no recurrent DQN; use --agent dqn with stacked frames",
}
# PettingZoo and MinAtar env names of RLHive's files -> jaxrl's
GAMES = {"hanabi": "hanabi", "tictactoe": "tic_tac_toe", "connect_four": "connect_four"}
MINATAR = {
    "asterix": "MinAtar-Asterix",
    "breakout": "MinAtar-Breakout",
    "freeway": "MinAtar-Freeway",
    "seaquest": "MinAtar-Seaquest",
    "space_invaders": "MinAtar-SpaceInvaders",
}
# Gymnasium's AtariPreprocessing defaults, which jaxrl's Atari envs apply by themselves
ATARI_PREPROCESSING = {"frame_skip": 4, "screen_size": 84, "noop_max": 30}
# RLHive's preset paths (``hive_single_agent_loop -p atari/dqn.yml``) -> jaxrl's preset
# of the same settings and the env RLHive's file trains
PRESETS = {
    "atari/dqn.yml": ("atari-dqn-rmsprop", "Asterix"),  # Dopamine's DQN, RMSprop as its TF DQN
    "atari/rainbow.yml": ("atari-rainbow", "Asterix"),
    "gym/dqn.yml": ("cartpole-dqn", "CartPole"),
    "gym/rainbow.yml": ("cartpole-rainbow", "CartPole"),
    "hanabi/rainbow.yml": ("hanabi-rainbow", "hanabi"),
}
# RLHive's nested overrides (``--ag.KEY.SUBKEY``) -> jaxrl agent options
OVERRIDES = {
    "replay_buffer.capacity": "buffer_size",
    "replay_buffer.beta": "alpha",
    "replay_buffer.n_step": "n_step",
    "representation_net.hidden_units": "hidden_sizes",
    "representation_net.mlp_layers": "hidden_sizes",
    "optimizer_fn.lr": "lr",
    "target_net_update_schedule.period": "target_update_period",
    "epsilon_schedule.init_value": "epsilon_start",
    "epsilon_schedule.end_value": "epsilon_end",
    "epsilon_schedule.steps": "epsilon_decay_steps",
}
# RLHive's constructor defaults of its DQN agents (DQNAgent; RainbowDQNAgent adds its
# own), for the options its files leave out: PyTorch's Adam (lr 1e-3, eps 1e-8, no weight
# decay), SmoothL1Loss, a CircularReplayBuffer of 10,000, no gradient clip. A schedule a
# file leaves out keeps jaxrl's default (RLHive's documentation gives none).
DEFAULTS = {
    "dqn": dict(
        optimizer="adam", lr=1e-3, adam_eps=1e-8, weight_decay=0.0, loss="huber", gamma=0.99,
        n_step=1, max_grad_norm=None, learning_starts=5000, batch_size=32, eval_epsilon=0.001,
        buffer_size=10_000,
    ),
}  # fmt: skip
DEFAULTS["rainbow"] = dict(
    DEFAULTS["dqn"], noisy=True, sigma0=0.5, double=True, dueling=True, distributional=True,
    v_min=0.0, v_max=200.0, num_atoms=51, prioritized=False,
)  # fmt: skip
LOGGERS = {  # RLHive's loggers: what jaxrl does instead
    "ChompLogger": "jaxrl writes metrics.jsonl and metrics.csv in the run directory",
    "NullLogger": "jaxrl writes metrics.jsonl and metrics.csv in the run directory",
    "WandbLogger": "not started: give --log wandb",
    "TensorboardLogger": "jaxrl writes TensorBoard's events by default (--log tensorboard)",
}
IGNORED = {  # keys of a file that choose hardware, logging cadence or file places
    "device": "JAX places the program on its default device (--devices)",
    "log_frequency": "jaxrl logs every --run.log_every env steps",
    "id": "players are numbered by their order",
    "observation_dtype": "the env's spec sets the observation dtype",
    "run_name": "a run directory is named by agent, env, seed and time",
    "save_dir": "runs go under --logdir",
}


@dataclasses.dataclass
class Translated:
    """A translated file: ``config`` (jaxrl's ``agent``/``env``/``run`` sections), the
    command-line choices it implies and the notes to print (one line each)."""

    config: dict[str, Any]
    self_play: bool = False
    checkpoint_every: int | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


def is_rlhive(doc: Mapping[str, Any]) -> bool:
    """Whether ``doc`` is an RLHive experiment file: a runner object, or the keys of one."""
    runner = str(doc.get("name", ""))
    return runner.endswith("Runner") or "environment" in doc or "train_steps" in doc


def translate(doc: Mapping[str, Any], where: str) -> Translated:
    """The jaxrl experiment RLHive file ``doc`` (from ``where``) means; ConfigError (one
    line) for a key with another meaning or none here."""
    runner = dict(doc.get("kwargs", {})) if "kwargs" in doc else dict(doc)
    runner.pop("name", None)
    out = Translated({"agent": {}, "env": {}, "run": {}})
    manager = _object(runner.pop("experiment_manager", None), where)
    if manager is not None:
        runner.update(manager[1])
    _ignore(runner, ("run_name", "save_dir", "name"), out)
    schedule = _object(runner.pop("saving_schedule", None), where)
    if schedule is not None:
        out.checkpoint_every = int(_periodic(schedule, "saving_schedule", where))
    for logger in runner.pop("loggers", None) or []:
        name = str(logger.get("name", logger)) if isinstance(logger, Mapping) else str(logger)
        out.notes.append(f"logger {name}: {LOGGERS.get(name, 'not started')}")
    out.self_play = bool(runner.pop("self_play", False))
    num_agents = runner.pop("num_agents", None)
    agents = runner.pop("agents", None) or [runner.pop("agent", None)]
    if not agents or agents[0] is None:
        raise ConfigError(f"RLHive file '{where}' has no agent")
    if len(agents) > 1 and not out.self_play:
        raise ConfigError(
            f"RLHive file '{where}' lists {len(agents)} agents; jaxrl runs one agent per "
            "player with --agents A,B on the command line, or self_play: true"
        )
    _environment(runner.pop("environment", None), num_agents, out, where)
    _run(runner, out, where)
    _agent(agents[0], out, where)
    return out


def _object(value: Any, where: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, kwargs)`` of an RLHive object ``{name, kwargs}`` (a bare name: no kwargs)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value, {}
    if not isinstance(value, Mapping) or "name" not in value:
        raise ConfigError(f"RLHive file '{where}': expected {{name, kwargs}}, got {value!r}")
    return str(value["name"]), dict(value.get("kwargs") or {})


def _periodic(obj: tuple[str, dict[str, Any]], key: str, where: str) -> int:
    """The period of a ``PeriodicSchedule`` (the only schedule a period has)."""
    name, kwargs = obj
    if name != "PeriodicSchedule" or "period" not in kwargs:
        raise ConfigError(
            f"RLHive file '{where}': {key} {name} has no jaxrl counterpart; jaxrl takes a "
            "PeriodicSchedule's period"
        )
    return int(kwargs["period"])


def _ignore(section: dict[str, Any], keys: tuple[str, ...], out: Translated) -> None:
    for key in keys:
        if key in section:
            section.pop(key)
            if key in IGNORED:
                out.notes.append(f"{key} not used: {IGNORED[key]}")


def _run(runner: dict[str, Any], out: Translated, where: str) -> None:
    """The runner's own keys: steps, evaluation, episode limits, frame stacks, seed."""
    run, env = out.config["run"], out.config["env"]
    names = {"train_steps": "steps", "test_episodes": "eval_episodes", "seed": "seed"}
    for key, to in names.items():
        if key in runner:
            run[to] = int(runner.pop(key))
    if "test_frequency" in runner:  # -1: never; else a chunk ends at each test
        every = max(0, int(runner.pop("test_frequency")))
        run["eval_every"] = every
        if every:
            run["log_every"] = every
    limit = runner.pop("max_steps_per_episode", None)
    if limit is not None:
        if out.config["env"].get("family_hint") == "atari":
            env["max_num_frames_per_episode"] = int(limit) * ATARI_PREPROCESSING["frame_skip"]
        else:  # the runner's cap over the env's own limit (CartPole-v0's 200)
            env["max_episode_steps"] = min(int(limit), env.get("max_episode_steps", int(limit)))
    stack = runner.pop("stack_size", None)
    if stack is not None and env.get("family_hint") == "atari":
        env["stack_num"] = int(stack)
    elif stack not in (None, 1):
        raise ConfigError(
            f"RLHive file '{where}': stack_size {stack} stacks frames, which jaxrl does for "
            "Atari only (4, its default); give stack_size 1"
        )
    env.pop("family_hint", None)
    if runner:
        raise ConfigError(
            f"RLHive file '{where}' has runner key(s) {sorted(runner)} with no jaxrl "
            "counterpart (docs/how-to/rlhive.md lists those translated)"
        )


def _environment(value: Any, num_agents: Any, out: Translated, where: str) -> None:
    obj = _object(value, where)
    if obj is None:
        raise ConfigError(f"RLHive file '{where}' has no environment")
    name, kwargs = obj
    env = out.config["env"]
    env_name = str(kwargs.pop("env_name", ""))
    if name == "GymEnv":
        _gym_env(env_name, kwargs, env, where)
    elif name == "MinAtarEnv":
        if env_name not in MINATAR:
            raise ConfigError(f"RLHive file '{where}': MinAtar game '{env_name}' unknown")
        env["name"] = MINATAR[env_name]
        env.update({k: kwargs.pop(k) for k in ("sticky_action_prob", "difficulty_ramping")
                    if k in kwargs})  # fmt: skip
    elif name == "PettingZooEnv":
        game = env_name.rsplit("_v", 1)[0]
        if game not in GAMES:
            raise ConfigError(
                f"RLHive file '{where}': PettingZoo game '{env_name}' is not a jaxrl game "
                f"({', '.join(GAMES.values())}); other PettingZoo games run as --env pz:ID"
            )
        env["name"] = GAMES[game]
        kwargs.pop("env_family", None)
        players = kwargs.pop("num_players", num_agents)
        if players is not None and game == "hanabi":
            env["num_players"] = int(players)
    else:
        raise ConfigError(
            f"RLHive file '{where}': environment {name} has no jaxrl counterpart; jaxrl "
            "reads GymEnv, MinAtarEnv and PettingZooEnv"
        )
    if kwargs:
        raise ConfigError(
            f"RLHive file '{where}': environment option(s) {sorted(kwargs)} of {name} have "
            "no jaxrl counterpart"
        )


def _gym_env(env_name: str, kwargs: dict[str, Any], env: dict[str, Any], where: str) -> None:
    """A Gymnasium id: jaxrl's own env where it has one (``CartPole-v0``: CartPole cut at
    200 steps), Atari's ``ALE/Game-v5`` with the preprocessing RLHive's files wrap it in,
    else ``gym:ID`` on the host."""
    from jaxrl import envs

    if env_name.startswith("ALE/"):
        env["name"], env["family_hint"] = env_name.split("/")[1].rsplit("-v", 1)[0], "atari"
        wrappers = kwargs.pop("env_wrappers", []) or []
        for wrapper in wrappers:
            wrapper_name, options = _object(wrapper, where) or ("", {})
            _atari_wrapper(wrapper_name, options, env, where)
        if kwargs.pop("frameskip", 1) != 1:
            raise ConfigError(
                f"RLHive file '{where}': jaxrl's Atari envs skip frames themselves; give "
                "frameskip 1 with AtariPreprocessing's frame_skip"
            )
        for key in ("repeat_action_probability", "full_action_space"):
            if key in kwargs:
                env[key] = kwargs.pop(key)
        return
    if env_name == "CartPole-v0":
        env["name"], env["max_episode_steps"] = "CartPole", 200
        return
    try:
        env["name"] = envs.canonical_name(env_name)
    except ConfigError:
        env["name"] = f"gym:{env_name}"


def _atari_wrapper(name: str, options: dict[str, Any], env: dict[str, Any], where: str) -> None:
    if name == "PermuteImageWrapper":  # PyTorch's channel order; jaxrl's convs take NHWC
        return
    if name != "AtariPreprocessing":
        raise ConfigError(
            f"RLHive file '{where}': Atari wrapper {name} has no jaxrl counterpart; jaxrl's "
            "Atari envs apply AtariPreprocessing themselves"
        )
    settings = {**ATARI_PREPROCESSING, **options}
    settings.pop("grayscale_newaxis", None)
    if settings.pop("frame_skip") != 4 or settings.pop("screen_size") != 84:
        raise ConfigError(
            f"RLHive file '{where}': AtariPreprocessing with frame_skip {options.get('frame_skip')}"
            f" and screen_size {options.get('screen_size')}: give --env.frameskip and "
            "--env.img_height/--env.img_width instead"
        )
    env["noop_max"] = settings.pop("noop_max")
    if settings.pop("terminal_on_life_loss", False):
        env["episodic_life"] = True
    if settings:
        raise ConfigError(
            f"RLHive file '{where}': AtariPreprocessing option(s) {sorted(settings)} have no "
            "jaxrl counterpart"
        )


def _agent(value: Any, out: Translated, where: str) -> None:
    obj = _object(value, where)
    assert obj is not None
    name, kwargs = obj
    if name in NOT_HERE:
        raise ConfigError(f"RLHive file '{where}': agent {name}: {NOT_HERE[name]}")
    if name not in AGENTS:
        raise ConfigError(
            f"RLHive file '{where}': agent {name} has no jaxrl counterpart; RLHive agents "
            f"jaxrl reads: {', '.join(AGENTS)}"
        )
    agent = out.config["agent"]
    agent.update(name=AGENTS[name], **DEFAULTS.get(AGENTS[name], {}))
    _ignore(kwargs, ("device", "log_frequency", "id", "stack_size"), out)
    if kwargs.pop("use_eps_greedy", True) is False:  # noisy nets explore alone
        kwargs.setdefault("epsilon_schedule", {"name": "ConstantSchedule", "kwargs": {"value": 0}})
    fields = _fields(agent["name"])
    for key, value in kwargs.items():
        handler = NESTED.get(key)
        if handler is None:  # flat: jaxrl's name of an RLHive one (discount_rate: gamma)
            agent[aliases.canonical(key, fields)] = value
            continue
        obj = _object(value, where)
        if obj is not None:
            handler(obj, out, where)


def _network(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    name, kwargs = obj
    agent = out.config["agent"]
    if name == "MLPNetwork":
        agent["hidden_sizes"] = list(kwargs.pop("hidden_units", [256]))
    elif name == "ConvNetwork":
        spec = {k: list(kwargs.pop(k)) for k in ("channels", "kernel_sizes", "strides", "paddings")
                if k in kwargs}  # fmt: skip
        agent["torso"] = spec
        agent["hidden_sizes"] = list(kwargs.pop("mlp_layers", []))
    else:
        give = "give MLPNetwork or ConvNetwork, or a torso of your own (--agent.torso)"
        raise _refuse("network", name, where, give)
    _no_leftovers(kwargs, name, where)


def _refuse(what: str, name: str, where: str, give: str) -> ConfigError:
    """The one line for an RLHive ``what`` (network, optimizer) jaxrl has none of."""
    return ConfigError(f"RLHive file '{where}': {what} {name} has no jaxrl counterpart; {give}")


def _no_leftovers(kwargs: Mapping[str, Any], name: str, where: str) -> None:
    """ConfigError (one line) naming the options of RLHive object ``name`` left unread."""
    if kwargs:
        raise ConfigError(f"RLHive file '{where}': {name} option(s) {sorted(kwargs)} not known")


def _init(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    """RLHive's ``init_fn``: the torso's kernel initializer (jaxrl's torso spec field)."""
    agent = out.config["agent"]
    torso = agent.get("torso")
    spec = dict(torso) if isinstance(torso, Mapping) else {"channels": []}
    spec["init_fn"] = obj[0] if not obj[1] else {"name": obj[0], **obj[1]}
    agent["torso"] = spec


def _optimizer(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    name, kwargs = obj
    agent = out.config["agent"]
    if name == "Adam":  # PyTorch's defaults where the file gives none
        agent.update(optimizer="adam", lr=kwargs.pop("lr", 1e-3), adam_eps=kwargs.pop("eps", 1e-8))
        agent["weight_decay"] = kwargs.pop("weight_decay", 0.0)
    elif name in ("RMSprop", "RMSpropTF"):
        # PyTorch's RMSprop (lr 0.01, alpha 0.99, eps 1e-8) or timm's RMSpropTF, which
        # RLHive's is (alpha 0.9, eps 1e-10, eps inside the root, mean square from 1)
        tf = name == "RMSpropTF"
        agent.update(
            optimizer="rmsprop", lr=kwargs.pop("lr", 0.01), rmsprop_eps_in_sqrt=tf,
            rmsprop_initial_scale=float(tf), rmsprop_decay=kwargs.pop("alpha", 0.9 if tf else 0.99),
            rmsprop_eps=kwargs.pop("eps", 1e-10 if tf else 1e-8),
            rmsprop_centered=kwargs.pop("centered", False), momentum=kwargs.pop("momentum", 0.0),
            weight_decay=kwargs.pop("weight_decay", 0.0),
        )  # fmt: skip
    else:
        give = "give Adam, RMSprop or RMSpropTF (or --agent.optimizer)"
        raise _refuse("optimizer", name, where, give)
    _no_leftovers(kwargs, name, where)


def _loss(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    losses = {"SmoothL1Loss": "huber", "HuberLoss": "huber", "MSELoss": "mse"}
    if obj[0] not in losses:
        raise ConfigError(f"RLHive file '{where}': loss {obj[0]}; jaxrl reads {list(losses)}")
    out.config["agent"]["loss"] = losses[obj[0]]


def _replay(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    name, kwargs = obj
    agent = out.config["agent"]
    if name not in ("CircularReplayBuffer", "PrioritizedReplayBuffer"):
        raise ConfigError(
            f"RLHive file '{where}': replay buffer {name} has no jaxrl counterpart; give "
            "CircularReplayBuffer or PrioritizedReplayBuffer"
        )
    prioritized = name == "PrioritizedReplayBuffer"
    if "prioritized" in _fields(agent["name"]):
        agent["prioritized"] = prioritized
    elif prioritized:
        raise ConfigError(
            f"RLHive file '{where}': jaxrl's {agent['name']} samples uniformly; prioritized "
            "replay is rainbow's (--agent.prioritized)"
        )
    if "capacity" in kwargs:
        agent["buffer_size"] = int(kwargs.pop("capacity"))
    if "beta" in kwargs:  # RLHive's priority exponent
        agent["alpha"] = kwargs.pop("beta")
    if "n_step" in kwargs:
        agent["n_step"] = int(kwargs.pop("n_step"))
    kwargs.pop("gamma", None)  # the n-step discount: jaxrl's is the agent's gamma
    for key in ("stack_size", "observation_dtype"):
        kwargs.pop(key, None)
    _no_leftovers(kwargs, name, where)


def _fields(agent: str) -> set[str]:
    """The options of jaxrl's agent ``agent``."""
    from jaxrl import agents

    config = agents.entry(agent).config
    return {f.name for f in dataclasses.fields(config)} if config is not None else set()


def _target_period(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    out.config["agent"]["target_update_period"] = _periodic(
        obj, "target_net_update_schedule", where
    )


def _update_period(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    """One gradient step every ``period`` agent steps: jaxrl's rollout of that length."""
    out.config["run"]["rollout_len"] = _periodic(obj, "update_period_schedule", where)
    out.config["agent"]["updates_per_rollout"] = 1


def _epsilon(obj: tuple[str, dict[str, Any]], out: Translated, where: str) -> None:
    name, kwargs = obj
    agent = out.config["agent"]
    if name == "ConstantSchedule":
        agent.update(epsilon_start=kwargs["value"], epsilon_end=kwargs["value"])
    elif name == "LinearSchedule":
        agent.update(
            epsilon_start=kwargs["init_value"],
            epsilon_end=kwargs["end_value"],
            epsilon_decay_steps=int(kwargs["steps"]),
        )
    else:
        raise ConfigError(
            f"RLHive file '{where}': epsilon_schedule {name}; jaxrl reads ConstantSchedule "
            "and LinearSchedule (or --agent.epsilon_schedule)"
        )


NESTED: dict[str, Callable[[tuple[str, dict[str, Any]], Translated, str], None]] = {
    "representation_net": _network,
    "init_fn": _init,
    "optimizer_fn": _optimizer,
    "loss_fn": _loss,
    "replay_buffer": _replay,
    "target_net_update_schedule": _target_period,
    "update_period_schedule": _update_period,
    "epsilon_schedule": _epsilon,
}


def override(key: str) -> str:
    """An override's key with RLHive's spellings made jaxrl's: ``ag.X`` is ``agent.X``,
    and a nested key of ``OVERRIDES`` its option (``agent.replay_buffer.capacity`` ->
    ``agent.buffer_size``); other keys unchanged."""
    section, _, rest = key.partition(".")
    if section == "ag":
        section = "agent"
    if section == "agent" and rest in OVERRIDES:
        rest = OVERRIDES[rest]
    return f"{section}.{rest}" if rest else section
