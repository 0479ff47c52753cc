"""Extra loss terms as a user writes them (``--agent.extra_losses MODULE:FN`` with
``--import MODULE``), in a module that registers nothing when imported."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.agents import ExtraLoss, sample_data


def l2(spec):
    """``l2_weight * sum(theta^2)`` over the agent's parameters, and a callback that copies
    the update's ``loss`` (DQN's) into ``l2/seen_loss``."""

    def loss(state, params, batch, h, key):
        total = sum(jnp.sum(jnp.square(p)) for p in jax.tree.leaves(params))
        return h["l2_weight"] * total, {"norm2": total}

    def on_metrics(metrics, state):
        return {**metrics, "l2/seen_loss": metrics["loss"]}

    return ExtraLoss(
        init=lambda key, params: {}, loss=loss, hparams={"l2_weight": 0.01}, on_metrics=on_metrics
    )


REFERENCE = np.arange(12, dtype=np.float32).reshape(6, 2)


def reference_mean(spec):
    """A data group (``REFERENCE`` rows) sampled per update; reports the rows' mean."""

    def loss(state, params, batch, h, key):
        rows = sample_data(state["data"], key, 4)
        return jnp.zeros((), jnp.float32), {"rows_mean": rows.mean()}

    return ExtraLoss(init=lambda key, params: {}, loss=loss, data=REFERENCE)


def per_row_loss(spec):  # the wrong shape: [B], not a scalar
    return ExtraLoss(init=lambda key, params: {}, loss=lambda s, p, b, h, k: (b.reward, {}))


def not_a_loss(spec):
    return lambda params: 0.0
