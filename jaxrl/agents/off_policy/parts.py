"""The optional parts of the off-policy actor-critic skeleton (``agents/off_policy/core.py``):
replay batches with n-step returns and importance weights, the learning loop of gradient
steps with prioritized replay and hard target updates, exploration noise, and
parameter-space noise (Plappert et al. 2018). Each is a pure function of the skeleton's
config and state; ``make_off_policy_agent`` composes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.agents.auxiliary import base as auxiliary
from jaxrl.agents.common.param_noise import adapt_param_noise
from jaxrl.agents.common.replay_sampling import ReplaySampling, uniform_sampling
from jaxrl.ops import noise as noise_ops
from jaxrl.ops.returns import n_step_bootstrap
from jaxrl.types import Transition

UNIFORM = uniform_sampling()


def replay_batch(
    cfg: Any,
    sample: Any,
    num_items: ArrayLike,
    hparams,
    sampling: ReplaySampling = UNIFORM,
) -> Transition:
    """A sampled window ``[B, n, ...]`` as the one-step-shaped ``Transition`` ``[B, ...]``
    that ``Algorithm.gradient_step`` takes: for ``n_step > 1`` the reward is the n-step
    discounted sum, ``next_obs`` the bootstrap observation and ``extras["discount"]`` the
    bootstrap coefficient (``td_target``); ``sampling``'s extras added (prioritized replay:
    ``extras["weight"]``, the importance weights ``[B]`` of exponent ``hparams["beta"]``)."""
    batch = sample.experience
    if cfg.n_step == 1:
        batch = jax.tree.map(lambda x: x[:, 0], batch)  # [B, 1, ...] -> [B, ...]
    else:
        nstep = n_step_bootstrap(batch.reward, batch.terminated, batch.truncated, hparams["gamma"])
        rows = jnp.arange(batch.reward.shape[0])
        pick = lambda x: x[rows, nstep.bootstrap_index]
        batch = Transition(
            obs=jax.tree.map(lambda x: x[:, 0], batch.obs),
            action=batch.action[:, 0],
            reward=nstep.reward_sum,
            next_obs=jax.tree.map(pick, batch.next_obs),
            terminated=pick(batch.terminated),
            truncated=pick(batch.truncated),
            extras={"discount": nstep.bootstrap_discount},
        )
    extras = sampling.weights(sample.probabilities, num_items, hparams.get("beta"))
    return batch._replace(extras={**batch.extras, **extras})


def hard_target_update(learner: Any, period: int) -> Any:
    """Targets copied from the online networks when ``learner.updates`` is a multiple of
    ``period`` (after the gradient step that made it so), unchanged otherwise."""
    copy = learner.updates % period == 0
    pick = lambda target, online: jnp.where(copy, online, target)
    target_actor = learner.target_actor_params
    if target_actor is not None:
        target_actor = jax.tree.map(pick, target_actor, learner.actor_params)
    return dataclasses.replace(
        learner,
        target_actor_params=target_actor,
        target_critic_params=jax.tree.map(
            pick, learner.target_critic_params, learner.critic_params
        ),
    )


def exploration_noise(
    kind: str, h: dict[str, jax.Array], carry: Any, key: jax.Array, shape: tuple[int, ...]
) -> tuple[jax.Array, Any]:
    """``(noise [N, A], new carry)`` of exploration noise ``kind`` (``OffPolicyConfig.
    exploration_noise``) with the scales in ``h`` (``noise_mu``, ``noise_sigma``, ...)."""
    if kind == "gaussian":
        return noise_ops.gaussian_noise(key, shape, h["noise_mu"], h["noise_sigma"]), carry
    if kind == "clipped_gaussian":
        args = (h["noise_mu"], h["noise_sigma"], h["noise_low"], h["noise_high"])
        return noise_ops.clipped_gaussian_noise(key, shape, *args), carry
    if kind == "uniform":
        return noise_ops.uniform_noise(key, shape, h["noise_low"], h["noise_high"]), carry
    if kind == "ou":
        args = (h["noise_mu"], h["noise_sigma"], h["noise_theta"], h["noise_dt"])
        return noise_ops.ou_step(carry, key, *args)
    return jnp.zeros(shape, jnp.float32), carry


def learn(
    cfg: Any,
    buffer: Any,
    algorithm: Any,
    learner: Any,
    buffer_state: Any,
    hparams: dict[str, jax.Array],
    key: jax.Array,
    num_steps: int,
    aux: Any = None,
    sampling: ReplaySampling = UNIFORM,
) -> tuple[tuple[Any, Any], dict[str, jax.Array]]:
    """``num_steps`` gradient steps of ``algorithm`` on batches sampled from ``buffer``, in
    one ``lax.scan``. Returns ``((learner, threaded), metrics)``: ``threaded`` the buffer
    state with its priorities updated under prioritized ``sampling``, else None; metrics
    averaged over the steps. With ``aux`` (``agents/auxiliary/base.py``) each batch first
    goes through ``auxiliary.step`` (the learners' updates, demonstrations, reward terms;
    their state in ``learner.aux``). With ``target_update_period`` the algorithm's Polyak
    steps become no-ops (``tau`` 0) and the targets are copied every period instead."""
    h = {**hparams, "tau": jnp.zeros((), jnp.float32)} if cfg.target_update_period else hparams
    steps = auxiliary.auxiliary_steps(aux, windows=False)

    def step(carry, key):
        learner, carried = carry
        buffer_now = sampling.source(buffer_state, carried)
        sample_key, step_key = jax.random.split(key)
        sample = buffer.sample(buffer_now, sample_key)
        batch = replay_batch(cfg, sample, buffer.num_items(buffer_now), hparams, sampling)
        aux_state, batch, aux_metrics = steps.prepare(learner.aux, batch, h, key)
        learner = dataclasses.replace(learner, aux=aux_state)
        learner, metrics = loss_term_step(algorithm, steps, learner, batch, h, key, step_key)
        metrics = {**metrics, **aux_metrics}
        priorities = metrics.pop("td_error", None)  # with weights: prioritized replay
        carried = sampling.feed_back(carried, sample.indices, priorities, hparams)
        if cfg.target_update_period:
            learner = hard_target_update(learner, cfg.target_update_period)
        return (learner, carried), metrics

    carry = (learner, sampling.threaded(buffer_state))
    carry, metrics = jax.lax.scan(step, carry, jax.random.split(key, num_steps))
    return carry, jax.tree.map(jnp.nanmean, metrics)


def loss_term_step(
    algorithm: Any,
    steps: auxiliary.AuxiliarySteps,
    learner: Any,
    batch: Transition,
    h: dict[str, jax.Array],
    key: jax.Array,
    step_key: jax.Array,
) -> tuple[Any, dict[str, jax.Array]]:
    """One gradient step of ``algorithm`` with the loss terms of the learners of
    ``steps`` (CURL's, at the critic's parameters before the step; none without such a
    learner): their gradient is added to the critic loss's (``critic_grads``), then each
    learner's ``after_step`` sees its own gradient and the critic's new parameters.
    Returns ``(learner, metrics)``, the learners' metrics among them."""
    grads, aux_grads, aux_metrics = steps.loss_grads(learner.critic_params, learner.aux, batch, key)
    learner, metrics = algorithm.gradient_step(learner, batch, h, step_key, critic_grads=grads)
    aux_state = steps.after_step(learner.aux, aux_grads, learner.critic_params)
    return dataclasses.replace(learner, aux=aux_state), {**metrics, **aux_metrics}


def param_noise_step(
    cfg: Any, buffer: Any, policy: Callable, state: Any, metrics: dict, key: jax.Array
) -> tuple[Any, dict]:
    """Adapts the parameter-noise scale on a replay batch's states and re-perturbs the
    actor (``adapt_param_noise``); adds ``param_noise_sigma`` and ``_distance`` to
    ``metrics``."""
    sample_key, noise_key = jax.random.split(jax.random.fold_in(key, 1))
    obs = jax.tree.map(lambda x: x[:, 0], buffer.sample(state.buffer, sample_key).experience.obs)
    noise = adapt_param_noise(
        cfg, policy, state.learner.actor_params, obs, state.param_noise, noise_key
    )
    metrics = {
        **metrics,
        "param_noise_sigma": noise["sigma"],
        "param_noise_distance": noise["distance"],
    }
    return dataclasses.replace(state, param_noise=noise), metrics
