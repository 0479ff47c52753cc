"""Rainbow (Hessel et al. 2018): DQN with each of its six improvements switchable on its own.

The components and their flags (RLHive's names): ``double`` (van Hasselt et al. 2016),
``prioritized`` replay (Schaul et al. 2016), ``dueling`` (Wang et al. 2016), ``n_step``
returns (Sutton 1988), ``distributional`` C51 (Bellemare et al. 2017) on ``num_atoms``
atoms over [``v_min``, ``v_max``], and ``noisy`` nets (Fortunato et al. 2018) with
``sigma0``; ``use_eps_greedy`` keeps epsilon-greedy exploration on top of noisy nets.

The flags select parts of the one Q-learning agent (``agents/q_learning/core.py``):
``distributional`` the value head (``agents/q_learning/value_heads.py``: C51 or expected value),
``storage`` and ``prioritized`` the replay buffer, ``noisy``/``use_eps_greedy`` the
exploration, ``prioritized`` the importance weights. With every flag off this is DQN
(``agents/q_learning/dqn.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from jaxrl.agents.common.replay_choice import make_replay
from jaxrl.agents.q_learning import core as q_learning
from jaxrl.agents.q_learning.config import Exploration, Prioritization, PrioritizedHparams
from jaxrl.agents.q_learning.core import QLearningState, make_q_agent
from jaxrl.agents.q_learning.dqn import DopamineConfig
from jaxrl.agents.q_learning.value_heads import ValueHead, categorical_head, scalar_head
from jaxrl.networks import QNetwork
from jaxrl.types import Agent, EnvSpec
from jaxrl.validation import build_config, option

RainbowState = QLearningState
RainbowHparams = PrioritizedHparams


@dataclasses.dataclass(frozen=True)
class RainbowConfig(DopamineConfig):
    """Rainbow options; defaults are Hessel et al. 2018's Atari settings (Table 1) unless
    noted. Environment steps are agent steps (Atari frames / 4).

    Attributes:
      noisy: noisy linear layers in the head (exploration by parameter noise).
      sigma0: initial noise scale of noisy layers (RLHive's ``std_init``), 0.5.
      noisy_torso: noisy layers in the MLP torso too (needs ``noisy``; off in Rainbow,
        whose noisy layers are the head's).
      use_eps_greedy: also act epsilon-greedily when ``noisy`` (RLHive's flag); without
        ``noisy`` epsilon-greedy is always used.
      double: double-Q action selection by the online network.
      dueling: dueling head.
      distributional: C51 categorical value distribution and cross-entropy loss.
      v_min, v_max, num_atoms: the C51 support (-10, 10, 51).
      n_step: multi-step return length (3).
      prioritized: prioritized replay (Schaul et al. 2016), by the options below.
      alpha: prioritized replay's priority exponent (0.5).
      beta_start: the importance-weight exponent at step 0, annealed linearly to 1 (0.4).
      beta_decay_steps: env steps over which the importance exponent reaches 1.
      priority_eps: added to |TD error| in priorities, so none is zero.
      storage: replay layout. ``"full"`` stores every transition with its next observation
        (``buffers/replay.py``, ``buffers/prioritized.py``); ``"compact"`` stores each frame
        once and rebuilds frame stacks and n-step windows at sample time
        (``buffers/compact.py``; windows that would need a truncated episode's final
        observation are never sampled); ``"auto"`` picks compact for stacked uint8 image
        observations ``[H, W, stack]`` and full otherwise.
      hidden_sizes: widths of the dense layers of the torso: the MLP's, or those after
        the convolutions of an image torso (512).
      torso: the observation encoder: ``"auto"``, ``"mlp"``, ``"nature"``, ``"impala"``
        or ``"minatar"``. Nature: Mnih et al. 2015; IMPALA: Espeholt et al. 2018; MinAtar:
        Young & Tian 2019. Auto: an MLP for vector observations, the MinAtar CNN for
        images under 32 pixels, the Nature DQN CNN for larger ones; see
        ``networks.make_torso``.
      loss: TD loss when not distributional: ``"huber"``, ``"mse"`` or ``"hl_gauss"``.
        ``hl_gauss`` is the histogram loss with ``min_value``, ``max_value``,
        ``num_bins``, ``sigma`` (see ``QLearningConfig``).
      lr, adam_eps: Adam (6.25e-5, 1.5e-4).
      gamma: discount (0.99).
      buffer_size, batch_size: replay capacity in transitions (1M) and minibatch (32).
      learning_starts: env steps before learning (20,000 = 80k frames).
      updates_per_rollout: gradient steps per ``update`` call.
      target_update_period: env steps between target updates (8,000 = 32k frames).
      tau: target update fraction (1.0: hard copy).
      epsilon_start, epsilon_end, epsilon_decay_steps: linear epsilon schedule over env
        steps (Dopamine: 1.0 -> 0.01 over 250,000). Used when not noisy or with
        ``use_eps_greedy``.
      eval_epsilon: epsilon of greedy evaluation (Dopamine: 0.001).
      max_grad_norm: global gradient-norm clip, or None (Rainbow: none).
      reward_clip: clip rewards to [-c, c] for learning, or None (Atari presets: 1).
    """

    noisy: bool = True
    sigma0: float = option(0.5, ge=0)
    noisy_torso: bool = False
    use_eps_greedy: bool = False
    double: bool = True
    dueling: bool = True
    distributional: bool = True
    v_min: float = -10.0
    v_max: float = 10.0
    num_atoms: int = option(51, ge=2)
    n_step: int = 3
    prioritized: bool = True
    alpha: float = option(0.5, ge=0)
    beta_start: float = option(0.4, ge=0, le=1)
    beta_decay_steps: int = option(12_500_000, ge=0)
    priority_eps: float = option(1e-6, ge=0)
    storage: Literal["auto", "full", "compact"] = "auto"
    lr: float = 6.25e-5
    adam_eps: float = 1.5e-4

    def __post_init__(self):
        super().__post_init__()
        if self.distributional and (self.num_atoms < 2 or not self.v_min < self.v_max):
            raise ValueError("distributional needs num_atoms >= 2 and v_min < v_max")
        if self.noisy_torso and not self.noisy:
            raise ValueError("noisy_torso needs noisy true (noisy layers are sampled only then)")
        if self.distributional and self.loss == "hl_gauss":
            raise ValueError("loss hl_gauss needs distributional false (C51 is its own loss)")


def make_head(cfg: RainbowConfig) -> ValueHead:
    """C51 when ``distributional``, else ``cfg.loss``'s head (one expected value per
    action, or HL-Gauss)."""
    if cfg.distributional:
        return categorical_head(cfg.v_min, cfg.v_max, cfg.num_atoms)
    return scalar_head(cfg)


def exploration(cfg: RainbowConfig) -> Exploration:
    """Noisy nets when ``noisy``; epsilon-greedy unless noisy without ``use_eps_greedy``."""
    return Exploration(cfg.noisy, cfg.sigma0, cfg.use_eps_greedy or not cfg.noisy, cfg.noisy_torso)


def make_network(spec: EnvSpec, cfg: RainbowConfig) -> QNetwork:
    """Torso + the head the flags ask for; outputs ``[B, A]`` or ``[B, A, num_atoms]``."""
    return q_learning.make_network(spec, cfg, make_head(cfg), exploration(cfg))


def make_agent(spec: EnvSpec, cfg: RainbowConfig, name: str = "rainbow") -> Agent:
    """Builds the agent for ``spec`` from a validated config: the flags pick the parts."""
    buffer = make_replay(spec, cfg, name, cfg.storage, cfg.prioritized)
    prioritization = Prioritization(cfg.beta_decay_steps) if cfg.prioritized else None
    return make_q_agent(spec, cfg, make_head(cfg), buffer, exploration(cfg), prioritization, name)


def make_rainbow(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds a Rainbow agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(RainbowConfig, overrides, "agent 'rainbow'"))
