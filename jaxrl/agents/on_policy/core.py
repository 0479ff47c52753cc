"""The on-policy skeleton: rollout -> advantages -> epochs x minibatches -> loss.

Every on-policy learner here has the same update: take the rollout ``[T, N]`` the runner
collected with ``act``, compute advantages and value targets from it, flatten it to
``[T * N]`` samples, and take ``update_epochs x num_minibatches`` gradient steps, each on
one minibatch of a fresh permutation per epoch. What differs between learners is the loss
and its hyperparameters. The skeleton has two layers:

* Generic parts, for any on-policy learner (PPO, A2C; IMPALA's V-trace learner and PQN's
  Q(lambda) learner can take them as they are): ``make_optimizer`` (global-norm clipping
  chained before Adam), ``gradient_step`` (one step of a loss on one minibatch, with the
  learning rate read from the state for sweeps) and ``run_epochs`` (the epochs x
  minibatches scan).
* The actor-critic learner built on them (``make_actor_critic``): the ``ActorCritic``
  network, observation normalization, reward scaling, GAE, legal-action masks; it takes an
  ``Objective``, the only part PPO (``agents/on_policy/ppo.py``) and A2C
  (``agents/on_policy/a2c.py``) define: their hyperparameters, their epochs and minibatches,
  and their policy and value losses. Its options and the hyperparameters in its state are
  ``agents/on_policy/config.py``'s; the rollout's way to a batch (learning rewards, GAE,
  flattening) and the state after an update are ``agents/on_policy/batches.py``'s.

Legal-action masks: with a dict observation carrying ``"action_mask"``, the logits of
illegal actions are replaced by the lowest float (``ops.distributions.categorical_mask``)
in acting and in the loss alike, so sampled and greedy actions are always legal and the
ratio of new to old log-probabilities compares the same distributions. Networks see the
main observation (``types.main_obs``); observation normalization applies to it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, overload

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.common.optim import (
    OptimizerOptions,
    clip_by_global_norm,
    scale_transform,
    scheduled_lr,
)
from jaxrl.agents.on_policy.batches import after_update, rollout_batch
from jaxrl.agents.on_policy.config import ActorCriticConfig
from jaxrl.buffers.rollout import RolloutBatch, shuffled_minibatches
from jaxrl.networks import multi_input
from jaxrl.networks.policies import ActorCritic
from jaxrl.networks.torsos import CNN_TORSOS, refuse, torso_name
from jaxrl.ops import distributions as D
from jaxrl.ops.normalization import RunningMeanStd, init_running_stats, normalize
from jaxrl.ops.policy_gradient import normalize_advantages
from jaxrl.types import (
    OBS,
    ActFn,
    Agent,
    Box,
    ConfigError,
    Discrete,
    EnvSpec,
    InitFn,
    Transition,
    action_mask,
    main_obs,
    shared_field,
)

Array = jax.Array
NetworkT = TypeVar("NetworkT", bound=ActorCritic)


def make_optimizer(eps: float, cfg: OptimizerOptions | None = None) -> optax.GradientTransformation:
    """Global-norm clipping before ``cfg.optimizer``'s scaling (``agents/common/optim.py``; None:
    Adam); ``gradient_step`` takes the step ``-lr * u`` with the state's (scheduled) lr."""
    return optax.chain(clip_by_global_norm(), scale_transform(cfg or OptimizerOptions(), eps))


def gradient_step(
    loss_fn: Callable[..., tuple[Array, Any]],
    optimizer: optax.GradientTransformationExtraArgs,
    hparams: Any,
    lr: Array,
) -> Callable:
    """``step((params, opt_state), minibatch) -> ((params, opt_state), aux)`` for
    ``lax.scan``: the gradient of ``loss_fn(params, hparams, minibatch) -> (loss, aux)``,
    clipped to ``hparams.max_grad_norm``, through the optimizer, times ``-lr``."""

    def step(carry, minibatch):
        params, opt_state = carry
        grads, aux = jax.grad(loss_fn, has_aux=True)(params, hparams, minibatch)
        return apply_gradient(optimizer, hparams, lr, params, opt_state, grads), aux

    return step


def apply_gradient(
    optimizer: optax.GradientTransformationExtraArgs,
    hparams: Any,
    lr: Array,
    params: Any,
    opt_state: Any,
    grads: Any,
) -> tuple[Any, Any]:
    """``(params, opt_state)`` after one step on ``grads``: clipped to
    ``hparams.max_grad_norm``, through the optimizer, times ``-lr``."""
    updates, opt_state = optimizer.update(grads, opt_state, params, max_norm=hparams.max_grad_norm)
    if isinstance(lr, dict):  # a rate per parameter (``part_learning_rates``)
        params = jax.tree.map(lambda p, u, rate: p - rate * u, params, updates, lr)
    else:
        params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state


