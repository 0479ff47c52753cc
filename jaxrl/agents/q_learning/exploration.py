r"""The Q-learning agent's exploration (``agents/q_learning/core.py``) besides noisy nets (which
are the network's own, ``networks/noisy.py``): the epsilon of epsilon-greedy acting, and
DQN's parameter-space noise (``param_noise``; Plappert et al. 2018, "Parameter Space Noise
for Exploration", ICLR; the operations are ``ops/param_noise.py``'s).

With parameter-space noise the agent acts greedily in a perturbed copy of its network,
``theta~ = theta + N(0, sigma^2 I)``, kept in the state as ``{"params": theta~, "sigma",
"distance"}`` (``agents/common/param_noise.py`` builds it, as for DDPG). After every
update the scale is adapted on a batch of states against the threshold of an
epsilon-greedy policy at the schedule's current epsilon:

.. math::
    d = \mathrm{mean}_s\, KL(\mathrm{softmax}\, Q(s, .) \,\|\, \mathrm{softmax}\, Q_{\tilde
    \theta}(s, .)), \qquad \delta = -\log(1 - \epsilon + \epsilon / |A|)

``sigma`` is multiplied by ``param_noise_coefficient`` if ``d <= delta`` and divided by it
otherwise; the exploring network is then perturbed afresh at the new scale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from jaxrl.agents.common.optim import epsilon_schedule
from jaxrl.agents.common.param_noise import ParamNoise, no_param_noise
from jaxrl.agents.q_learning.config import Exploration, QHparams, QLearningConfig
from jaxrl.ops.exploration import masked_epsilon_greedy
from jaxrl.ops.param_noise import (
    adapt_noise_scale,
    epsilon_kl_threshold,
    perturb_params,
    softmax_kl,
)


class SelectFn(Protocol):
    """``(key, q_values [N, A] float32, epsilon float32 scalar, mask [N, A] bool or None)
    -> actions [N] int32``: the exploring action among the legal ones."""

    def __call__(
        self, key: jax.Array, q_values: jax.Array, epsilon: jax.Array, mask: jax.Array | None
    ) -> jax.Array: ...


class Explorer(NamedTuple):
    """How the Q-learning agent explores, as a strategy ``make_q_agent`` takes.

    noise: which network's values explore (``agents/common/param_noise.py``): the online
      network (``no_param_noise()``), or a perturbed copy adapted after every update.
    select: the exploring action from those values and the schedule's epsilon (0 with
      noisy nets or parameter noise). Greedy evaluation always uses epsilon-greedy at
      ``eval_epsilon``.
    """

    noise: ParamNoise
    select: SelectFn


def epsilon_greedy_explorer() -> Explorer:
    """Epsilon-greedy among the legal actions in the online network (DQN, Rainbow)."""
    return Explorer(noise=no_param_noise(), select=masked_epsilon_greedy)


class ParamNoiseConfig(Protocol):
    """A config with parameter-space noise (DQN's): its adaptation factor."""

    @property
    def param_noise_coefficient(self) -> float: ...


def scheduled_epsilon(
    cfg: QLearningConfig, hparams: QHparams, step: jax.Array, num_envs: int
) -> jax.Array:
    """``cfg.epsilon_schedule`` from ``hparams.epsilon_start`` to ``epsilon_end`` at env
    step ``step`` (``agents/optim.epsilon_schedule``), float32 scalar."""
    schedule = epsilon_schedule(cfg, hparams.epsilon_start, hparams.epsilon_end, num_envs)
    return schedule(step)


def current_epsilon(
    cfg: QLearningConfig,
    exploration: Exploration,
    hparams: QHparams,
    step: jax.Array,
    num_envs: int,
    explore: bool,
) -> jax.Array:
    """Epsilon-greedy's epsilon (float32 scalar): ``hparams.eval_epsilon`` for greedy
    evaluation (``explore`` False); 0 without epsilon-greedy exploration (``exploration.
    by_epsilon`` False); else ``scheduled_epsilon``."""
    if not explore:
        return hparams.eval_epsilon
    if not exploration.by_epsilon:
        return jnp.zeros((), jnp.float32)
    return scheduled_epsilon(cfg, hparams, step, num_envs)


def adapt_param_noise(
    cfg: ParamNoiseConfig,
    noise: dict[str, Any],
    params: Any,
    q_values: Callable[[Any], jax.Array],
    epsilon: jax.Array,
    num_actions: int,
    probe_key: jax.Array,
    acting_key: jax.Array,
) -> dict[str, Any]:
    """The parameter-noise state after one adaptation (module docstring): ``q_values(p)``
    gives the values ``[B, A]`` of a network with parameters ``p`` on the batch of states;
    the probe is ``params`` perturbed with ``probe_key`` at the current ``noise["sigma"]``,
    the new exploring network ``params`` perturbed with ``acting_key`` at the new scale;
    ``epsilon`` is the schedule's current value, ``num_actions`` ``|A|``."""
    sigma = noise["sigma"]
    probe = perturb_params(probe_key, params, sigma)
    distance = softmax_kl(q_values(params), q_values(probe))
    threshold = epsilon_kl_threshold(epsilon, num_actions)
    sigma = adapt_noise_scale(sigma, distance, threshold, cfg.param_noise_coefficient)
    noisy = perturb_params(acting_key, params, sigma)
    return {"params": noisy, "sigma": sigma, "distance": distance}
