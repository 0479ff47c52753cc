"""Config variants by inheritance: every option's range is declared once, beside the
field (``validation.option``), and a variant that only gives a field a new default keeps
its parent's range; messages name the option, its value and what is valid."""

from __future__ import annotations

import dataclasses

import pytest

from jaxrl.agents.off_policy.core import OffPolicyConfig
from jaxrl.agents.off_policy.sac import SACConfig
from jaxrl.agents.off_policy.td3 import DDPGConfig, TD3Config
from jaxrl.runners import RunConfig
from jaxrl.types import ConfigError
from jaxrl.validation import build_config, declared_range


def own_fields(cls: type) -> list[str]:
    """The fields ``cls`` declares in its own body (new ones and new defaults; not the
    options it fixes, ``validation.fixes``)."""
    fields = {f.name for f in dataclasses.fields(cls)}
    return [name for name in cls.__annotations__ if name in fields]


def test_variants_declare_only_what_they_change():
    for child, parent in (
        (SACConfig, OffPolicyConfig),
        (TD3Config, OffPolicyConfig),
        (DDPGConfig, TD3Config),
    ):
        inherited = {f.name: f.default for f in dataclasses.fields(parent)}
        for name in own_fields(child):
            if name in inherited:
                assert child.__dataclass_fields__[name].default != inherited[name], (
                    f"{child.__name__}.{name} repeats {parent.__name__}'s default"
                )
    assert set(own_fields(DDPGConfig)) <= {f.name for f in dataclasses.fields(TD3Config)}


def test_a_new_default_keeps_the_parents_range():
    assert "range" not in DDPGConfig.__dataclass_fields__["learning_starts"].metadata
    assert declared_range(DDPGConfig, "learning_starts") == declared_range(
        OffPolicyConfig, "learning_starts"
    )
    with pytest.raises(ValueError, match=r"learning_starts must be in \[0, inf\), got -1"):
        DDPGConfig(learning_starts=-1)
    with pytest.raises(ValueError, match=r"tau must be in \[0, 1\], got 2"):
        DDPGConfig(tau=2.0)


@pytest.mark.parametrize(
    "cls, overrides, message",
    [
        (RunConfig, {"steps": 0}, "run: steps must be in [1, 2147483647], got 0"),
        (RunConfig, {"eval_every": -1}, "run: eval_every must be in [0, inf), got -1"),
        (RunConfig, {"rollout_len": 0}, "run: rollout_len must be in [1, inf), got 0"),
        (SACConfig, {"alpha": 0.0}, "run: alpha must be in (0, inf), got 0.0"),
        (SACConfig, {"num_critics": 0}, "run: num_critics must be in [1, inf), got 0"),
        (TD3Config, {"policy_delay": 0}, "run: policy_delay must be in [1, inf), got 0"),
        (TD3Config, {"noise_clip": -0.5}, "run: noise_clip must be in [0, inf), got -0.5"),
        (TD3Config, {"hidden_sizes": []}, "run: hidden_sizes needs at least 1 entries, got ()"),
        (OffPolicyConfig, {"gamma": 1.5}, "run: gamma must be in [0, 1], got 1.5"),
        (OffPolicyConfig, {"noise_sigma": [0.1, -1]}, "run: noise_sigma must be in [0, inf)"),
        (OffPolicyConfig, {"max_grad_norm": 0}, "run: max_grad_norm must be in (0, inf), got 0.0"),
    ],
)
def test_out_of_range_is_one_line(cls, overrides, message):
    with pytest.raises(ConfigError) as e:
        build_config(cls, overrides, "run")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_defaults_and_none_are_valid():
    for cls in (RunConfig, OffPolicyConfig, SACConfig, TD3Config, DDPGConfig):
        cls()
    assert RunConfig(stop_return=None).stop_return is None
    assert OffPolicyConfig(max_grad_norm=None).max_grad_norm is None
    assert RunConfig(eval_every=0).eval_every == 0
