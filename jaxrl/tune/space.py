"""Search spaces: which options a study varies, over which values, read from YAML.

A space file maps dotted option names (as ``--agent.lr`` overrides them) to a
distribution::

    agent.lr: {low: 1.0e-5, high: 2.0e-3, log: true}        # float, log-uniform
    agent.gamma: {low: 1.0e-4, high: 0.03, log: true, one_minus: true}  # 1 - x
    agent.update_epochs: {choices: [1, 5, 10, 20]}          # categorical
    agent.hidden_sizes: {choices: [[64], [64, 64]]}         # lists too
    agent.n_step: {low: 1, high: 10, int: true}             # integer
    agent.epsilon_decay_steps: {low: 0.0, high: 0.5, of_steps: true}   # x * run.steps
    agent.num_minibatches: {choices: [64, 128], quotient_of: [run.rollout_len, env.num_envs]}
    agent.actor_lr: {low: 1.0e-5, high: 1.0e-2, log: true, also: [agent.critic_lr]}

``quotient_of`` makes the option ``max(product of those options // x, 1)`` (RL Zoo's
minibatch size turned into jaxrl's minibatch count), ``also`` sets more options to the
same value. Optuna records the sampled ``x`` under the first name; the trial's user
attribute ``overrides`` holds the option values it trained with.

The built-in spaces (``--space builtin``, ``jaxrl/tune/spaces/AGENT.yaml``) are RL
Baselines3 Zoo's (``rl_zoo3/hyperparams_opt.py``, ``sample_dqn_params`` and the others),
mapped to jaxrl's option names; ``--space builtin-continuous`` keeps only the options a
vmapped program can vary per member (``experiment.sweep``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from jaxrl.types import ConfigError

SPACE_DIR = Path(__file__).resolve().parent / "spaces"
BUILTIN, CONTINUOUS = "builtin", "builtin-continuous"
KEYS: tuple[str, ...] = ("low", "high", "log", "step", "int", "choices", "one_minus")
KEYS += ("of_steps", "quotient_of", "also")
SECTIONS = ("agent", "env", "run")


class Param(NamedTuple):
    """One searched option: ``name`` (``agent.lr``) and its distribution (module docstring)."""

    name: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    integer: bool = False
    choices: tuple[Any, ...] = ()
    one_minus: bool = False
    of_steps: bool = False
    quotient_of: tuple[str, ...] = ()
    also: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Every option this parameter sets."""
        return (self.name, *self.also)


def builtin_names() -> list[str]:
    """Agents with a built-in space."""
    return sorted(p.stem for p in SPACE_DIR.glob("*.yaml"))


def load(spec: str, agent: str) -> list[Param]:
    """The space ``--space spec`` names for ``agent``: a YAML file, ``builtin`` or
    ``builtin-continuous`` (filtered later, ``continuous_only``); ConfigError (one line)
    for a file that is missing or not a valid space."""
    if spec in (BUILTIN, CONTINUOUS):
        path = SPACE_DIR / f"{agent}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"--space {spec}: no built-in space for agent '{agent}'; built-in: "
                f"{', '.join(builtin_names())}; or give a space file"
            )
    else:
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(f"--space '{spec}': no such file (or give --space {BUILTIN})")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigError(f"--space '{spec}' is not valid YAML: {first}") from None
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(
            f"--space '{spec}' must map option names to distributions, e.g. "
            "'agent.lr: {low: 1.0e-5, high: 1.0e-3, log: true}'"
        )
    return [parse(f"--space '{spec}'", str(name), value) for name, value in data.items()]


def _names(where: str, name: str, value: Any, key: str) -> tuple[str, ...]:
    """``also``/``quotient_of``: a list of dotted option names."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(n, str) and n.partition(".")[0] in SECTIONS for n in items):
        raise ConfigError(f"{where}: {name}.{key} must list options like run.rollout_len")
    return tuple(items)


def parse(where: str, name: str, value: Any) -> Param:
    """One entry of a space file; ConfigError naming what is wrong."""
    section, dot, key = name.partition(".")
    if section not in SECTIONS or not dot or not key:
        raise ConfigError(f"{where}: '{name}' must be an option like agent.lr, env.X or run.X")
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {name} must be a mapping such as {{low: 0.1, high: 1.0}}")
    unknown = [k for k in value if k not in KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: {name} has unknown key '{unknown[0]}'; valid: {', '.join(KEYS)}"
        )
    choices = value.get("choices")
    if choices is not None:
        if not isinstance(choices, list) or not choices or "low" in value or "high" in value:
            raise ConfigError(f"{where}: {name}.choices must be a non-empty list (no low/high)")
    else:
        low, high = value.get("low"), value.get("high")
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
        if not numbers or not low <= high:  # type: ignore[operator]
            raise ConfigError(f"{where}: {name} needs numbers low <= high, or choices")
        if value.get("log") and low <= 0:  # type: ignore[operator]
            raise ConfigError(f"{where}: {name} is log-uniform: low must be > 0")
    return Param(
        name,
        low=value.get("low"),
        high=value.get("high"),
        log=bool(value.get("log", False)),
        step=value.get("step"),
        integer=bool(value.get("int", False)),
        choices=tuple(choices or ()),
        one_minus=bool(value.get("one_minus", False)),
        of_steps=bool(value.get("of_steps", False)),
        quotient_of=_names(where, name, value["quotient_of"], "quotient_of")
        if "quotient_of" in value
        else (),
        also=_names(where, name, value["also"], "also") if "also" in value else (),
    )


def _label(choice: Any) -> Any:
    """A choice as Optuna stores it (None, bool, int, float or str; a list as its YAML)."""
    if choice is None or isinstance(choice, bool | int | float | str):
        return choice
    return yaml.safe_dump(choice, default_flow_style=True).strip()


def sample(trial: Any, param: Param) -> Any:
    """The raw value Optuna's ``trial`` suggests for ``param`` (before ``value``)."""
    if param.choices:
        labels = [_label(c) for c in param.choices]
        picked = trial.suggest_categorical(param.name, labels)
        return param.choices[labels.index(picked)]
    low, high = float(param.low or 0), float(param.high or 0)  # set unless choices are
    if param.integer:
        step = int(param.step or 1)
        return trial.suggest_int(param.name, int(low), int(high), step=step, log=param.log)
    return trial.suggest_float(param.name, low, high, step=param.step, log=param.log)


def value(param: Param, raw: Any, base: Mapping[str, Any]) -> Any:
    """The option's value for a sampled ``raw`` one; ``base`` holds the other options'
    values (``{"run.steps": 50000, ...}``) that ``of_steps`` and ``quotient_of`` read."""
    if param.one_minus:
        return 1.0 - raw
    if param.of_steps:
        return max(1, round(raw * base["run.steps"]))
    if param.quotient_of:
        total = math.prod(int(base[n]) for n in param.quotient_of)
        return max(total // int(raw), 1)
    return raw


def extremes(param: Param) -> list[Any]:
    """The raw values that bound ``param``'s options (each choice, or low and high)."""
    return list(param.choices) if param.choices else [param.low, param.high]