def run_epochs(
    key: Array, carry: Any, batch: Any, step: Callable, update_epochs: int, num_minibatches: int
) -> tuple[Any, Any]:
    """``update_epochs`` passes over ``batch`` (leading axis ``[B]``), each a ``lax.scan`` of
    ``step`` over a fresh random partition into ``num_minibatches`` (one minibatch: the
    batch as it is, no permutation). Returns the final carry and ``aux`` stacked
    ``[update_epochs, num_minibatches, ...]``."""

    def epoch(carry, key):
        if num_minibatches == 1:
            minibatches = jax.tree.map(lambda x: x[None], batch)
        else:
            minibatches = shuffled_minibatches(key, batch, num_minibatches)
        return jax.lax.scan(step, carry, minibatches)

    return jax.lax.scan(epoch, carry, jax.random.split(key, update_epochs))


@flax.struct.dataclass
class ActorCriticState:
    params: Any
    opt_state: Any
    obs_stats: RunningMeanStd  # shape obs_shape with normalize_obs, else ()
    return_stats: RunningMeanStd  # scalar: running std of discounted returns
    discounted_return: Array  # [num_envs] running G for reward scaling
    step: Array = shared_field()  # int32 env steps given to update
    updates: Array = shared_field()  # int32 gradient steps taken
    hparams: Any  # the learner's ActorCriticHparams subclass


class Losses(NamedTuple):
    """An objective's losses, scalars (``approx_kl``, ``clip_fraction``: 0 if it has none)."""

    policy_loss: Array
    value_loss: Array
    approx_kl: Array
    clip_fraction: Array


class Objective(NamedTuple):
    """The part of an actor-critic learner that is its own.

    hparams: ``(cfg) -> hparams`` (an ``ActorCriticHparams`` subclass).
    loss: ``(log_prob [B], value [B], minibatch: RolloutBatch, advantage [B], hparams)
      -> Losses``; ``advantage`` is normalized already if the config asks for it.
    update_epochs, num_minibatches: the passes over each rollout and minibatches per pass.
    """

    hparams: Callable[[Any], Any]
    loss: Callable[..., Losses]
    update_epochs: int
    num_minibatches: int


@overload
def make_network(spec: EnvSpec, cfg: ActorCriticConfig) -> ActorCritic: ...


@overload
def make_network(
    spec: EnvSpec, cfg: ActorCriticConfig, module: type[NetworkT], **extra: Any
) -> NetworkT: ...


def make_network(
    spec: EnvSpec, cfg: ActorCriticConfig, module: type[ActorCritic] = ActorCritic, **extra: Any
) -> ActorCritic:
    """The ``module`` (``ActorCritic`` or a subclass, with its own fields ``extra``) that
    ``cfg`` describes for ``spec``."""
    space = spec.action_space
    discrete = isinstance(space, Discrete)
    hidden = cfg.hidden_sizes
    multi = multi_input.is_multi(cfg.torso)
    if multi and module is not ActorCritic:
        raise refuse(f"a recurrent actor-critic ({module.__name__})")
    torso: Any = cfg.torso if multi else torso_name(cfg.torso, spec.obs_shape)
    built_in = isinstance(torso, str) and (torso == "mlp" or torso in CNN_TORSOS)
    if built_in and torso != "mlp" and hidden == (64, 64):  # each CNN's own dense layer
        hidden = {"nature": (512,), "impala": (256,), "minatar": (128,)}[torso]
    torso_module = None if built_in else multi_input.build_torso(torso, spec, hidden)
    if cfg.shared_encoder:  # one image encoder for both torsos (multi_input.SharedEncoders)
        extra = {**extra, "shared_images": multi_input.shared_encoders(torso_module)}
    return module(
        action_dim=space.n if isinstance(space, Discrete) else space.shape[0],
        discrete=discrete,
        hidden_sizes=hidden,
        obs_ndim=len(spec.obs_shape),
        activation=cfg.activation,
        shared=cfg.shared_torso,
        log_std_init=cfg.log_std_init,
        torso=torso if built_in else "mlp",
        torso_module=torso_module,
        **extra,
    )


