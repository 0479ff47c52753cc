"""Building frozen config dataclasses from user overrides, checking names and types.

Every user-facing config (an agent's ``Config``, the runner's ``RunConfig``) is a frozen
dataclass with annotated fields. ``build_config`` turns ``{name: value}`` overrides into an
instance, raising ``ConfigError`` with one line naming the bad key or value and what is
valid. Supported annotations: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]``,
``tuple[int, ...]`` / ``tuple[float, ...]``, ``X | None`` and a nested config dataclass
(given as a mapping, e.g. ``networks.spec.TorsoSpec``).
"""

from __future__ import annotations

import argparse
import dataclasses
import numbers
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, NoReturn, TypeVar

from jaxrl.types import ConfigError

C = TypeVar("C")


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def coerce(value: Any, tp: Any, where: str) -> Any:
    """Returns ``value`` converted to annotation ``tp`` or raises a one-line ConfigError."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        nested = [a for a in args if dataclasses.is_dataclass(a)]
        if nested and isinstance(value, Mapping | nested[0]):  # a nested config's errors
            return coerce(value, nested[0], where)
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, where)
            except ConfigError as e:
                errors.append(e)
        raise ConfigError(f"{where}: expected {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value in args:
            return value
        valid = ", ".join(repr(a) for a in args)
        raise ConfigError(f"{where}: {value!r} is not one of {valid}")
    if origin is tuple:
        if isinstance(value, str) and args[0] is str:  # one name: a list of one
            value = [value]
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}: expected a list of {_type_name(args[0])}, got {value!r}")
        return tuple(coerce(v, args[0], where) for v in value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):  # a nested config (a mapping)
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return build_config(tp, value, where)
    elif tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    else:
        raise TypeError(f"unsupported config annotation {tp!r} for {where}")
    raise ConfigError(f"{where}: expected {_type_name(tp)}, got {value!r} ({type(value).__name__})")


def check_int(what: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer (not a bool) ``>= minimum``, else a one-line
    ``ConfigError`` (a ``ValueError``) naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        bound = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ConfigError(f"{what} must be {bound}, got {value!r}")
    return int(value)


def fixes(**values: Any) -> Any:
    """A class decorator, applied under ``@dataclasses.dataclass``: the options of a base
    config that this config's agent does not take become class constants of the given
    values (``typing.ClassVar``), so the config, its ``--help`` and its ``config.yaml``
    no longer hold them while the code that reads them sees the fixed value. A given
    value equal to the fixed one is accepted (``config.yaml`` files saved before);
    ``build_config`` refuses any other in one line."""

    def fix(cls: type) -> type:
        annotations = cls.__dict__.get("__annotations__")
        if annotations is None:
            annotations = {}
            cls.__annotations__ = annotations
        for name, value in values.items():
            annotations[name] = typing.ClassVar[type(value)]
            setattr(cls, name, value)
        return cls

    return fix


def defaults(cls: type, prefix: str) -> dict[str, Any]:
    """The default value of each field of ``cls`` whose name starts with ``prefix``, for
    ``fixes`` (an agent that takes none of a feature's options fixes them all)."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.name.startswith(prefix)}


def fixed_options(cls: type) -> dict[str, tuple[Any, Any]]:
    """``{name: (value, type)}`` of the base options ``cls`` fixes (``fixes``)."""
    own = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, tuple[Any, Any]] = {}
    for base in cls.__mro__[1:]:
        if dataclasses.is_dataclass(base):
            types_ = field_types(base)
            for name in types_.keys() - own - out.keys():
                out[name] = (getattr(cls, name), types_[name])
    return out


def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotation of every dataclass field of ``cls``, in declaration order."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def build_config(cls: type[C], overrides: Mapping[str, Any], where: str) -> C:
    """Returns ``cls(**defaults | overrides)`` after checking every key and value.

    Args:
      cls: a dataclass whose fields all have defaults.
      overrides: user-given values by field name.
      where: how the user names this config in messages, e.g. ``"agent 'dqn'"``.
    """
    from jaxrl import aliases

    types_ = field_types(cls)
    values = {}
    for given, value in overrides.items():
        key = aliases.canonical(given, types_)
        if key != given and key in overrides:
            raise ConfigError(f"{where}: '{given}' and '{key}' name the same option; give one")
        explanation = aliases.refusal(given, types_)
        if explanation is not None:
            raise ConfigError(f"{where}: {explanation}")
        fixed = fixed_options(cls) if key not in types_ else {}
        if key in fixed:
            value_fixed, tp = fixed[key]
            if coerce(value, tp, f"{where} option '{key}'") == value_fixed:
                continue  # the value it is fixed at (a config.yaml saved before)
            raise ConfigError(
                f"{where} does not take option '{key}': it is fixed at {value_fixed!r}"
            )
        if key not in types_:
            from jaxrl.suggest import did_you_mean

            foreign = aliases.unmatched(key, types_)
            hint = f": {foreign}" if foreign else did_you_mean(key, types_)
            raise ConfigError(
                f"unknown option '{key}' for {where}{hint}; valid options: {', '.join(types_)}"
            )
        values[key] = coerce(value, types_[key], f"{where} option '{key}'")
    try:
        config = cls(**values)
    except ValueError as e:  # __post_init__ checks of value ranges
        foreign = next((aliases.FOREIGN_SIGN[k] for k in values if str(e).startswith(k + " ")
                        and k in aliases.FOREIGN_SIGN), None)  # fmt: skip
        raise ConfigError(f"{where}: {e}" + (f" ({foreign})" if foreign else "")) from None
    return config


