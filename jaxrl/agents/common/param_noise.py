"""Parameter-space noise (Plappert et al. 2018, "Parameter Space Noise for Exploration"):
the perturbed actor's state at init and its adaptive scale, for every agent that explores
with it (the Q-learning agent, the off-policy actor-critics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl.ops import param_noise as pn_ops


def init_param_noise(cfg: Any, actor_params: Any, key: jax.Array) -> dict[str, Any]:
    """The parameter-noise state at init: the actor perturbed with the initial scale."""
    sigma = jnp.asarray(cfg.param_noise_sigma, jnp.float32)
    return {
        "params": pn_ops.perturb_params(key, actor_params, sigma),
        "sigma": sigma,
        "distance": jnp.zeros((), jnp.float32),
    }


def adapt_param_noise(
    cfg: Any, policy: Callable, actor_params: Any, obs: jax.Array, noise: dict, key: jax.Array
) -> dict[str, Any]:
    """Plappert et al. 2018's adaptive scale for a deterministic actor
    (``ops/param_noise.py``): on the states ``obs`` ``[B, ...]``, the RMS distance between
    the actions of ``actor_params`` and of a fresh perturbation at the current scale; the
    scale grows by ``param_noise_coefficient`` if it is at most ``param_noise_target``
    and shrinks otherwise; the exploring actor is then re-perturbed at the new scale."""
    probe_key, acting_key = jax.random.split(key)
    sigma = noise["sigma"]
    probe = pn_ops.perturb_params(probe_key, actor_params, sigma)
    distance = pn_ops.action_distance(
        policy(actor_params, obs, None, False), policy(probe, obs, None, False)
    )
    sigma = pn_ops.adapt_noise_scale(
        sigma, distance, cfg.param_noise_target, cfg.param_noise_coefficient
    )
    params = pn_ops.perturb_params(acting_key, actor_params, sigma)
    return {"params": params, "sigma": sigma, "distance": distance}


class ParamNoise(NamedTuple):
    """Parameter-space noise as a skeleton's exploration strategy; ``no_param_noise()``'s
    functions are identities.

    init: ``(params, key) -> noise state`` (the state's ``param_noise``; None without).
    acting: ``(noise state, params, epsilon) -> (params, epsilon)``, what explores: the
      perturbed network, greedy (epsilon 0), or the unchanged arguments.
    adapt: ``(skeleton state, metrics, key) -> (skeleton state, metrics)``, the scale
      adapted after an update (the skeleton's own distance measure), with its metrics.
    """

    init: Callable[[Any, jax.Array], Any]
    acting: Callable[[Any, Any, Any], tuple[Any, Any]]
    adapt: Callable[[Any, dict, jax.Array], tuple[Any, dict]]


def no_param_noise() -> ParamNoise:
    """No parameter noise: nothing in the state, the online network explores."""
    return ParamNoise(
        init=lambda params, key: None,
        acting=lambda noise, params, epsilon: (params, epsilon),
        adapt=lambda state, metrics, key: (state, metrics),
    )


def param_noise(cfg: Any, adapt: Callable[[Any, dict, jax.Array], tuple[Any, dict]]) -> ParamNoise:
    """Parameter noise of ``cfg``'s ``param_noise_*`` options: the perturbed network
    explores greedily; ``adapt`` is the skeleton's adaptation (Q-values or actions)."""
    return ParamNoise(
        init=lambda params, key: init_param_noise(cfg, params, key),
        acting=lambda noise, params, epsilon: (noise["params"], jnp.zeros((), jnp.float32)),
        adapt=adapt,
    )
