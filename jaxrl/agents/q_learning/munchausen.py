"""Munchausen-DQN (Vieillard, Pietquin & Geist 2020, "Munchausen Reinforcement
Learning", NeurIPS): the Q-learning agent of ``agents/q_learning/core.py`` with the Munchausen
value head (``agents/q_learning/value_heads.py``: ``munchausen_head``): the reward gains the scaled,
clipped log-policy of the action taken, ``alpha [tau log pi(a|s)]_{l_0}^0``, and the
bootstrap is the soft value ``sum_a' pi(a'|s') (Q(s',a') - tau log pi(a'|s'))`` with
``pi = softmax(Q_target / tau)``, both from the target network. Uniform replay and
epsilon-greedy acting as DQN.

Defaults are those of the authors' ``munchausen_rl/configs/atari.gin`` (Dopamine's DQN
settings with Adam), environment steps being agent steps.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl.agents.common.replay_choice import make_replay
from jaxrl.agents.q_learning.core import make_q_agent
from jaxrl.agents.q_learning.dqn import DopamineConfig
from jaxrl.agents.q_learning.value_heads import munchausen_head
from jaxrl.types import Agent, ConfigError, EnvSpec
from jaxrl.validation import build_config, fixes, option


@dataclasses.dataclass(frozen=True)
@fixes(
    n_step=1, double=False, min_value=-10.0, max_value=10.0, num_bins=51, sigma=None
)  # one-step targets, no hl_gauss
class MDQNConfig(DopamineConfig):
    """M-DQN options; the ``QLearningConfig`` ones as in ``DQNConfig``.

    Attributes:
      m_alpha: scaling of the Munchausen term (paper: 0.9).
      m_tau: entropy temperature of ``pi = softmax(Q / tau)`` (paper: 0.03).
      l_0: lower clip of ``tau log pi(a|s)`` (paper: -1).
      loss: ``"huber"`` (Dopamine's DQN loss) or ``"mse"``.

    The other defaults are Dopamine's (``DopamineConfig``). ``m_alpha``, ``m_tau`` and
    ``l_0`` are static options (a sweep over them is one job per value), like IQN's sample
    sizes and ``kappa``.
    """

    m_alpha: float = option(0.9, ge=0)
    m_tau: float = option(0.03, gt=0)
    l_0: float = option(-1.0, lt=0)


def make_mdqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an M-DQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(MDQNConfig, overrides, "agent 'mdqn'")
    if cfg.loss == "hl_gauss":
        raise ConfigError("agent 'mdqn': loss 'hl_gauss' does not apply; use huber or mse")
    buffer = make_replay(spec, cfg, "mdqn", "auto", prioritized=False)
    head = munchausen_head(cfg.m_alpha, cfg.m_tau, cfg.l_0, cfg.loss)
    return make_q_agent(spec, cfg, head, buffer, name="mdqn")
