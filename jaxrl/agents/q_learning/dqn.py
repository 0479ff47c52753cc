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

    Attributes:
      hidden_sizes: dense widths of the torso (CleanRL's MLP: 120, 84).
      torso: ``"auto"``, ``"mlp"``, ``"nature"``, ``"impala"`` or ``"minatar"``, as in
        ``RainbowConfig`` (auto: an MLP for vectors, a CNN for images).
      dueling: dueling head (Wang et al. 2016).
      double: double-Q target, action chosen by the online net (van Hasselt et al. 2016).
      n_step: length of the multi-step return (1 = one-step TD).
      loss: ``"huber"`` (Mnih et al. 2015), ``"mse"`` (0.5 * squared TD error) or
        ``"hl_gauss"``: Q as a histogram over ``num_bins`` bins on [``min_value``,
        ``max_value``] trained by cross-entropy on Gaussian-smoothed targets of standard
        deviation ``sigma`` (Farebrother et al. 2024, "Stop Regressing", with their
        Atari support -10..10 and 51 bins; ``sigma`` None: 0.75 bin widths, their
        recommended ratio; Emote's ``HLGaussLoss(min_value, max_value, num_bins, sigma)``).
      lr: Adam learning rate (CleanRL: 2.5e-4).
      adam_eps: Adam epsilon (optax default 1e-8; Dopamine uses 1.5e-4 for Atari).
      gamma: discount.
      buffer_size: replay capacity in transitions (CleanRL: 10,000).
      batch_size: minibatch size (CleanRL: 128).
      learning_starts: env steps collected before the first gradient step (RLHive's
        ``min_replay_history``; CleanRL: 10,000).
      updates_per_rollout: gradient steps per ``update`` call (one call per rollout of
        ``rollout_len * num_envs`` env steps).
      target_update_period: env steps between target updates (CleanRL: 500).
      tau: target update fraction; 1.0 is a hard copy (CleanRL: 1.0), < 1 a soft update.
      epsilon_start, epsilon_end, epsilon_decay_steps: linear exploration schedule over env
        steps, starting at 0 (RLHive's LinearSchedule; CleanRL: 1.0 -> 0.05 over 250,000).
      epsilon_schedule: ``"linear"`` (above), ``"exponential"`` (epsilon multiplied by
        ``epsilon_decay`` at every acting call, floored at ``epsilon_end``: machin's
        ``epsilon_decay``, 0.9999) or ``"piecewise"`` (linear through the points
        ``epsilon_boundaries`` (env steps), ``epsilon_values``).
      eval_epsilon: epsilon of greedy evaluation (``explore=False``).
      optimizer, lr_schedule and their options: ``agents/common/optim.py`` (Adam, constant).
      max_grad_norm: global gradient-norm clip, or None (SB3's default 10).
      reward_clip: rewards are clipped to [-c, c] for learning, or None (Atari: 1.0).
      param_noise: explore greedily in a perturbed network instead of epsilon-greedily
        (Plappert et al. 2018): every ``update`` measures, on a replay batch, the KL
        between the softmax of the network's values and of a perturbation of scale
        ``sigma`` (initially ``param_noise_sigma``: 0.01, OpenAI Baselines' deepq), and
        multiplies ``sigma`` by ``param_noise_coefficient`` (1.01) while the KL is at most
        ``-log(1 - eps + eps / |A|)``, ``eps`` the epsilon schedule's current value, and
        divides it otherwise; the exploring network is then re-perturbed (once per
        rollout).
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
