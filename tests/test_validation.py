import dataclasses
from typing import Literal

import pytest

from jaxrl.types import ConfigError
from jaxrl.validation import build_config, coerce, config_to_dict


@dataclasses.dataclass(frozen=True)
class Example:
    lr: float = 1e-3
    n: int = 1
    flag: bool = False
    name: str = "x"
    loss: Literal["huber", "mse"] = "huber"
    sizes: tuple[int, ...] = (64, 64)
    clip: float | None = None

    def __post_init__(self):
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")


def test_defaults_and_overrides():
    cfg = build_config(Example, {"lr": 3, "n": 4.0, "sizes": [8], "clip": 1}, "example")
    assert cfg == Example(lr=3.0, n=4, sizes=(8,), clip=1.0)
    assert isinstance(cfg.lr, float) and isinstance(cfg.n, int)
    assert config_to_dict(cfg)["sizes"] == [8]


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"lrr": 1.0}, "unknown option 'lrr'"),
        ({"lr": "fast"}, "option 'lr': expected float"),
        ({"n": 1.5}, "option 'n': expected int"),
        ({"flag": 1}, "option 'flag': expected bool"),
        ({"loss": "l1"}, "'l1' is not one of 'huber', 'mse'"),
        ({"sizes": 3}, "expected a list of int"),
        ({"n": 0}, "n must be >= 1"),
        ({"lr": True}, "expected float"),
    ],
)
def test_user_mistakes_are_one_line(overrides, fragment):
    with pytest.raises(ConfigError) as e:
        build_config(Example, overrides, "example")
    message = str(e.value)
    assert fragment in message and "\n" not in message
    if "unknown option" in fragment:
        assert "valid options: lr, n, flag, name, loss, sizes, clip" in message


def test_optional_accepts_none():
    assert coerce(None, float | None, "x") is None
    with pytest.raises(ConfigError):
        coerce(None, float, "x")


def test_option_ranges_are_checked_and_inherited():
    import dataclasses
    import math

    from jaxrl.validation import Options, option

    @dataclasses.dataclass(frozen=True)
    class Base(Options):
        lr: float = option(1e-3, gt=0)
        gamma: float = option(0.99, ge=0, le=1)
        sizes: tuple[int, ...] = option((8,), ge=1, min_len=1)
        clip: float | None = option(None, gt=0)

    @dataclasses.dataclass(frozen=True)
    class Variant(Base):  # declares only what it changes
        lr: float = option(5e-3, gt=0)

    assert dataclasses.asdict(Variant()) == dataclasses.asdict(Base(lr=5e-3))
    assert Variant(gamma=1.0).gamma == 1.0
    bad = [
        (dict(lr=0.0), "lr must be in (0, inf), got 0.0"),
        (dict(lr=-1.0), "lr must be in (0, inf)"),
        (dict(lr=math.inf), "lr must be in (0, inf), got inf"),
        (dict(gamma=math.nan), "gamma must be in [0, 1], got nan"),
        (dict(gamma=1.5), "gamma must be in [0, 1], got 1.5"),
        (dict(sizes=()), "sizes needs at least 1 entries"),
        (dict(sizes=(8, 0)), "sizes must be in [1, inf), got (8, 0)"),
        (dict(clip=0.0), "clip must be in (0, inf)"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError) as e:
            Variant(**kwargs)
        assert str(e.value).startswith(message), (kwargs, str(e.value))
    with pytest.raises(ConfigError, match="agent 'x': gamma must be in"):
        build_config(Variant, {"gamma": 2}, "agent 'x'")


def test_a_fixed_option_leaves_the_config_and_keeps_its_value():
    """``fixes``: the base's option is no field of the subclass (no ``--help`` line, no
    ``config.yaml`` key), reads as the fixed value, is accepted at that value (a saved
    ``config.yaml``) and refused in one line at any other."""
    import dataclasses

    from jaxrl.validation import fixed_options, fixes

    @dataclasses.dataclass(frozen=True)
    @fixes(n=1, loss="huber")
    class Narrow(Example):
        extra: int = 0

    assert [f.name for f in dataclasses.fields(Narrow)] == [
        f.name for f in dataclasses.fields(Example) if f.name not in ("n", "loss")
    ] + ["extra"]
    cfg = build_config(Narrow, {"n": 1, "loss": "huber", "extra": 2}, "agent 'narrow'")
    assert (cfg.n, cfg.loss, cfg.extra) == (1, "huber", 2)
    assert fixed_options(Narrow)["n"][0] == 1
    with pytest.raises(ConfigError) as e:
        build_config(Narrow, {"n": 2}, "agent 'narrow'")
    assert str(e.value) == "agent 'narrow' does not take option 'n': it is fixed at 1"


def test_check_names_names_the_first_unknown_and_lists_the_valid_ones():
    from jaxrl.validation import check_names

    message = lambda name, listing: f"{name}|{listing}"
    check_names(["b", "a"], ["a", "b", "c"], message)  # all known: nothing raised
    with pytest.raises(ConfigError, match=r"^x\|a, b$"):
        check_names(["a", "x", "y"], iter(["a", "b"]), message)
    with pytest.raises(ConfigError, match=r"^x\|none$"):
        check_names({"x": 1}, [], message)
