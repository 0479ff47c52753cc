"""The agent registry: ``make(name, spec, **overrides)``, ``available()``, ``register``.

A factory is ``factory(spec: EnvSpec, **overrides) -> Agent``. Registering it with its
``config`` dataclass lets the CLI validate overrides and save the full effective config
(``configure(name, overrides) -> AgentConfig``, built with ``build(config, spec)``); the
registry is the one holder of each agent's config class and of what the execution modes
need to know of an agent (``plays_turns``, ``plays_teams``).
A name of the form ``"package.module:attr"`` imports ``package.module`` and uses ``attr``
as the factory (or the entry the module registered under that name), so a user's own
agent works with the CLI, the runner and presets, as RLHive's registry allows.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxrl import trust
from jaxrl.types import Agent, ConfigError, EnvSpec
from jaxrl.validation import build_config, config_to_dict


class AgentEntry(NamedTuple):
    """A registered agent.

    Attributes:
      factory: ``factory(spec, **options) -> Agent``.
      config: the frozen dataclass of its options, None for a factory that has none.
      description: one line for ``--help``.
      plays_turns: learns from single stitched transitions and honours the legal-move
        mask, so it may play every seat of a turn-based game (self-play) or one seat among
        independent agents (``runners/games``), with ``n_step`` 1.
      plays_teams: trains the players of a simultaneous-move game as one learner per
        player (``--env.shared false``: MADDPG, independent PPO).
      actor_options: for an agent with actors (Ape-X, IMPALA), ``(options, num_envs,
        processes, index) -> options`` of the agent actor process ``index`` of
        ``processes`` acts with (``--actor-processes``); None: it has none.
    """

    factory: Callable[..., Agent]
    config: type | None
    description: str
    plays_turns: bool = False
    plays_teams: bool = False
    actor_options: Callable[..., dict[str, Any]] | None = None


@dataclasses.dataclass(frozen=True)
class AgentConfig:
    """An agent by its registered name with its validated options: an instance of the
    config class it was registered with, or a dict for a factory registered without one."""

    name: str
    options: Any

    def kwargs(self) -> dict[str, Any]:
        """The options as the factory's keyword arguments (YAML-safe values)."""
        if dataclasses.is_dataclass(self.options):
            return config_to_dict(self.options)
        return copy.deepcopy(dict(self.options))

    def option(self, key: str, default: Any = None) -> Any:
        """The value of option ``key``, ``default`` where the agent has no such option."""
        if dataclasses.is_dataclass(self.options):
            return getattr(self.options, key, default)
        return self.options.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.kwargs()}


_REGISTRY: dict[str, AgentEntry] = {}


def register(
    name: str,
    factory: Callable[..., Agent],
    *,
    config: type | None = None,
    description: str = "",
    plays_turns: bool = False,
    plays_teams: bool = False,
    actor_options: Callable[..., dict[str, Any]] | None = None,
) -> None:
    """Registers ``factory(spec, **overrides) -> Agent`` under ``name``.

    ``config``: the agent's frozen ``Config`` dataclass, if it has one; ``description``:
    one line shown by ``python -m jaxrl.train --help``; ``plays_turns``, ``plays_teams``:
    the games it can learn; ``actor_options``: its actors' options (``AgentEntry``).
    """
    _REGISTRY[name] = AgentEntry(
        factory, config, description, plays_turns, plays_teams, actor_options
    )


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


def configure(name: str, overrides: Mapping[str, Any]) -> AgentConfig:
    """Agent ``name`` with ``overrides`` applied to its defaults and checked (ConfigError
    for an unknown name or option, or a bad value)."""
    config_cls = entry(name).config
    if config_cls is None:
        return AgentConfig(name, dict(overrides))
    return AgentConfig(name, build_config(config_cls, overrides, f"agent '{name}'"))