class ActorCriticParts(NamedTuple):
    """What every actor-critic learner built on ``ActorCritic`` shares, whatever its update:

    network: the ``ActorCritic`` module; optimizer: ``make_optimizer``'s; discrete: the
    action space is ``Discrete``; norm_obs: ``(state, obs) -> obs`` with the main array
    normalized when the config asks; policy: ``(params, obs) -> (dist, value)`` on
    normalized observations, illegal actions masked; log_prob_entropy: ``(dist, action)
    -> (log_prob, entropy)``, elementwise; init: ``(key) -> ActorCriticState``; act: the
    ``Agent.act`` (extras ``log_prob``, ``value`` and, for Box actions, ``raw_action``).
    """

    network: ActorCritic
    optimizer: optax.GradientTransformationExtraArgs
    discrete: bool
    norm_obs: Callable[[Any, Any], Any]
    policy: Callable[[Any, Any], tuple[Any, Array]]
    log_prob_entropy: Callable[[Any, Array], tuple[Array, Array]]
    init: InitFn[ActorCriticState]
    act: ActFn[ActorCriticState]
    inputs: Callable[[Any], Any] = main_obs  # what the network sees (networks.multi_input)


def actor_critic_parts(
    spec: EnvSpec, cfg: ActorCriticConfig, hparams: Callable[[Any], Any], name: str
) -> ActorCriticParts:
    """The shared parts of an actor-critic learner for ``spec`` (``hparams(cfg)`` fills the
    state's hyperparameters); raises ``ConfigError`` for an action space it cannot handle."""
    space = spec.action_space
    if isinstance(space, Box) and len(space.shape) != 1:
        raise ConfigError(f"agent '{name}' needs a 1-D Box action space, got {space}")
    if cfg.normalize_obs and spec.obs_dtype == "uint8":
        raise ConfigError(f"agent '{name}': normalize_obs is for float observations, not images")
    if multi_input.is_multi(cfg.torso) and name not in ("ppo", "a2c"):
        raise refuse(f"agent '{name}'")
    network = make_network(spec, cfg)
    inputs = multi_input.input_fn(cfg.torso)
    discrete = isinstance(space, Discrete)
    optimizer = make_optimizer(cfg.adam_eps, cfg)
    bounds = None
    if isinstance(space, Box):
        bounds = (jnp.asarray(space.low, jnp.float32), jnp.asarray(space.high, jnp.float32))

    def norm_obs(state: ActorCriticState, obs: Any) -> Any:
        """``obs`` with its main array normalized (when the config asks for it)."""
        if not cfg.normalize_obs:
            return obs
        main = normalize(state.obs_stats, main_obs(obs), cfg.obs_clip)
        return {**obs, OBS: main} if isinstance(obs, dict) else main

    def policy(params: Any, obs: Any):
        """``(dist, value)`` on ``obs`` (normalized already), illegal actions masked."""
        dist, value = network.apply(params, inputs(obs))
        return (D.categorical_mask(dist, action_mask(obs)) if discrete else dist), value

    def log_prob_entropy(dist: Any, action: Array) -> tuple[Array, Array]:
        if discrete:
            return D.categorical_log_prob(dist, action), D.categorical_entropy(dist)
        mean, log_std = dist
        return D.gaussian_log_prob(mean, log_std, action), D.gaussian_entropy(mean, log_std)

    def init(key: Array) -> ActorCriticState:
        params = network.init(key, multi_input.example_inputs(spec, cfg.torso))
        return ActorCriticState(
            params=params,
            opt_state=optimizer.init(params),
            obs_stats=init_running_stats(spec.obs_shape if cfg.normalize_obs else ()),
            return_stats=init_running_stats(),
            discounted_return=jnp.zeros((spec.num_envs,), jnp.float32),
            step=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            hparams=hparams(cfg),
        )

    def act(state: ActorCriticState, obs: Any, carry, key: Array, explore: bool = True):
        dist, value = policy(state.params, norm_obs(state, obs))
        action, extras = policy_action(dist, value, key, explore, bounds)
        return action, carry, extras

    return ActorCriticParts(
        network, optimizer, discrete, norm_obs, policy, log_prob_entropy, init, act, inputs
    )


def policy_action(
    dist: Any, value: Array, key: Array, explore: bool, bounds: tuple[Array, Array] | None = None
) -> tuple[Array, dict[str, Array]]:
    """``(action, extras)`` of an actor-critic's ``act`` from its policy ``dist`` and
    ``value`` ``[N]``: a categorical's sample (``explore``) or mode when ``bounds`` is None,
    else a Gaussian ``(mean, log_std)``'s sample or mean clipped to ``bounds = (low,
    high)``. Extras: ``log_prob`` and ``value`` ``[N]``; ``action_probs`` ``[N, A]`` for a
    greedy categorical; ``raw_action`` (unclipped) for a Gaussian."""
    if bounds is None:
        action = D.categorical_sample(key, dist) if explore else D.categorical_mode(dist)
        extras = {"log_prob": D.categorical_log_prob(dist, action), "value": value}
        if not explore:  # for TensorBoard's histograms (jaxrl.experiment.histograms)
            extras["action_probs"] = jax.nn.softmax(dist, axis=-1)
        return action, extras
    mean, log_std = dist
    raw = D.gaussian_sample(key, mean, log_std) if explore else mean
    extras = {"log_prob": D.gaussian_log_prob(mean, log_std, raw), "value": value}
    return jnp.clip(raw, *bounds), {**extras, "raw_action": raw}


