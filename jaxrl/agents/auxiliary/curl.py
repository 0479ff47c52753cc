r"""CURL (Laskin, Srinivas & Abbeel 2020, "CURL: Contrastive Unsupervised Representations
for Reinforcement Learning", ICML) as an auxiliary learner with a loss term
(``agents/auxiliary/base.py``, "Loss terms on the agent's parameters").

On every gradient step of the agent, two random crops of the replay batch's observations
(``ops.contrastive.random_crop``) go through two encoders: the *anchors* through the
agent's own torso (its ``params``, so the contrastive gradient shapes the encoder that the
Q-head reads) and a projection head, the *keys* through a momentum copy of both (no
gradient). The bilinear InfoNCE loss (``ops.contrastive.info_nce_loss``) with a learned
``W`` ``[D, D]``, weighted by ``curl_weight``, is added to the agent's loss:

.. math:: L = L_{RL}(\theta) + w\, L_{NCE}(\theta, \phi, W), \qquad
          \bar\theta \leftarrow (1 - \tau)\bar\theta + \tau\theta,\;
          \bar\phi \leftarrow (1 - \tau)\bar\phi + \tau\phi

(:math:`\theta` the agent's encoder, :math:`\phi` the projection head; bars: the momentum
copies). The agent's RL loss sees the un-augmented observations, as in CURL's Rainbow.

Defaults follow CURL's reference Rainbow (``aravindsrinivas/curl_rainbow``, the code of the
paper's Atari 100k table): projection ``Dense(256) -> LayerNorm -> ReLU -> Dense(128) ->
LayerNorm`` on the encoder's features, ``W`` drawn uniform in ``[0, 1)``, momentum 0.999
(``tau`` 0.001), logits scaled by 0.1, loss weight 1 (their 0.01 for Pong, Boxing, Private
Eye and Freeway), Adam at the agent's 1e-4. The paper's DMControl SAC uses ``tau`` 0.05 and
no scale. Here the encoder is the agent's whole torso (its convolutions and dense layers;
the reference's head starts from the convolutions' output), and ``W`` and the projection
head have their own Adam (the reference has one Adam over all, clipped together).
"""

from __future__ import annotations

from typing import Any, cast

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.auxiliary.base import Encoder
from jaxrl.agents.auxiliary.extra_loss import ExtraLoss
from jaxrl.ops.contrastive import info_nce_loss, random_crop
from jaxrl.ops.targets import soft_update
from jaxrl.types import Transition, main_obs


class Projection(nn.Module):
    """``[B, F] -> [B, dim]``: ``Dense(hidden) -> LayerNorm -> ReLU -> Dense(dim) ->
    LayerNorm`` (CURL's reference Rainbow's contrastive head)."""

    hidden: int = 256
    dim: int = 128

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.LayerNorm()(nn.Dense(self.hidden)(x)))
        return nn.LayerNorm()(nn.Dense(self.dim)(x))


def curl_loss(
    encoder: Encoder,
    proj: Projection,
    state: dict[str, Any],
    params: Any,
    obs: jax.Array,
    key: jax.Array,
    pad: int,
    scale: float,
) -> tuple[jax.Array, jax.Array]:
    """InfoNCE of two crops of ``obs`` ``[B, H, W, C]``: anchors from the agent's encoder
    (``params``) and ``state["params"]["proj"]``, keys from ``state["target"]`` without
    gradient; returns ``(loss, accuracy)`` (``ops.contrastive.info_nce_loss``)."""
    anchor_key, key_key = jax.random.split(key)
    features = encoder.apply(encoder.params(params), random_crop(obs, anchor_key, pad))
    anchors = cast(jax.Array, proj.apply(state["params"]["proj"], features))
    target = state["target"]
    key_features = encoder.apply(target["encoder"], random_crop(obs, key_key, pad))
    keys = jax.lax.stop_gradient(cast(jax.Array, proj.apply(target["proj"], key_features)))
    return info_nce_loss(anchors, keys, state["params"]["W"], scale)


def make_curl(
    encoder: Encoder,
    pad: int = 4,
    hidden: int = 256,
    dim: int = 128,
    scale: float = 0.1,
    weight: float = 1.0,
    tau: float = 0.001,
    lr: float = 1e-4,
    adam_eps: float = 1.5e-4,
) -> ExtraLoss:
    """CURL on ``encoder`` (module docstring): crops padded by ``pad`` pixels, a projection
    of ``hidden`` and ``dim`` units, logits scaled by ``scale``; ``hparams`` ``curl_weight``
    (the loss weight), ``curl_tau`` (momentum-encoder update) and ``curl_lr`` (Adam on
    ``W`` and the projection; ``adam_eps`` its epsilon)."""
    proj = Projection(hidden, dim)
    adam = optax.scale_by_adam(eps=adam_eps)

    def init(key, params):
        enc = encoder.params(params)
        obs = jnp.zeros((1, *encoder.obs_shape), encoder.obs_dtype)
        features = jax.eval_shape(encoder.apply, enc, obs)
        proj_key, w_key = jax.random.split(key)
        proj_params = proj.init(proj_key, jnp.zeros(features.shape, jnp.float32))
        own = {"proj": proj_params, "W": jax.random.uniform(w_key, (dim, dim), jnp.float32)}
        target = {"encoder": enc, "proj": proj_params}
        return {"params": own, "opt_state": adam.init(own), "target": target}

    def loss(state, params, batch: Transition, h, key):
        nce, accuracy = curl_loss(
            encoder, proj, state, params, main_obs(batch.obs), key, pad, scale
        )
        return h["curl_weight"] * nce, {"loss": nce, "accuracy": accuracy}

    def after_step(state, grads, params, h):
        updates, opt_state = adam.update(grads, state["opt_state"], state["params"])
        own = optax.apply_updates(
            state["params"], jax.tree.map(lambda u: -h["curl_lr"] * u, updates)
        )
        online = {"encoder": encoder.params(params), "proj": own["proj"]}
        target = soft_update(state["target"], online, h["curl_tau"])
        return {**state, "params": own, "opt_state": opt_state, "target": target}

    hparams = {"curl_weight": weight, "curl_tau": tau, "curl_lr": lr}
    return ExtraLoss(init=init, loss=loss, after_step=after_step, hparams=hparams)


__all__ = ["Encoder", "Projection", "curl_loss", "make_curl"]