def resolve_config(name: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """All of agent ``name``'s options with ``overrides`` applied and checked."""
    return configure(name, overrides).kwargs()


def build(config: AgentConfig, spec: EnvSpec) -> Agent:
    """The agent of ``config`` for an environment of ``spec`` (ConfigError for an agent
    that cannot act in it)."""
    factory = entry(config.name).factory
    agent = factory(spec, **config.kwargs())
    if spec.num_players == 1 and trust.is_user_code(factory):
        from jaxrl.agents.boundary import check_agent

        check_agent(config.name, agent, spec)
    return agent


def make(name: str, spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds agent ``name`` for an environment of ``spec``.

    Raises ``ConfigError`` for an unknown name, an unknown option, a value of the wrong
    type, or an agent that cannot act in this environment.
    """
    return entry(name).factory(spec, **overrides)


class Builtin(NamedTuple):
    """A built-in agent: its name, ``module:attr`` of its factory and of its config class
    (modules under ``jaxrl.agents``), its ``--help`` line, the games it plays and
    ``module:attr`` of its actors' options (``AgentEntry.actor_options``; "": none)."""

    name: str
    factory: str
    config: str
    description: str
    plays_turns: bool = False
    plays_teams: bool = False
    actor_options: str = ""


BUILTINS: tuple[Builtin, ...] = (
    Builtin(
        "dqn",
        "q_learning.dqn:make_dqn",
        "q_learning.dqn:DQNConfig",
        "Deep Q-Network (Mnih et al. 2015) with double, dueling and n-step options",
        plays_turns=True,
    ),
    Builtin(
        "rainbow",
        "q_learning.rainbow:make_rainbow",
        "q_learning.rainbow:RainbowConfig",
        "Rainbow (Hessel et al. 2018): double, dueling, n-step, prioritized, "
        "distributional and noisy, each switchable",
        plays_turns=True,
    ),
    Builtin(
        "r2d2",
        "q_learning.r2d2:make_r2d2",
        "q_learning.r2d2:R2D2Config",
        "R2D2 (Kapturowski et al. 2019): a recurrent Q-learner (--agent.cell lstm, gru, "
        "mingru) on prioritized sequence replay with burn-in",
    ),
    Builtin(
        "alphazero",
        "search.alphazero:make_alphazero",
        "search.alphazero:AlphaZeroConfig",
        "AlphaZero (Silver et al. 2018) with mctx's search over the game's own rules "
        "(search: gumbel for Gumbel MuZero's); connect_four, tic_tac_toe with --self-play",
        plays_turns=True,
    ),
    Builtin(
        "random",
        "random_agent:make_random",
        "random_agent:RandomConfig",
        "uniformly random actions; the smallest example of the Agent contract",
    ),
    Builtin(
        "ippo",
        "multi_agent.per_player:make_ippo",
        "on_policy.ppo:PPOConfig",
        "independent PPO: one PPO learner per player of a simultaneous-move game, no "
        "parameter sharing (mpe:simple_spread --env.shared false)",
        plays_teams=True,
    ),
    Builtin(
        "maddpg",
        "multi_agent.maddpg:make_maddpg",
        "multi_agent.maddpg:MADDPGConfig",
        "MADDPG (Lowe et al. 2017): decentralized actors, centralized critics, "
        "Gumbel-softmax actions; simultaneous-move games (mpe:simple_spread)",
        plays_teams=True,
    ),
    Builtin(
        "tabular_q",
        "q_learning.tabular:make_tabular_q",
        "q_learning.tabular:TabularQConfig",
        "tabular Q-learning (RLHive's tutorial agent) on one-hot observations",
    ),
    Builtin(
        "ppo",
        "on_policy.ppo:make_ppo",
        "on_policy.ppo:PPOConfig",
        "Proximal Policy Optimization (Schulman et al. 2017), discrete or continuous actions",
    ),
    Builtin(
        "a2c",
        "on_policy.a2c:make_a2c",
        "on_policy.a2c:A2CConfig",
        "synchronous advantage actor-critic (Mnih et al. 2016), discrete or continuous actions",
    ),
    Builtin(
        "a3c",
        "on_policy.a3c:make_a3c",
        "on_policy.a3c:A3CConfig",
        "asynchronous advantage actor-critic (Mnih et al. 2016): workers apply their "
        "gradients to shared parameters with --actor-threads K; A2C without",
    ),
    Builtin(
        "impala",
        "on_policy.impala:make_impala",
        "on_policy.impala:IMPALAConfig",
        "IMPALA's learner (Espeholt et al. 2018): actor-critic with V-trace targets; "
        "stale actors with --actor-threads",
        actor_options="on_policy.impala:actor_options",
    ),
    Builtin(
        "apex_dqn",
        "q_learning.apex:make_apex_dqn",
        "q_learning.apex:ApexDQNConfig",
        "Ape-X DQN (Horgan et al. 2018): actors with their own epsilons and priorities, "
        "a prioritized double dueling n-step learner",
        actor_options="common.apex_actors:process_options",
    ),
    Builtin(
        "qrdqn",
        "q_learning.quantile:make_qrdqn",
        "q_learning.quantile:QRDQNConfig",
        "QR-DQN (Dabney et al. 2018): quantile regression with the quantile Huber loss",
    ),
    Builtin(
        "iqn",
        "q_learning.quantile:make_iqn",
        "q_learning.quantile:IQNConfig",
        "implicit quantile networks (Dabney et al. 2018): sampled quantile fractions, "
        "cosine embedding",
    ),
    Builtin(
        "mdqn",
        "q_learning.munchausen:make_mdqn",
        "q_learning.munchausen:MDQNConfig",
        "Munchausen-DQN (Vieillard et al. 2020): scaled log-policy bonus, soft bootstrap",
    ),
    Builtin(
        "pqn",
        "q_learning.pqn:make_pqn",
        "q_learning.pqn:PQNConfig",
        "PQN (Gallici et al. 2024): Q(lambda) on parallel envs, LayerNorm, no replay "
        "buffer or target network",
    ),
    Builtin(
        "apex_ddpg",
        "off_policy.apex_ddpg:make_apex_ddpg",
        "off_policy.apex_ddpg:ApexDDPGConfig",
        "Ape-X DDPG (Horgan et al. 2018): actors with their own noise scales and "
        "priorities, a prioritized n-step DDPG learner",
        actor_options="common.apex_actors:process_options",
    ),
    Builtin(
        "sac",
        "off_policy.sac:make_sac",
        "off_policy.sac:SACConfig",
        "Soft Actor-Critic (Haarnoja et al. 2018) with automatic entropy tuning",
    ),
    Builtin(
        "td3",
        "off_policy.td3:make_td3",
        "off_policy.td3:TD3Config",
        "TD3 (Fujimoto et al. 2018): twin critics, target smoothing, delayed actor",
    ),
    Builtin(
        "ddpg",
        "off_policy.td3:make_ddpg",
        "off_policy.td3:DDPGConfig",
        "DDPG (Lillicrap et al. 2016): TD3 with one critic, no smoothing, no delay",
    ),
    Builtin(
        "mbpo",
        "off_policy.mbpo:make_mbpo",
        "off_policy.mbpo:MBPOConfig",
        "MBPO (Janner et al. 2019): SAC on short rollouts of a probabilistic dynamics ensemble",
    ),
)


def _register_builtins() -> None:
    def load(target: str) -> Any:
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(f"jaxrl.agents.{module}"), attr)

    for b in BUILTINS:
        register(
            b.name,
            load(b.factory),
            config=load(b.config),
            description=b.description,
            plays_turns=b.plays_turns,
            plays_teams=b.plays_teams,
            actor_options=load(b.actor_options) if b.actor_options else None,
        )


_register_builtins()

from jaxrl.agents.auxiliary.extra_loss import ExtraLoss, sample_data  # noqa: E402

__all__ = [
    "ExtraLoss",
    "sample_data",
    "AgentConfig",
    "AgentEntry",
    "available",
    "build",
    "configure",
    "entry",
    "make",
    "register",
    "resolve_config",
]
