"""The options of the Q-learning agent (``agents/q_learning/core.py``) that DQN, Rainbow and
their kind are configurations of: ``QLearningConfig`` (the config fields every Q-learning
agent shares, with their ranges; DQN's and Rainbow's configs subclass it), the continuous
hyperparameters kept in the state (``QHparams``, ``PrioritizedHparams``), and the choices
of parts ``make_q_agent`` takes besides its value head and buffer (``Exploration``,
``Prioritization``).
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import flax.struct
import jax

from jaxrl.agents.auxiliary.options import AuxiliaryOptions
from jaxrl.agents.common.optim import EpsilonOptions, OptimizerOptions
from jaxrl.agents.common.replay_choice import ReplayOptions
from jaxrl.networks import TorsoSpec
from jaxrl.validation import fixes, option


@dataclasses.dataclass(frozen=True)
@fixes(  # action symmetry compares continuous actions
    action_symmetry=False, right_action_map=(), left_action_map=(), confusion_reward_weight=1.0
)
class QLearningConfig(ReplayOptions, EpsilonOptions, OptimizerOptions, AuxiliaryOptions):
    """The options of every Q-learning agent, with DQN's defaults (after CleanRL's
    ``dqn.py``; each agent's config may change them and say more). Ranges are declared
    beside each field. The optimizer, learning-rate and epsilon schedule options are
    ``agents/common/optim.py``'s; the demonstration and auxiliary-learner options
    ``agents/auxiliary/options.py``'s (their hyperparameters are constants here, not in
    ``QHparams``).

    Attributes:
      hidden_sizes: dense widths of the torso (CleanRL's MLP: 120, 84).
      torso: the observation encoder: ``"auto"``, ``"mlp"``, ``"nature"``, ``"impala"``
        or ``"minatar"`` (``networks.make_torso``). Auto: an MLP for vectors, a CNN for
        images. ``"multi"``: every entry of a dict observation through its own encoder,
        joined (``networks.multi_input``).
      dueling: dueling head (Wang et al. 2016).
      double: double-Q target, action chosen by the online net (van Hasselt et al. 2016).
      n_step: length of the multi-step return (1 = one-step TD).
      loss: the TD loss: ``"huber"`` (Mnih et al. 2015), ``"mse"`` (0.5 * squared TD
        error) or ``"hl_gauss"`` (a histogram of Q). ``hl_gauss`` trains Q as a histogram
        over ``num_bins`` bins on [``min_value``, ``max_value``] by cross-entropy on
        Gaussian-smoothed targets of standard deviation ``sigma`` (Farebrother et al.
        2024, "Stop Regressing", with their Atari support -10..10 and 51 bins; Emote's
        ``HLGaussLoss(min_value, max_value, num_bins, sigma)``).
      min_value, max_value: the support of ``hl_gauss``'s histogram (-10, 10).
      num_bins: ``hl_gauss``'s number of bins (51).
      sigma: ``hl_gauss``'s target standard deviation; None: 0.75 bin widths (the paper's
        recommended ratio).
      lr: Adam learning rate (CleanRL: 2.5e-4).
      gamma: discount.
      buffer_size: replay capacity in transitions (CleanRL: 10,000).
      batch_size: minibatch size (CleanRL: 128).
      learning_starts: env steps collected before the first gradient step (RLHive's
        ``min_replay_history``; CleanRL: 10,000).
      updates_per_rollout: gradient steps per ``update`` call (one call per rollout of
        ``rollout_len * num_envs`` env steps).
      target_update_period: env steps between target updates (CleanRL: 500).
      tau: target update fraction; 1.0 is a hard copy (CleanRL: 1.0), < 1 a soft update.
      max_grad_norm: global gradient-norm clip, or None (SB3's default 10).
      reward_clip: rewards are clipped to [-c, c] for learning, or None (Atari: 1.0).
    """

    hidden_sizes: tuple[int, ...] = option((120, 84), gt=0, min_len=1)
    torso: str | TorsoSpec = "auto"
    dueling: bool = False
    double: bool = False
    n_step: int = option(1, ge=1)
    loss: Literal["huber", "mse", "hl_gauss"] = "huber"
    min_value: float = -10.0
    max_value: float = 10.0
    num_bins: int = option(51, ge=2)
    sigma: float | None = option(None, gt=0)
    lr: float = option(2.5e-4, gt=0)
    adam_eps: float = option(1e-8, ge=0)
    gamma: float = option(0.99, ge=0, le=1)
    updates_per_rollout: int = option(1, ge=1)
    target_update_period: int = option(500, ge=1)
    tau: float = option(1.0, gt=0, le=1)
    max_grad_norm: float | None = option(10.0, gt=0)
    reward_clip: float | None = option(None, gt=0)

    def __post_init__(self):
        super().__post_init__()
        if self.loss == "hl_gauss" and not self.min_value < self.max_value:
            raise ValueError("loss hl_gauss needs min_value < max_value")


@flax.struct.dataclass
class QHparams:
    """Continuous hyperparameters, kept in the state so a sweep can vmap over them."""

    lr: jax.Array
    gamma: jax.Array
    tau: jax.Array
    epsilon_start: jax.Array
    epsilon_end: jax.Array
    eval_epsilon: jax.Array


@flax.struct.dataclass
class PrioritizedHparams(QHparams):
    """With prioritized replay: the importance exponent's start and the priority knobs
    that the buffer takes as arguments (``buffers.PriorityParams``)."""

    beta_start: jax.Array
    alpha: jax.Array | float = 0.5  # Rainbow's defaults, for hparams built by hand
    priority_eps: jax.Array | float = 1e-6


class Exploration(NamedTuple):
    """Noisy linear layers in the head (``noisy``, initial scale ``sigma0``), also in the
    MLP torso (``noisy_torso``), and/or epsilon-greedy acting (``by_epsilon``)."""

    noisy: bool = False
    sigma0: float = 0.5
    by_epsilon: bool = True
    noisy_torso: bool = False
    param_noise: bool = False


class Prioritization(NamedTuple):
    """Prioritized replay (Schaul et al. 2016): importance exponent annealed linearly from
    ``hparams.beta_start`` to 1 over ``beta_decay_steps`` env steps."""

    beta_decay_steps: int