def config_to_dict(config: Any) -> dict[str, Any]:
    """A YAML-safe dict of a config dataclass (tuples become lists)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):  # a nested config: the options it was given
            config_cls: type[Any] = type(value)
            default = config_cls()
            value = {
                k: v
                for k, v in config_to_dict(value).items()
                if getattr(default, k) != getattr(value, k)
            }
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


@dataclasses.dataclass(frozen=True)
class Range:
    """The valid values of one numeric option: bounds (None: unbounded), whether the bounds
    are open, and for tuples the least number of entries. NaN is never valid, and neither
    is an infinite value unless a bound allows it."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    min_len: int = 0

    def describe(self) -> str:
        def show(bound: float) -> str:
            return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"

        low = "-inf" if self.low is None else show(self.low)
        high = "inf" if self.high is None else show(self.high)
        return f"{'(' if self.low_open or self.low is None else '['}{low}, {high}" + (
            ")" if self.high_open or self.high is None else "]"
        )

    def contains(self, value: float) -> bool:
        if value != value or value in (float("inf"), float("-inf")):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return True


def option(
    default: Any,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_len: int = 0,
) -> Any:
    """A config field with its valid range declared beside it, e.g.
    ``lr: float = option(2.5e-4, gt=0)`` or ``gamma: float = option(0.99, ge=0, le=1)``.

    ``Options.__post_init__`` checks it (for tuples, every entry, and ``min_len``); None
    is valid wherever the annotation allows it.
    """
    low = gt if gt is not None else ge
    high = lt if lt is not None else le
    spec = Range(low, high, gt is not None, lt is not None, min_len)
    return dataclasses.field(default=default, metadata={"range": spec})


def declared_range(cls: type, name: str) -> Range | None:
    """The range ``option`` declared for field ``name`` of ``cls``, or of the nearest base
    class that declares one: a variant that only gives a field a new default
    (``learning_starts: int = 25_000``) keeps its parent's range."""
    for klass in cls.__mro__:
        f = getattr(klass, "__dataclass_fields__", {}).get(name)
        if f is not None and "range" in f.metadata:
            return f.metadata["range"]
    return None


def check_ranges(config: Any) -> None:
    """Raises ``ValueError`` (one line naming the field, its value and its valid range) for
    the first field of ``config`` outside the range ``option`` declared for it."""
    for f in dataclasses.fields(config):
        spec = declared_range(type(config), f.name)
        value = getattr(config, f.name)
        if spec is None or value is None or isinstance(value, bool | str):
            continue
        values = value if isinstance(value, tuple) else (value,)
        if len(values) < spec.min_len:
            raise ValueError(f"{f.name} needs at least {spec.min_len} entries, got {value!r}")
        if not all(spec.contains(float(v)) for v in values):
            raise ValueError(f"{f.name} must be in {spec.describe()}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class Options:
    """Base of every config dataclass: ``__post_init__`` checks the ranges declared with
    ``option``. A variant subclasses its parent and declares only the fields it changes
    (a new default, a narrower range); a subclass that defines ``__post_init__`` for
    checks across fields calls ``super().__post_init__()`` first."""

    def __post_init__(self) -> None:
        check_ranges(self)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose mistakes are one-line ``ConfigError``s (one line and exit
    code 2 from the entry points), not argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(message)


def check_schedule(config: Any, end: str, steps: str, unit: str) -> None:
    """ValueError unless a schedule's two options ``end`` (its final value) and ``steps``
    (its length in ``unit``) of ``config`` are both given or both None."""
    if (getattr(config, end) is None) != (getattr(config, steps) is None):
        raise ValueError(f"a schedule needs both {end} and {steps} ({unit}); give both or neither")


def check_names(
    given: Iterable[str], valid: Iterable[str], message: Callable[[str, str], str]
) -> None:
    """``ConfigError(message(name, listing))`` for the first of ``given`` not in ``valid``;
    ``listing`` names ``valid`` in order, comma-separated (``"none"`` when it is empty)."""
    valid = list(valid)
    for name in given:
        if name not in valid:
            raise ConfigError(message(name, ", ".join(valid) or "none"))


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, or its type's name when it has none."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