def objective_loss(parts: ActorCriticParts, cfg: ActorCriticConfig, objective: Objective):
    """``loss_fn(params, hparams, minibatch: RolloutBatch) -> (loss, aux)``: ``objective``'s
    policy and value losses plus the weighted value loss minus the entropy bonus;
    ``aux = (policy_loss, value_loss, entropy, approx_kl, clip_fraction)``."""

    def loss_fn(params: Any, hparams: Any, mb: RolloutBatch):
        dist, value = parts.policy(params, mb.obs)
        return objective_terms(parts, cfg, objective, hparams, dist, value, mb)

    return loss_fn


def objective_terms(
    parts: ActorCriticParts,
    cfg: ActorCriticConfig,
    objective: Objective,
    hparams: Any,
    dist: Any,
    value: Array,
    mb: RolloutBatch,
) -> tuple[Array, tuple[Array, ...]]:
    """``(loss, aux)`` of ``objective_loss`` from the policy ``dist`` and ``value`` ``[B]``
    the network gave on the minibatch ``mb`` ``[B]`` (illegal actions masked already)."""
    log_prob, entropy = parts.log_prob_entropy(dist, mb.action)
    advantage = normalize_advantages(mb.advantage) if cfg.normalize_advantage else mb.advantage
    losses = objective.loss(log_prob, value, mb, advantage, hparams)
    entropy = entropy.mean()
    loss = (
        losses.policy_loss
        + hparams.value_weight * losses.value_loss
        - hparams.entropy_weight * entropy
    )
    aux = (losses.policy_loss, losses.value_loss, entropy, losses.approx_kl)
    return loss, (*aux, losses.clip_fraction)


def make_actor_critic(spec: EnvSpec, cfg: ActorCriticConfig, objective: Objective, name: str):
    """Builds the ``Agent`` of an actor-critic learner for ``spec`` (see the module
    docstring); raises ``ConfigError`` for an action space it cannot handle."""
    parts = actor_critic_parts(spec, cfg, objective.hparams, name)
    optimizer = parts.optimizer
    loss_fn = objective_loss(parts, cfg, objective)

    def update(state: ActorCriticState, rollout: Transition, key: Array):
        h = state.hparams
        epochs, num_minibatches = objective.update_epochs, objective.num_minibatches
        env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
        if env_steps % num_minibatches:
            raise ConfigError(
                f"agent '{name}': rollout_len x num_envs = {env_steps} is not divisible by "
                f"num_minibatches = {num_minibatches}"
            )
        batch, return_stats, discounted_return = rollout_batch(parts, cfg, state, rollout)
        lr = learning_rate(cfg, state)
        step = gradient_step(loss_fn, optimizer, h, part_learning_rates(cfg, state.params, lr))
        carry = (state.params, state.opt_state)
        (params, opt_state), aux = run_epochs(key, carry, batch, step, epochs, num_minibatches)
        state = after_update(
            cfg,
            state,
            rollout,
            params,
            opt_state,
            return_stats,
            discounted_return,
            epochs * num_minibatches,
        )
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        metrics = {k: v.mean() for k, v in zip(names, aux, strict=True)}
        metrics["lr"] = lr
        return state, metrics

    return Agent(init=parts.init, act=parts.act, update=update)


def part_learning_rates(cfg: ActorCriticConfig, params: Any, lr: Array) -> Any:
    """``lr`` (a scalar), or with ``cfg.critic_lr`` a tree of ``params``' structure: the
    critic's parameters (the modules named ``critic*`` and ``value*``) at ``lr`` times
    ``critic_lr / cfg.lr``, the actor's at ``lr``."""
    critic_lr = getattr(cfg, "critic_lr", None)
    if critic_lr is None:
        return lr
    critic = lr * (critic_lr / cfg.lr)
    rate = lambda name: critic if name.startswith(("critic", "value")) else lr
    return {
        group: {name: jax.tree.map(lambda _, n=name: rate(n), sub) for name, sub in mods.items()}
        for group, mods in params.items()
    }


def learning_rate(cfg: ActorCriticConfig, state: ActorCriticState) -> Array:
    """The learning rate of the next update: the state's (swept) ``lr`` through the
    config's schedule, and annealed linearly to 0 over ``total_steps`` with ``anneal_lr``."""
    lr = scheduled_lr(cfg, state.hparams.lr, state.step)
    if cfg.anneal_lr and cfg.total_steps is not None:
        lr = lr * jnp.maximum(0.0, 1.0 - state.step.astype(jnp.float32) / cfg.total_steps)
    return lr
