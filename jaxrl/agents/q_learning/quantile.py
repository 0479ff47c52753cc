"""QR-DQN (Dabney et al. 2018a) and IQN (Dabney et al. 2018b): the Q-learning agent of
``agents/q_learning/core.py`` with a quantile value head (``agents/q_learning/value_heads.py``:
``quantile_head``, ``implicit_quantile_head``), uniform replay (compact storage for
stacked uint8 images) and epsilon-greedy exploration. Every option of
``QLearningConfig`` (double, dueling for QR-DQN, n-step, target updates, ...) applies.

Defaults are those of Dopamine's JAX agents (``jax/agents/quantile/configs/quantile.gin``
and ``jax/agents/implicit_quantile/configs/implicit_quantile.gin``), which follow the
papers adjusted to Rainbow's Atari settings; environment steps are agent steps.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl.agents.common.replay_choice import make_replay
from jaxrl.agents.q_learning.core import make_q_agent
from jaxrl.agents.q_learning.dqn import DopamineConfig
from jaxrl.agents.q_learning.value_heads import implicit_quantile_head, quantile_head
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config, fixes, option


@dataclasses.dataclass(frozen=True)
@fixes(
    loss="huber", min_value=-10.0, max_value=10.0, num_bins=51, sigma=None
)  # the quantile Huber loss (kappa)
class QRDQNConfig(DopamineConfig):
    """QR-DQN options; the ``QLearningConfig`` ones as in ``DQNConfig``, with Dopamine's
    ``quantile.gin`` defaults.

    Attributes:
      num_quantiles: quantiles per action ``N`` (Dopamine's ``num_atoms``: 200).
      kappa: Huber threshold of the quantile Huber loss (1.0; 0 is the plain quantile
        regression loss).
      n_step: length of the multi-step target (Dopamine's ``update_horizon``: 3).

    The other defaults are Dopamine's (``DopamineConfig``; Adam's 3.125e-4 = 0.01 / 32 is
    Dabney et al. 2018a's). Dopamine's QR-DQN gin samples from its prioritized replay;
    this agent samples uniformly, as Dabney et al. (2018a) and Dopamine's IQN do.
    """

    num_quantiles: int = option(200, ge=1)
    kappa: float = option(1.0, ge=0)
    n_step: int = 3


@dataclasses.dataclass(frozen=True)
@fixes(num_quantiles=200, dueling=False)  # sampled fractions; no dueling head
class IQNConfig(QRDQNConfig):
    """IQN options: ``QRDQNConfig``'s with Dopamine's ``implicit_quantile.gin`` defaults.

    Attributes:
      num_tau_samples: fractions ``N`` sampled for the online quantiles of the loss (64).
      num_tau_prime_samples: fractions ``N'`` for the target quantiles (64).
      num_quantile_samples: fractions ``K`` whose mean is Q for acting (32).
      embedding_dim: size ``n`` of the cosine embedding (64).
      kappa: Huber threshold (1.0).
    """

    num_tau_samples: int = option(64, ge=1)
    num_tau_prime_samples: int = option(64, ge=1)
    num_quantile_samples: int = option(32, ge=1)
    embedding_dim: int = option(64, ge=1)


def make_qrdqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a QR-DQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(QRDQNConfig, overrides, "agent 'qrdqn'")
    buffer = make_replay(spec, cfg, "qrdqn", "auto", prioritized=False)
    head = quantile_head(cfg.num_quantiles, cfg.kappa)
    return make_q_agent(spec, cfg, head, buffer, name="qrdqn")


def make_iqn(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an IQN agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    cfg = build_config(IQNConfig, overrides, "agent 'iqn'")
    buffer = make_replay(spec, cfg, "iqn", "auto", prioritized=False)
    head = implicit_quantile_head(
        cfg.num_tau_samples,
        cfg.num_tau_prime_samples,
        cfg.num_quantile_samples,
        cfg.kappa,
        cfg.embedding_dim,
    )
    return make_q_agent(spec, cfg, head, buffer, name="iqn")
