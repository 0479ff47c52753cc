r"""CURL's pure parts (Laskin, Srinivas & Abbeel 2020, "CURL: Contrastive Unsupervised
Representations for Reinforcement Learning", ICML): the random-crop augmentation and the
bilinear InfoNCE loss. The learner that uses them is ``agents/auxiliary/curl.py``.

Random crop. The paper renders DMControl frames at 100x100 and crops them to 84x84 at a
random offset. An env whose frames cannot be rendered larger (Atari's 84x84 ALE frames,
MinAtar's 10x10 grids) gets the same shape back by padding first: its frames are padded
by ``pad`` pixels on each side, repeating the edge pixels (``nn.ReplicationPad2d`` in
CURL's reference Rainbow, ``aravindsrinivas/curl_rainbow``, ``agent.py``), and cropped
back to ``H x W`` at a random offset in ``[0, 2 pad]`` per sample and axis.

InfoNCE with a bilinear similarity (the paper's Section 4.3 and its Figure 5 pseudocode):
with anchors :math:`q_i` (the online encoder on one crop) and keys :math:`k_j` (the
momentum encoder on another crop of the same observations),

.. math:: \ell_{ij} = s\,(q_i^\top W k_j - \max_{j'} q_i^\top W k_{j'}), \qquad
          L = -\tfrac1B \sum_i \log \frac{\exp \ell_{ii}}{\sum_j \exp \ell_{ij}}

the positives being on the diagonal. The max subtraction (the paper's, for numerical
stability) does not change :math:`L`; ``scale`` :math:`s` is 1 in the paper and 0.1 in
its reference Rainbow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def crop_offsets(key: jax.Array, batch: int, pad: int) -> jax.Array:
    """``[batch, 2]`` int32 offsets (row, column), uniform in ``[0, 2 pad]``."""
    return jax.random.randint(key, (batch, 2), 0, 2 * pad + 1, jnp.int32)


def random_crop(x: jax.Array, key: jax.Array, pad: int) -> jax.Array:
    """``x`` ``[B, H, W, C]`` (any dtype), each sample padded by ``pad`` edge pixels on
    every side and cropped back to ``[H, W]`` at its own offset (``crop_offsets``; module
    docstring). ``pad`` 0 returns ``x``. Output: ``x``'s shape and dtype."""
    if pad == 0:
        return x
    b, h, w, c = x.shape
    padded = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = crop_offsets(key, b, pad)
    crop = lambda img, o: jax.lax.dynamic_slice(img, (o[0], o[1], 0), (h, w, c))
    return jax.vmap(crop)(padded, offsets)


def info_nce_logits(
    anchors: jax.Array, keys: jax.Array, w: jax.Array, scale: float = 1.0
) -> jax.Array:
    """``[B, B]`` float32 logits ``scale (q W k^T - rowmax)`` of ``anchors`` ``[B, D]``,
    ``keys`` ``[B, D]`` and ``w`` ``[D, D]`` (module docstring)."""
    logits = anchors @ (w @ keys.T)
    return scale * (logits - jax.lax.stop_gradient(logits.max(axis=1, keepdims=True)))


def info_nce_loss(
    anchors: jax.Array, keys: jax.Array, w: jax.Array, scale: float = 1.0
) -> tuple[jax.Array, jax.Array]:
    """CURL's bilinear InfoNCE loss ``L`` (module docstring), a float32 scalar, and the
    fraction of anchors whose own key has the largest logit (contrastive accuracy)."""
    logits = info_nce_logits(anchors, keys, w, scale)
    log_probs = jax.nn.log_softmax(logits, axis=1)
    loss = -jnp.mean(jnp.diagonal(log_probs))
    accuracy = jnp.mean(jnp.argmax(logits, axis=1) == jnp.arange(logits.shape[0]))
    return loss, accuracy.astype(jnp.float32)
