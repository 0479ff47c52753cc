r"""GenRL-style action priors (as in Emote's ``emote.algorithms.genrl``): a variational
autoencoder over actions conditioned on observations, trained on demonstrations, and an
off-policy actor-critic (SAC, TD3, DDPG) that acts in the VAE's latent space through the
frozen decoder.

The VAE (``ActionVAE``) has an encoder :math:`q(z|a, s) = \mathcal N(\mu, \sigma^2)`
(a ReLU MLP on ``[a, s]``) and a decoder :math:`\hat a = \tanh(g(z, s))` (a ReLU MLP on
``[z, s]``): its output is bounded to the normalized action box ``[-1, 1]^A``, mapped to
the env's box as every actor-critic action is (``low + (a + 1)(high - low) / 2``). It is
trained by ``ops.vae.elbo_loss`` (reconstruction + ``vae_beta`` * KL; Kingma & Welling
2014) on the demonstration file's ``(obs, action)`` pairs, actions normalized to
``[-1, 1]``, for ``vae_steps`` Adam steps (gradient norm clipped at 10, Emote's
``VAELoss`` default), **inside the agent's ``init``**: it is the state of an auxiliary
learner (``agents/auxiliary/base.py``) named ``vae_prior``, so each member of a ``--seeds``
run trains its own VAE from its own key, the decoder is checkpointed with the agent, and
its ``update`` changes nothing (the decoder is frozen, Emote's ``DecoderWrapper``).

The agent is the plain actor-critic built for a latent action box ``[-1, 1]^L``
(``latent_spec``; ``L = latent_size``): its actor outputs a latent ``u``, the env gets

.. math:: a = w\, \mathrm{dec}(m u, s) + (1 - w)\, u

with :math:`m` = ``latent_multiplier`` (Emote's 3.0: the policy's squashed ``[-1, 1]``
reaches three prior standard deviations) and :math:`w` = ``prior_weight`` (1: the
decoded action; 0, possible when ``L`` equals the action size, makes the latent the
action itself, SAC bit for bit, so that one ``--sweep agent.prior_weight=0,1`` run
compares SAC with and without the prior in one program). **The replay buffer stores the
latent** ``u`` (``act`` returns it in ``extras["latent"]`` and ``update`` puts it in the
rollout's ``action``): the critics are :math:`Q(s, u)` and SAC's entropy is the latent
policy's, as in GenRL, where Emote's memory proxy stores the encoded action. During the
random warm-up (``learning_starts``) the latents are uniform, so the decoder turns them
into demonstration-like actions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl.agents.auxiliary.extra_loss import ExtraLoss
from jaxrl.agents.common.action_box import action_box
from jaxrl.buffers.demonstrations import load_npz
from jaxrl.networks import MLP
from jaxrl.ops.vae import elbo_loss, reparameterize
from jaxrl.types import Agent, Box, ConfigError, EnvSpec, main_obs
from jaxrl.validation import Options, option

VAE_GRAD_NORM = 10.0  # Emote's VAELoss max_grad_norm


@dataclasses.dataclass(frozen=True)
class LatentPriorOptions(Options):
    """A VAE action prior (module docstring); off by default.

    Attributes:
      latent_prior: act in the latent space of a VAE trained on ``demo_file``.
      latent_size: ``L``, the latent's size (>= 1); None: the action's size.
      latent_multiplier: ``m``, the policy's latent scaled before decoding (Emote's
        ``DecoderWrapper`` default 3.0).
      vae_beta: the KL's weight in the ELBO (Emote's ``VariationalAutoencoder`` 0.01).
      vae_hidden_sizes: the encoder's and the decoder's ReLU layers (256, 256: SAC's).
      vae_lr: the VAE's Adam learning rate (1e-3, Adam's default of Kingma & Ba 2015).
      vae_steps: gradient steps of VAE pre-training, run in ``init`` (2,000).
      vae_batch_size: demonstrations per VAE step (256, SAC's batch).
      prior_weight: ``w`` in [0, 1], the decoded action's share (sweepable); below 1 it
        needs ``latent_size`` equal to the action size.
    """

    latent_prior: bool = False
    latent_size: int | None = option(None, ge=1)
    latent_multiplier: float = option(3.0, gt=0)
    vae_beta: float = option(0.01, ge=0)
    vae_hidden_sizes: tuple[int, ...] = option((256, 256), ge=1, min_len=1)
    vae_lr: float = option(1e-3, gt=0)
    vae_steps: int = option(2000, ge=1)
    vae_batch_size: int = option(256, ge=1)
    prior_weight: float = option(1.0, ge=0, le=1)


class ActionVAE(nn.Module):
    """The conditional VAE over actions: ``encode(action [B, A], cond [B, C]) -> (mean,
    log_std)`` ``[B, L]`` (log_std clipped to [-10, 2]); ``decode(latent [B, L], cond) ->
    action [B, A]`` in ``[-1, 1]`` (tanh); ``__call__(action, cond, key) -> (action_hat,
    mean, log_std)`` with a reparameterized latent. float32 throughout."""

    action_size: int
    latent_size: int
    hidden_sizes: tuple[int, ...]

    def setup(self):
        self.encoder = MLP(self.hidden_sizes)
        self.encoder_out = nn.Dense(2 * self.latent_size)
        self.decoder = MLP(self.hidden_sizes)
        self.decoder_out = nn.Dense(self.action_size)

    def encode(self, action: jax.Array, cond: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = self.encoder_out(self.encoder(jnp.concatenate([action, cond], axis=-1)))
        mean, log_std = jnp.split(out, 2, axis=-1)
        return mean, jnp.clip(log_std, -10.0, 2.0)

    def decode(self, latent: jax.Array, cond: jax.Array) -> jax.Array:
        return jnp.tanh(self.decoder_out(self.decoder(jnp.concatenate([latent, cond], -1))))

    def __call__(self, action, cond, key):
        mean, log_std = self.encode(action, cond)
        return self.decode(reparameterize(key, mean, log_std), cond), mean, log_std


def condition(obs: Any) -> jax.Array:
    """``[B, C]`` float32: the main observation flattened (the VAE's condition)."""
    o = main_obs(obs)
    return jnp.asarray(o, jnp.float32).reshape(o.shape[0], -1)


def pretrain(
    vae: ActionVAE, params: Any, obs: jax.Array, actions: jax.Array, key: jax.Array, cfg: Any
) -> tuple[Any, dict[str, jax.Array]]:
    """``(params, metrics)`` after ``cfg.vae_steps`` Adam steps of ``elbo_loss`` on batches
    of ``cfg.vae_batch_size`` drawn uniformly from ``obs`` ``[M, C]`` and ``actions``
    ``[M, A]`` (normalized); metrics are the last step's ``restore_loss``, ``kl_loss``."""
    opt = optax.chain(optax.clip_by_global_norm(VAE_GRAD_NORM), optax.adam(cfg.vae_lr))

    def step(carry, key):
        params, opt_state = carry
        index_key, z_key = jax.random.split(key)
        index = jax.random.randint(index_key, (cfg.vae_batch_size,), 0, obs.shape[0])
        a, c = actions[index], obs[index]

        def loss_fn(p):
            a_hat, mean, log_std = vae.apply(p, a, c, z_key)
            return elbo_loss(a, a_hat, mean, log_std, cfg.vae_beta)

        (_, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), parts

    keys = jax.random.split(key, cfg.vae_steps)
    (params, _), parts = jax.lax.scan(step, (params, opt.init(params)), keys)
    return params, jax.tree.map(lambda x: x[-1], parts)


def make_vae_prior(
    obs: np.ndarray, actions: np.ndarray, latent_size: int, cfg: Any
) -> tuple[ExtraLoss, ActionVAE]:
    """The ``vae_prior`` auxiliary learner (module docstring) pre-trained on ``obs``
    ``[M, C]`` and normalized ``actions`` ``[M, A]``, and its module. Its state is
    ``{"params", "restore_loss", "kl_loss"}``; ``update`` reports the losses unchanged."""
    vae = ActionVAE(actions.shape[1], latent_size, tuple(cfg.vae_hidden_sizes))

    def init(key, agent_params=None):
        init_key, train_key, z_key = jax.random.split(key, 3)
        o, a = jnp.asarray(obs, jnp.float32), jnp.asarray(actions, jnp.float32)
        params = vae.init(init_key, a[:1], o[:1], z_key)
        params, parts = pretrain(vae, params, o, a, train_key, cfg)
        return {"params": params, **parts}

    def update(state, batch, h, key):
        return state, {"restore_loss": state["restore_loss"], "kl_loss": state["kl_loss"]}

    return ExtraLoss(init=init, update=update, hparams={"prior_weight": cfg.prior_weight}), vae


def latent_spec(spec: EnvSpec, latent_size: int) -> EnvSpec:
    """``spec`` with the action space ``Box([-1, 1]^L)`` the latent policy acts in."""
    box = Box((latent_size,), (-1.0,) * latent_size, (1.0,) * latent_size)
    return dataclasses.replace(spec, action_space=box)


def _prior_inputs(spec: EnvSpec, cfg: Any, name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``(obs [M, C], normalized actions [M, A], L)`` from ``cfg.demo_file``; ConfigError
    for a missing or bad file, or options that do not go with the prior."""

    low, high = action_box(spec, name)
    if cfg.demo_file is None:
        raise ConfigError(
            f"agent '{name}': latent_prior needs demonstrations to train its VAE: give "
            "--agent.demo_file PATH.npz (transitions, e.g. from python -m jaxrl.export_buffer)"
        )
    if cfg.demo_ratio > 0 or cfg.amp or cfg.action_symmetry:
        raise ConfigError(
            f"agent '{name}': latent_prior uses demo_file for its VAE only; set demo_ratio 0, "
            "amp false and action_symmetry false"
        )
    size = cfg.latent_size or low.shape[0]
    if cfg.prior_weight < 1 and size != low.shape[0]:
        raise ConfigError(
            f"agent '{name}': prior_weight {cfg.prior_weight} < 1 blends the latent into the "
            f"action, so latent_size must be the action size {low.shape[0]}, got {size}"
        )
    try:
        demos = load_npz(cfg.demo_file, spec)
    except ValueError as e:
        raise ConfigError(f"agent '{name}': {e}") from None
    actions = np.clip((demos.action - (high + low) / 2) / ((high - low) / 2), -1.0, 1.0)
    return np.asarray(condition(demos.obs)), actions.astype(np.float32), size


def with_latent_prior(
    spec: EnvSpec, cfg: Any, name: str, build: Callable[[EnvSpec, Any, tuple], Agent]
) -> Agent:
    """The agent ``build(spec, cfg, learners)`` makes (an actor-critic skeleton agent,
    ``learners`` its extra auxiliary learners), acting through the VAE prior when
    ``cfg.latent_prior`` (module docstring); without it, ``build(spec, cfg, ())``."""
    if not cfg.latent_prior:
        return build(spec, cfg, ())

    obs, actions, size = _prior_inputs(spec, cfg, name)
    learner, vae = make_vae_prior(obs, actions, size, cfg)
    inner = build(latent_spec(spec, size), dataclasses.replace(cfg, demo_file=None),
                  (("vae_prior", learner),))  # fmt: skip
    low, high = action_box(spec, name)
    centre, half = (high + low) / 2, (high - low) / 2
    blend = size == low.shape[0]

    def act(state, obs, carry, key, explore: bool = True):
        latent, carry, extras = inner.act(state, obs, carry, key, explore)
        params = state.learner.aux["vae_prior"]["params"]
        decoded = vae.apply(
            params, cfg.latent_multiplier * latent, condition(obs), method=ActionVAE.decode
        )
        if blend:
            w = state.hparams["prior_weight"]
            decoded = w * decoded + (1.0 - w) * latent
        return centre + half * decoded, carry, {**extras, "latent": latent}

    def update(state, rollout, key):
        return inner.update(state, rollout._replace(action=rollout.extras["latent"]), key)

    return inner._replace(act=act, update=update)


__all__ = ["ActionVAE", "LatentPriorOptions", "latent_spec", "make_vae_prior", "with_latent_prior"]
