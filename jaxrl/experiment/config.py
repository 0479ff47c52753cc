"""Experiment configs: YAML presets, config files and dotted overrides, resolved once into
one typed ``Experiment`` (the agent's validated options, the env, the ``RunConfig``).

An experiment is written as ``config.yaml`` in the run directory (``Experiment.to_dict``)::

    preset: cartpole-dqn          # where the values came from (informational)
    agent: {name: dqn, lr: 0.001, ...every option of the agent...}
    env:   {name: CartPole-v1, num_envs: 8, ...env keyword arguments...}
    run:   {steps: 50000, seed: 0, rollout_len: 1, ...every RunConfig field...}

Resolution order, later wins: the agent and env defaults; the preset for the agent/env
pair (``jaxrl/presets/*.yaml``, chosen automatically when no ``--config`` is given) or
the ``--config`` file (which may itself name a ``preset:`` to start from; a preset's env
section may give a ``family`` instead of a ``name``, as ``atari-rainbow`` does with
``family: atari``, to apply to every env of that family, or ``family: "*"`` to apply to
every env that has no preset of its own, as ``ppo.yaml`` does); the plain CLI
flags (``--steps``, ``--seed``, ``--num-envs``); dotted overrides (``--agent.lr 3e-4``).
The saved file holds every resolved value, so it alone reproduces the run; ``resolve``
reads it back (``resolve(config_file=...)``) into the same ``Experiment``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from jaxrl import agents, aliases, envs
from jaxrl.agents import AgentConfig
from jaxrl.experiment import rlhive
from jaxrl.runners import RunConfig
from jaxrl.runners.base import SELF_PLAY_OPTIONS, ChunkLayout
from jaxrl.suggest import close
from jaxrl.types import ConfigError
from jaxrl.validation import build_config, config_to_dict, fixed_options

PRESET_DIR = Path(__file__).resolve().parents[1] / "presets"
SECTIONS = ("agent", "env", "run")
# Independent agents of a game, one per player (RLHive's ``agents:``): a list of agent
# sections; ``agent`` is then the first of them (runners/games/independent.py).
AGENTS = "agents"


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """An environment by name, the number of envs stepped together and the keyword
    arguments of ``envs.make`` (``options``: ``backend``, ``frame_skip``, ...).

    Attributes:
      name: the environment's registered name or alias (``--env``).
      num_envs: envs stepped together as one batch (``--num-envs``).
      options: the env's own keyword arguments (``--env.KEY VALUE``), and the pixel ones.
    """

    name: str
    num_envs: int = 1
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def make(self, num_envs: int | None = None) -> Any:
        """``envs.make(name, num_envs, **options)``; ``num_envs`` defaults to this config's."""
        count = self.num_envs if num_envs is None else num_envs
        return envs.make(self.name, num_envs=count, **self.options)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **copy.deepcopy(dict(self.options)), "num_envs": self.num_envs}


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One resolved, validated experiment: what ``config.yaml`` holds, typed.

    Attributes:
      agent: the agent (for independent agents: player 0's, ``agents[0]``).
      env: the environment.
      run: the training loop's options.
      preset: the preset the values started from (informational), None for none.
      agents: independent agents, one per player of a game (``--agents``), else empty.
    """

    agent: AgentConfig
    env: EnvConfig
    run: RunConfig
    preset: str | None = None
    agents: tuple[AgentConfig, ...] = ()

    @property
    def trained(self) -> tuple[AgentConfig, ...]:
        """The agents trained: one per player for independent agents, else the one."""
        return self.agents or (self.agent,)

    def to_dict(self) -> dict[str, Any]:
        """The YAML-safe form saved as ``config.yaml`` (``resolve`` reads it back)."""
        out: dict[str, Any] = {
            "preset": self.preset,
            "agent": self.agent.to_dict(),
            "env": self.env.to_dict(),
            "run": config_to_dict(self.run),
        }
        if self.agents:
            out[AGENTS] = [a.to_dict() for a in self.agents]
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def with_run(self, **changes: Any) -> Experiment:
        """This experiment with ``RunConfig`` fields changed (``steps`` of a resume)."""
        return dataclasses.replace(self, run=dataclasses.replace(self.run, **changes))

    def with_steps(self, steps: int) -> tuple[Experiment, list[str]]:
        """This experiment run to ``steps`` (a resume's ``--steps``), validated, and a
        note for each schedule over the run's length extended with it: an agent's
        ``total_steps`` that ended where the run ended (the rounded or the given steps)
        is set to the new run's rounded length."""
        run = build_config(RunConfig, {**config_to_dict(self.run), "steps": steps}, "run")
        ends = {self.run.steps, rounded_steps(self.run, self.env.num_envs)}
        new_end = rounded_steps(run, self.env.num_envs)
        notes, trained = [], []
        for agent in self.trained:
            end = agent.option("total_steps", None)
            if end in ends and end != new_end:
                agent = agents.configure(agent.name, {**agent.kwargs(), "total_steps": new_end})
                notes.append(
                    f"agent '{agent.name}' total_steps {end:,} -> {new_end:,}: schedules "
                    "over the run's length (anneal_lr) now end at the new last step"
                )
            trained.append(agent)
        players = tuple(trained) if self.agents else ()
        return dataclasses.replace(self, run=run, agent=trained[0], agents=players), notes


def rounded_steps(run: RunConfig, num_envs: int) -> int:
    """The env steps a run of ``run`` does: ``run.steps`` rounded up to whole chunks
    (``runners.base.ChunkLayout``)."""
    return ChunkLayout.of(run, num_envs).total_steps


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Reads a YAML mapping with ``yaml.safe_load``; ConfigError if missing or malformed.
    An RLHive experiment file is read as the jaxrl config it means
    (``experiment.rlhive``)."""
    data = _read_mapping(path)
    if rlhive.is_rlhive(data):
        data = rlhive.translate(data, str(path)).config
    return _checked_sections(data, Path(path))


def rlhive_file(path: str | Path) -> rlhive.Translated | None:
    """The translation of the RLHive experiment file at ``path`` (its command-line choices
    and notes), or None for any other file."""
    data = _read_mapping(path)
    return rlhive.translate(data, str(path)) if rlhive.is_rlhive(data) else None


def _read_mapping(path: str | Path) -> dict[str, Any]:
    """The YAML mapping at ``path`` (``yaml.safe_load``); ConfigError if missing or
    malformed."""
    if str(path) == "":
        raise ConfigError("--config is empty; give a YAML file (a run's config.yaml, a preset)")
    path = Path(path)
    if path.is_dir():
        hint = f" (e.g. '{path / 'config.yaml'}')" if (path / "config.yaml").is_file() else ""
        raise ConfigError(f"config file '{path}' is a directory; give a YAML file{hint}")
    if not path.is_file():
        raise ConfigError(f"config file '{path}' does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.constructor.ConstructorError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(
            f"config file '{path}' has a YAML tag{where} that safe loading refuses "
            f"({(e.problem or '').split(' ')[-1]}); configs hold plain values only"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config file '{path}' is not valid YAML{where}") from None
    if data is None:
        raise ConfigError(
            f"config file '{path}' is empty; give agent/env/run sections, or leave out "
            "--config to use the preset"
        )
    if not isinstance(data, dict):
        raise ConfigError(f"config file '{path}' must hold a mapping with keys {SECTIONS}")
    return data


def _checked_sections(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data`` if its keys and sections are a config's; ConfigError (one line) if not."""
    unknown = set(data) - {*SECTIONS, "preset", AGENTS}
    if unknown:
        raise ConfigError(
            f"config file '{path}' has unknown key(s) {sorted(unknown)}; valid: "
            f"preset, {', '.join(SECTIONS)}, {AGENTS}"
        )
    listed = data.get(AGENTS, [])
    if not isinstance(listed, list) or not all(
        isinstance(a, dict) and a.get("name") for a in listed
    ):
        raise ConfigError(
            f"config file '{path}': '{AGENTS}' must be a list of mappings with a name"
        )
    for section in SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise ConfigError(f"config file '{path}': '{section}' must be a mapping")
    return data


def presets() -> dict[str, Path]:
    """Preset name (file stem) -> path, for every YAML file in ``jaxrl/presets``."""
    return {p.stem: p for p in sorted(PRESET_DIR.glob("*.yaml"))}


def load_preset(name: str) -> dict[str, Any]:
    path = presets().get(name)
    if path is None:
        raise ConfigError(f"unknown preset '{name}'; available: {', '.join(presets())}")
    return copy.deepcopy(_read_preset(path))


def _read_preset(path: Path) -> dict[str, Any]:
    """The preset file at ``path``, parsed once per version of the file (its modification
    time and size), not copied: callers that change it copy it first. ``find_preset``
    reads every preset on each call, and PyYAML's parser is pure Python."""
    stat = path.stat()
    return _parse_preset(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parse_preset(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    return load_yaml(path)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The YAML file at ``path`` with the preset it names (``preset: cartpole-dqn``), if any,
    merged under it (the file wins, section by section)."""
    data = load_yaml(path)
    if data.get("preset"):
        data = merge(load_preset(data["preset"]), data)
    return data


ANY_FAMILY = "*"


def find_preset(agent: str, env: str) -> str | None:
    """The preset for agent ``agent`` on env ``env`` (canonical), if there is one: one whose
    env section names ``env``, else one whose env section names ``env``'s family
    (``env: {family: atari}`` matches every registered Atari game), else the agent's
    preset for every env (``family: "*"``, e.g. the rollout shape PPO needs)."""
    by_family = by_any = None
    for name, path in presets().items():
        data = _read_preset(path)
        if data.get("agent", {}).get("name") != agent:
            continue
        preset_env = data.get("env", {})
        if preset_env.get("name") is not None:
            if envs.canonical_name(preset_env["name"]) == env:
                return name
        elif preset_env.get("family") == ANY_FAMILY:
            by_any = by_any or name
        elif by_family is None and preset_env.get("family") is not None:
            if preset_env["family"] == envs.family(env):
                by_family = name
    return by_family or by_any


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with the sections of ``top`` merged in key by key (top wins)."""
    out = copy.deepcopy(dict(base))
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> Any:
    """A CLI value: YAML scalars and lists (``true``, ``null``, ``[64, 64]``), and numbers
    in any float notation (``3e-4``, which YAML 1.1 would read as a string)."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def resolve(
    *,
    agent: str | None = None,
    env: str | None = None,
    config_file: str | None = None,
    steps: int | None = None,
    seed: int | None = None,
    num_envs: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    agent_list: list[str] | None = None,
    preset: str | None = None,
) -> Experiment:
    """Returns the effective, fully validated experiment (see module docstring).

    ``overrides`` maps dotted keys (``"agent.lr"``, ``"env.num_envs"``, ``"run.eval_every"``)
    to values. Raises ``ConfigError`` for any user mistake.
    """
    base: dict[str, Any] = {}
    if preset is not None:  # --preset NAME: that preset, as if found for the pair
        load_preset(preset)  # an unknown name: one line
        base = {**load_config_file(presets()[preset]), "preset": preset}
    if config_file is not None:
        base = load_config_file(config_file)
        if isinstance(base.get("agent"), dict):  # epsilon_decay alone, as on the CLI
            base["agent"] = aliases.with_implied_schedule(base["agent"], "")
    first = agent_list[0] if agent_list else None  # independent agents: player 0's
    agent_name = agent or first or base.get("agent", {}).get("name") or "dqn"
    env_name = envs.canonical_name(env or base.get("env", {}).get("name") or "CartPole-v1")
    if config_file is None and preset is None:
        found = find_preset(agent_name, env_name)
        if found is not None:
            base = {**load_preset(found), "preset": found}
    file_agent = base.get("agent", {}).get("name")
    if (config_file or preset) is not None and file_agent not in (None, agent_name):
        raise ConfigError(
            f"{f'config file {config_file!r}' if config_file else f'preset {preset!r}'} is "
            f"for agent '{file_agent}', not '{agent_name}'; "
            f"give --agent {file_agent}, or leave out --config (a preset is used if one exists)"
        )
    # A different env on the command line discards the file's options for its env.
    base_env = base.get("env", {}).get("name")
    if base_env is not None and envs.canonical_name(base_env) != env_name:
        base["env"] = {}
    base_family = base.get("env", {}).get("family")
    if base_family not in (None, ANY_FAMILY) and base_family != envs.family(env_name):
        base["env"] = {}  # e.g. an Atari preset's env options given a non-Atari env
    base.get("env", {}).pop("family", None)
    cfg = merge({"agent": {}, "env": {}, "run": {}}, base)
    cfg["agent"]["name"], cfg["env"]["name"] = agent_name, env_name
    overrides = aliases.with_implied_schedule(overrides, "agent.")
    _apply_flags(cfg, steps, seed, num_envs, agent_list, config_file, overrides, agent_name)
    agent_options = {k: v for k, v in cfg["agent"].items() if k != "name"}
    run = build_config(RunConfig, cfg["run"], "run")
    env_options = {k: v for k, v in cfg["env"].items() if k not in ("name", "num_envs")}
    env_config = EnvConfig(env_name, cfg["env"].get("num_envs", 1), env_options)
    run_length = rounded_steps(run, env_config.num_envs)
    agent_config = _configure_agent(agent_name, agent_options, run, run_length)
    listed = _agent_sections(base.get(AGENTS), agent_list, env_name)
    agent_overrides = {
        k.partition(".")[2]: v for k, v in (overrides or {}).items() if k.startswith("agent.")
    }
    for key in agent_overrides:  # --agent.KEY: every agent, under any name it accepts
        listed = [_without_aliases_of(key, a, a["name"]) for a in listed]
    listed = [{**a, **agent_overrides} for a in listed]
    players = tuple(
        _configure_agent(a["name"], {k: v for k, v in a.items() if k != "name"}, run, run_length)
        for a in listed
    )
    return Experiment(
        agent=players[0] if players else agent_config,
        env=env_config,
        run=run,
        preset=cfg.get("preset"),
        agents=players,
    )


def _agent_sections(
    from_file: list[dict[str, Any]] | None, names: list[str] | None, env: str
) -> list[dict[str, Any]]:
    """The unresolved sections of independent agents: ``--agents`` names (each with its
    preset for ``env`` where there is one), else the config file's ``agents:`` list."""
    if names is None:
        return [dict(a) for a in from_file or []]
    sections = []
    for name in names:
        agents.entry(name)  # ConfigError for an unknown name
        preset = find_preset(name, env)
        sections.append({**(load_preset(preset)["agent"] if preset else {}), "name": name})
    return sections


def _apply_flags(
    cfg: dict[str, Any],
    steps: int | None,
    seed: int | None,
    num_envs: int | None,
    agent_list: list[str] | None,
    config_file: str | None,
    overrides: Mapping[str, Any] | None,
    agent_name: str,
) -> None:
    """Sets the plain flags and the dotted overrides in ``cfg`` (in place)."""
    for key, value in (("steps", steps), ("seed", seed)):
        if value is not None:
            cfg["run"][key] = value
    if num_envs is not None:
        cfg["env"]["num_envs"] = num_envs
    if agent_list is not None and config_file is None:  # a self-play preset's opponents
        for option in SELF_PLAY_OPTIONS:
            cfg["run"].pop(option, None)
    named: dict[str, str] = {}  # an agent option -> the name a --agent.KEY gave it
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise ConfigError(f"override '--{dotted}' must be --agent.KEY, --env.KEY or --run.KEY")
        if key == "name":
            raise ConfigError(f"use --{section} NAME instead of '--{dotted}'")
        if section == "agent":
            target = _option_named(key, agent_name)
            if named.setdefault(target, key) != key:
                raise ConfigError(
                    f"'--agent.{named[target]}' and '--agent.{key}' name the same option of "
                    f"agent '{agent_name}'; give one"
                )
            cfg["agent"] = _without_aliases_of(key, cfg["agent"], agent_name)
        if "." in key:  # --agent.torso.channels: a field of a mapping-valued option
            option, mapping = _nested(cfg[section], key, value, section, agent_name)
            cfg[section][option] = mapping
        else:
            cfg[section][key] = value


def _nested(
    options: Mapping[str, Any], key: str, value: Any, section: str, agent: str
) -> tuple[str, dict[str, Any]]:
    """``(option, mapping)`` for the nested override ``--SECTION.OPTION.FIELD VALUE``: the
    option's mapping (as given, its default, or a built-in torso's spec by name) with
    ``FIELD`` set; ConfigError (one line) where the option holds no mapping."""
    from jaxrl.networks.spec import PRESETS

    option, _, field = key.partition(".")
    current: Any = options.get(option)
    if current is None and section == "agent":
        config = agents.entry(agent).config
        defaults = {f.name: f.default for f in dataclasses.fields(config)} if config else {}
        current = defaults.get(option)
    if option == "torso" and isinstance(current, str) and current in PRESETS:
        current = config_to_dict(PRESETS[current])
    if not isinstance(current, Mapping) or "." in field:
        raise ConfigError(
            f"nested override '--{section}.{key}' does not exist: '{option}' of "
            f"{section} '{agent if section == 'agent' else options.get('name', '')}' holds "
            f"{current!r}, not a mapping of fields"
        )
    return option, {**current, field: value}


def _option_named(key: str, agent: str) -> str:
    """The option of ``agent`` that ``key`` names (itself when it is one or no alias)."""
    config = agents.entry(agent).config
    fields = set() if config is None else {f.name for f in dataclasses.fields(config)}
    return aliases.canonical(key, fields)


def _without_aliases_of(key: str, section: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """``section`` without the options that name the same option of ``agent`` as ``key``
    under another accepted name (``--agent.discount_rate`` over a preset's ``gamma``): a
    value given on the command line wins under whichever name it uses."""
    if agents.entry(agent).config is None:
        return dict(section)
    target = _option_named(key, agent)
    return {k: v for k, v in section.items() if k == key or _option_named(k, agent) != target}


def _configure_agent(
    name: str, options: Mapping[str, Any], run: RunConfig, run_length: int
) -> AgentConfig:
    """Every option of one agent, validated; an option ``total_steps`` (learning-rate
    annealing) left at None gets the run's length ``run_length``: the steps it will do,
    ``run.steps`` rounded up to whole chunks."""
    _check_foreign_options(name, options)
    config_cls = agents.entry(name).config
    if config_cls is not None:  # SB3's exploration_fraction: a fraction of the run's steps
        fields = {f.name for f in dataclasses.fields(config_cls)}
        options = aliases.with_steps_converted(dict(options), fields, run.steps, f"agent '{name}'")
    config = agents.configure(name, options)
    if config.option("total_steps", 0) is None:
        total = {"total_steps": run_length}
        config = agents.configure(name, {**config.kwargs(), **total})
    return config


def _check_foreign_options(agent: str, options: Mapping[str, Any]) -> None:
    """ConfigError for an option agent ``agent`` lacks that other agents have: the config
    was written for another agent (a typo gets ``build_config``'s "did you mean")."""
    config = agents.entry(agent).config
    if config is None:
        return
    own = {f.name for f in dataclasses.fields(config)} | fixed_options(config).keys()
    for key in options:
        if key in own or aliases.rule(key, own) is not None:  # own, fixed or foreign
            continue
        owners = [
            name
            for name in agents.available()
            if (other := agents.entry(name).config) is not None
            and key in {f.name for f in dataclasses.fields(other)}
        ]
        if owners:  # another agent's exact option: the config is likely that agent's
            near = close(key, own)
            hint = f" (or a misspelling of '{near[0]}'?)" if near else ""
            raise ConfigError(
                f"unknown option '{key}' for agent '{agent}': it is an option of "
                f"{', '.join(owners)}; was this config written for another agent?{hint}"
            )


def dump(config: Experiment) -> str:
    """The YAML text of ``config.yaml``."""
    return config.to_yaml()
