"""The agent registry: ``make(name, spec, **overrides)``, ``available()``, ``register``.

A factory is ``factory(spec: EnvSpec, **overrides) -> Agent``. Registering it with its
``config`` dataclass lets the CLI validate overrides and save the full effective config.
A name of the form ``"package.module:attr"`` imports ``package.module`` and uses ``attr``
as the factory (or the entry the module registered under that name), so a user's own
agent works with the CLI, the runner and presets, as RLHive's registry allows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxrl import trust
from jaxrl.types import Agent, ConfigError, EnvSpec
from jaxrl.validation import build_config, config_to_dict


class AgentEntry(NamedTuple):
    factory: Callable[..., Agent]
    config: type | None
    description: str


_REGISTRY: dict[str, AgentEntry] = {}


def register(
    name: str,
    factory: Callable[..., Agent],
    *,
    config: type | None = None,
    description: str = "",
) -> None:
    """Registers ``factory(spec, **overrides) -> Agent`` under ``name``.

    ``config``: the agent's frozen ``Config`` dataclass, if it has one; ``description``:
    one line shown by ``python -m jaxrl.train --help``.
    """
    _REGISTRY[name] = AgentEntry(factory, config, description)


def available() -> dict[str, str]:
    """Registered agent names mapped to their one-line descriptions."""
    return {name: entry.description for name, entry in sorted(_REGISTRY.items())}


def entry(name: str) -> AgentEntry:
    """The registry entry of ``name``, importing ``package.module:attr`` names on demand."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = trust.import_module(module_name, f"agent '{name}'")
        except ImportError as e:
            raise ConfigError(f"cannot import agent module '{module_name}': {e}") from None
        if name in _REGISTRY:  # the module registered itself under this name
            return _REGISTRY[name]
        factory = getattr(module, attr, None)
        if not callable(factory):
            raise ConfigError(f"module '{module_name}' has no agent factory '{attr}'")
        register(name, factory, config=getattr(factory, "Config", None))
        return _REGISTRY[name]
    from jaxrl.suggest import did_you_mean

    raise ConfigError(
        f"unknown agent '{name}'{did_you_mean(name, _REGISTRY)}; available: "
        f"{', '.join(sorted(_REGISTRY))} (or package.module:factory)"
    )


