"""DQN (Mnih et al. 2015) with double (van Hasselt et al. 2016), dueling (Wang et al. 2016)
and n-step (Sutton 1988; Hessel et al. 2018) options.

DQN is the Q-learning agent of ``agents/q_learning/core.py`` with the expected-value head
(``agents/q_learning/value_heads.py``), uniform replay (compact storage for stacked uint8 images)
and epsilon-greedy exploration. ``DQNConfig`` holds its own defaults (CleanRL's); see
``q_learning.py`` for ``init``, ``act``, ``update`` and the state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl.agents.common.replay_choice import make_replay
from jaxrl.agents.q_learning.config import Exploration, QLearningConfig
from jaxrl.agents.q_learning.core import make_network, make_q_agent
from jaxrl.agents.q_learning.value_heads import expected_value_head, scalar_head
from jaxrl.networks import QNetwork
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config, option


@dataclasses.dataclass(frozen=True)
class DopamineConfig(QLearningConfig):
    """The Atari defaults that Dopamine's JAX agents share (Castro et al. 2018;
    ``dopamine/jax/agents/*/configs/*.gin``): a 1M-transition replay, batch 32, learning
    from 20,000 steps (``min_replay_history``), the target copied every 8,000 steps,
    epsilon 1 -> 0.01 (0.001 when evaluating), a 512-unit dense layer, no gradient
    clipping, and the Adam of QR-DQN and M-DQN (5e-5, eps 3.125e-4 = 0.01 / 32). QR-DQN,
    IQN, M-DQN and Rainbow derive from it and declare only what differs."""

    lr: float = 5e-5
    adam_eps: float = 3.125e-4
    buffer_size: int = 1_000_000
    batch_size: int = 32
    learning_starts: int = 20_000
    target_update_period: int = 8_000
    epsilon_end: float = 0.01
    eval_epsilon: float = 0.001
    hidden_sizes: tuple[int, ...] = (512,)
    max_grad_norm: float | None = None


@dataclasses.dataclass(frozen=True)
class DQNConfig(QLearningConfig):
    """DQN options. Defaults follow CleanRL's ``dqn.py`` (classic control), itself after
    Mnih et al. 2015, except where noted; names follow RLHive where it has one.

    The options every Q-learning agent shares are ``QLearningConfig``'s, with DQN's
    defaults; the epsilon schedule's ``EpsilonOptions``'s (CleanRL: 1.0 -> 0.05 over
    250,000 env steps).

    Attributes:
      param_noise: explore greedily in a perturbed network instead of epsilon-greedily
        (Plappert et al. 2018). Every ``update`` measures, on a replay batch, the KL
        between the softmax of the network's values and of a perturbation of scale
        ``sigma`` (initially ``param_noise_sigma``: 0.01, OpenAI Baselines' deepq), and
        multiplies ``sigma`` by ``param_noise_coefficient`` (1.01) while the KL is at most
        ``-log(1 - eps + eps / |A|)``, ``eps`` the epsilon schedule's current value, and
        divides it otherwise; the exploring network is then re-perturbed (once per
        rollout).
      param_noise_sigma: the perturbation's initial scale (0.01, OpenAI Baselines').
      param_noise_coefficient: the factor the scale is adapted by after each measure (1.01).
    """

    param_noise: bool = False
    param_noise_sigma: float = option(0.01, gt=0)
    param_noise_coefficient: float = option(1.01, gt=1)


def make_q_network(
    spec: EnvSpec, hidden_sizes: tuple[int, ...], dueling: bool, torso: str = "auto"
) -> QNetwork:
    """DQN's network: the ``torso`` and a (dueling) linear Q head, ``[B, A]``."""
    cfg = DQNConfig(hidden_sizes=hidden_sizes, dueling=dueling, torso=torso)
    return make_network(spec, cfg, expected_value_head(), Exploration())


def make_dqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a DQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(DQNConfig, overrides, "agent 'dqn'")
    buffer = make_replay(spec, cfg, "dqn", "auto", prioritized=False)
    explore = Exploration(param_noise=cfg.param_noise)
    return make_q_agent(spec, cfg, scalar_head(cfg), buffer, explore, name="dqn")
