"""Actor-critic networks for policy-gradient agents (PPO, A2C).

``ActorCritic`` maps observations ``[..., *obs_shape]`` to the parameters of the action
distribution and a state value:

* discrete actions: ``logits [..., A]`` (a categorical policy);
* continuous actions: ``(mean [..., D], log_std [D])``, a diagonal Gaussian whose
  log-standard-deviation is a learned, state-independent parameter (Schulman et al. 2017;
  CleanRL's ``ppo_continuous_action.py``);

and ``value [...]``. The torso is an MLP for vector observations (CleanRL: two layers of
64 with tanh) or, for images ``[H, W, C]``, one of ``networks.torsos.CNN_TORSOS`` (the
Nature DQN CNN, the IMPALA ResNet or the MinAtar CNN, built by ``torsos.cnn_torso`` so that
the convolutions' backward pass suits the backend); ``shared=True`` feeds one
torso to both heads (the usual choice for Atari), ``shared=False`` gives the actor and the
critic torsos of their own (the usual choice for classic and continuous control).
Initialization follows CleanRL / the OpenAI baselines: orthogonal weights with gain
``sqrt(2)`` in the torso, 0.01 for the policy head and 1 for the value head, zero biases.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import flax.linen as nn
import jax

from jaxrl.networks.initializers import orthogonal
from jaxrl.networks.torsos import cnn_torso, scale_obs

Array = jax.Array

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


def _dense(size: int, gain: float) -> nn.Dense:
    return nn.Dense(size, kernel_init=orthogonal(gain), bias_init=nn.initializers.zeros)


class PolicyMLP(nn.Module):
    """MLP torso with orthogonal init: ``[..., *obs_shape]`` (flattened, cast to float32;
    integer inputs divided by 255 like every torso's, ``torsos.scale_obs``)
    -> ``[..., hidden_sizes[-1]]``, ``activation`` after every layer."""

    hidden_sizes: Sequence[int]
    obs_ndim: int = 1
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        x = scale_obs(obs)
        x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))
        for size in self.hidden_sizes:
            x = _ACTIVATIONS[self.activation](_dense(size, math.sqrt(2.0))(x))
        return x


class ActorCritic(nn.Module):
    """Policy and value network; see the module docstring.

    Attributes:
      action_dim: number of actions (discrete) or action dimensions (continuous).
      discrete: categorical policy if True, diagonal Gaussian otherwise.
      hidden_sizes: MLP widths, or the dense widths after the CNN for images.
      obs_ndim: number of observation axes of the MLP torso's input.
      torso: ``"mlp"`` or a convolutional torso of ``CNN_TORSOS`` (``cnn_torso``) (``"nature"``,
        ``"impala"``, ``"minatar"``) for images; resolve ``"auto"`` with
        ``networks.torsos.torso_name`` first.
      activation: ``"tanh"`` or ``"relu"`` (MLP torsos only; the CNN uses ReLU).
      torso_module: an unbound torso module (``networks.make_torso`` of a torso spec or a
        registered name), cloned for each side; overrides ``torso``.
      shared: one torso for actor and critic, else one each.
      log_std_init: initial value of the Gaussian's state-independent ``log_std``.
      shared_images: with a ``multi`` torso module (``networks.multi_input``), its image
        encoders (``multi_input.SharedEncoders``) built once, as ``images``, and read by
        the actor's and the critic's torso alike; None: each torso has its own.

    ``__call__(obs) -> (dist, value)`` with ``dist`` = ``logits`` or ``(mean, log_std)``;
    ``actor(obs) -> dist`` and ``critic(obs) -> value`` evaluate one side only.
    """

    action_dim: int
    discrete: bool
    hidden_sizes: Sequence[int] = (64, 64)
    obs_ndim: int = 1
    activation: str = "tanh"
    shared: bool = False
    log_std_init: float = 0.0
    torso: str = "mlp"
    torso_module: nn.Module | None = None
    shared_images: nn.Module | None = None

    def setup(self):
        if self.shared_images is not None:
            self.images = self.shared_images.clone()

        def torso():
            if self.shared_images is not None and self.torso_module is not None:
                return self.torso_module.clone(shared=self.images)
            if self.torso_module is not None:  # a torso spec or a registered torso
                return self.torso_module.clone()
            if self.torso != "mlp":
                return cnn_torso(self.torso, self.hidden_sizes)
            return PolicyMLP(tuple(self.hidden_sizes), self.obs_ndim, self.activation)

        self.actor_torso = torso()
        if not self.shared:
            self.critic_torso = torso()
        self.policy_head = _dense(self.action_dim, 0.01)
        self.value_head = _dense(1, 1.0)
        if not self.discrete:
            self.log_std = self.param(
                "log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,)
            )

    def actor(self, obs: Array):
        out = self.policy_head(self.actor_torso(obs))
        return out if self.discrete else (out, self.log_std)

    def critic(self, obs: Array) -> Array:
        torso = self.actor_torso if self.shared else self.critic_torso
        return self.value_head(torso(obs))[..., 0]

    def __call__(self, obs: Array):
        if self.shared:
            features = self.actor_torso(obs)
            out = self.policy_head(features)
            value = self.value_head(features)[..., 0]
            return (out if self.discrete else (out, self.log_std)), value
        return self.actor(obs), self.critic(obs)