def resolve_config(name: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """All of agent ``name``'s options with ``overrides`` applied and checked."""
    config_cls = entry(name).config
    if config_cls is None:
        return dict(overrides)
    return config_to_dict(build_config(config_cls, overrides, f"agent '{name}'"))


def make(name: str, spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds agent ``name`` for an environment of ``spec``.

    Raises ``ConfigError`` for an unknown name, an unknown option, a value of the wrong
    type, or an agent that cannot act in this environment.
    """
    return entry(name).factory(spec, **overrides)


def _register_builtins() -> None:
    from jaxrl.agents import random_agent
    from jaxrl.agents.on_policy import a2c, a3c, impala, ppo
    from jaxrl.agents.q_learning import dqn, rainbow

    register(
        "dqn",
        dqn.make_dqn,
        config=dqn.DQNConfig,
        description="Deep Q-Network (Mnih et al. 2015) with double, dueling and n-step options",
    )
    register(
        "rainbow",
        rainbow.make_rainbow,
        config=rainbow.RainbowConfig,
        description="Rainbow (Hessel et al. 2018): double, dueling, n-step, prioritized, "
        "distributional and noisy, each switchable",
    )
    register(
        "ppo",
        ppo.make_ppo,
        config=ppo.PPOConfig,
        description="Proximal Policy Optimization (Schulman et al. 2017), discrete or "
        "continuous actions",
    )
    register(
        "a2c",
        a2c.make_a2c,
        config=a2c.A2CConfig,
        description="synchronous advantage actor-critic (Mnih et al. 2016), discrete or "
        "continuous actions",
    )
    register(
        "a3c",
        a3c.make_a3c,
        config=a3c.A3CConfig,
        description="asynchronous advantage actor-critic (Mnih et al. 2016): workers apply "
        "their gradients to shared parameters with --actor-threads K; A2C without",
    )
    register(
        "impala",
        impala.make_impala,
        config=impala.IMPALAConfig,
        description="IMPALA's learner (Espeholt et al. 2018): actor-critic with V-trace "
        "targets; stale actors with --actor-threads",
    )
    register(
        "random",
        random_agent.make_random,
        config=random_agent.RandomConfig,
        description="uniformly random actions; the smallest example of the Agent contract",
    )
    _register_off_policy()
    _register_value_family()
    from jaxrl.agents.multi_agent import maddpg, per_player

    register(
        "ippo",
        per_player.make_ippo,
        config=ppo.PPOConfig,
        description="independent PPO: one PPO learner per player of a simultaneous-move "
        "game, no parameter sharing (mpe:simple_spread --env.shared false)",
    )

    register(
        "maddpg",
        maddpg.make_maddpg,
        config=maddpg.MADDPGConfig,
        description="MADDPG (Lowe et al. 2017): decentralized actors, centralized critics, "
        "Gumbel-softmax actions; simultaneous-move games (mpe:simple_spread)",
    )
    from jaxrl.agents.q_learning import tabular

    register(
        "tabular_q",
        tabular.make_tabular_q,
        config=tabular.TabularQConfig,
        description="tabular Q-learning (RLHive's tutorial agent) on one-hot observations",
    )


def _register_value_family() -> None:
    from jaxrl.agents.q_learning import apex, munchausen, pqn, quantile

    register(
        "apex_dqn",
        apex.make_apex_dqn,
        config=apex.ApexDQNConfig,
        description="Ape-X DQN (Horgan et al. 2018): actors with their own epsilons and "
        "priorities, a prioritized double dueling n-step learner",
    )

    register(
        "qrdqn",
        quantile.make_qrdqn,
        config=quantile.QRDQNConfig,
        description="QR-DQN (Dabney et al. 2018): quantile regression with the quantile Huber loss",
    )
    register(
        "iqn",
        quantile.make_iqn,
        config=quantile.IQNConfig,
        description="implicit quantile networks (Dabney et al. 2018): sampled quantile "
        "fractions, cosine embedding",
    )
    register(
        "mdqn",
        munchausen.make_mdqn,
        config=munchausen.MDQNConfig,
        description="Munchausen-DQN (Vieillard et al. 2020): scaled log-policy bonus, "
        "soft bootstrap",
    )
    register(
        "pqn",
        pqn.make_pqn,
        config=pqn.PQNConfig,
        description="PQN (Gallici et al. 2024): Q(lambda) on parallel envs, LayerNorm, no "
        "replay buffer or target network",
    )


def _register_off_policy() -> None:
    from jaxrl.agents.off_policy import apex_ddpg, mbpo, sac, td3

    register(
        "apex_ddpg",
        apex_ddpg.make_apex_ddpg,
        config=apex_ddpg.ApexDDPGConfig,
        description="Ape-X DDPG (Horgan et al. 2018): actors with their own noise scales and "
        "priorities, a prioritized n-step DDPG learner",
    )

    register(
        "sac",
        sac.make_sac,
        config=sac.SACConfig,
        description="Soft Actor-Critic (Haarnoja et al. 2018) with automatic entropy tuning",
    )
    register(
        "td3",
        td3.make_td3,
        config=td3.TD3Config,
        description="TD3 (Fujimoto et al. 2018): twin critics, target smoothing, delayed actor",
    )
    register(
        "ddpg",
        td3.make_ddpg,
        config=td3.DDPGConfig,
        description="DDPG (Lillicrap et al. 2016): TD3 with one critic, no smoothing, no delay",
    )
    register(
        "mbpo",
        mbpo.make_mbpo,
        config=mbpo.MBPOConfig,
        description="MBPO (Janner et al. 2019): SAC on short rollouts of a probabilistic "
        "dynamics ensemble",
    )


_register_builtins()

__all__ = ["available", "entry", "make", "register", "resolve_config"]
