r"""MBPO: Model-Based Policy Optimization (Janner et al. 2019, "When to Trust Your Model",
arXiv:1906.08253), SAC on a mix of real and model-generated transitions.

Composed from SAC's pure parts (``agents/off_policy/sac.py``'s ``sac_algorithm``: the policy and one
gradient step) and the off-policy skeleton (``agents/off_policy/core.py``: ``init`` and
``act``, the replay buffer of real transitions, the warm-up of uniformly random actions);
this file adds the model, its buffer and the schedule. Every ``model_train_freq`` env steps
from ``learning_starts`` on (Algorithm 2 of the paper):

1. the ensemble of ``num_members`` Gaussian MLPs (``networks/dynamics.py``) takes
   ``model_train_steps`` Adam steps on the NLL of ``[r, s' - s]`` given ``(s, a)``
   (``ops.model_based.gaussian_nll``), each member on its own minibatch of
   ``model_batch_size`` real transitions; inputs are standardized by the mean and standard
   deviation of ``holdout_size`` real transitions drawn at the start of the phase;
2. the ``num_elites`` members with the lowest mean squared error on ``holdout_size`` real
   transitions drawn after training are the elites (the reference code holds out 20% of
   the data, at most 5,000, and trains until that loss stops improving; here the number
   of steps is fixed, so that the phase is one static program, and the held-out batch is
   drawn from the same buffer, so it is not disjoint from the training data);
3. ``rollout_batch_size`` real states start model rollouts of
   ``k = rollout_length(epoch)`` steps (``ops.model_based.rollout_length``, schedule
   ``rollout_schedule = [a, b, x, y]``, ``epoch = env steps // epoch_length``): actions from
   the current policy, next state and reward sampled from the Gaussian of an elite chosen
   at random for each state and step, stored in the model buffer (a ring of
   ``rollout_batch_size * y * model_retain_epochs * epoch_length // model_train_freq``
   transitions: the reference code's pool size at the longest rollout). A rollout whose
   model state is terminal starts again from its real start state.

Every env step from ``learning_starts`` on, SAC takes ``updates_per_step`` gradient steps
(the paper's ``G``) on minibatches of ``int(batch_size * real_ratio)`` real and the rest
model transitions (``ops.model_based.real_batch_size``).

Termination functions (the paper's appendix, the reference code's ``static/`` functions),
by env: Pendulum and HalfCheetah never terminate; MountainCarContinuous terminates where
the position reaches 0.45 (Gymnasium's goal; its velocity condition is ``>= 0``, which the
reference has no counterpart for, and is left out). ``termination="never"`` forces none.
A user's own functions replace them (Emote's ``ModelEnv(termination_fn, reward_fn)``):
``termination_fn`` and ``reward_fn`` name JAX functions as ``package.module:function``
(``user_functions``).

Left out of the reference: its per-layer L2 weight decay of the model (2.5e-5 to 1e-4),
training to convergence on a held-out split (a fixed ``model_train_steps`` here), and
bootstrap resampling of each member's data (here each member draws its own minibatches).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, cast

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.auxiliary.latent_prior import LatentPriorOptions
from jaxrl.agents.auxiliary.options import AuxiliaryOptions
from jaxrl.agents.common.action_box import action_box
from jaxrl.agents.common.optim import optimizer_step as opt_step
from jaxrl.agents.common.replay_choice import make_replay
from jaxrl.agents.off_policy.core import LearnerState, OffPolicyConfig, make_off_policy_agent
from jaxrl.agents.off_policy.model_data import (
    TERMINATIONS,
    mixed_buffer,
    scheduled_buffer,
    user_functions,
)
from jaxrl.agents.off_policy.parts import learn
from jaxrl.agents.off_policy.sac import SACConfig, sac_algorithm
from jaxrl.buffers import ReplayBuffer, make_uniform_replay
from jaxrl.networks.dynamics import GaussianEnsemble
from jaxrl.ops import linear_schedule
from jaxrl.ops.model_based import gaussian_nll, real_batch_size, rollout_length
from jaxrl.types import Agent, ConfigError, EnvSpec, Transition, shared_field
from jaxrl.validation import build_config, check_schedule, defaults, fixes, option


@dataclasses.dataclass(frozen=True)
@fixes(  # model data is one-step and uniform; no latent action prior; flat observations
    n_step=1,
    **defaults(OffPolicyConfig, "priorit"),
    **defaults(OffPolicyConfig, "beta_"),
    **defaults(LatentPriorOptions, ""),
    **defaults(AuxiliaryOptions, "curl"),
)
class MBPOConfig(SACConfig):
    """MBPO options; defaults are the paper's (arXiv:1906.08253, appendix C) and its
    reference code's (github.com/jannerm/mbpo, ``examples/config/default.py`` and
    ``mbpo/algorithms/mbpo.py``). SAC's options (``SACConfig``) apply to the policy.

    Attributes:
      learning_starts: env steps of random actions before learning (5,000,
        ``init_exploration_steps``).
      updates_per_step: SAC gradient steps per env step, the paper's G (20,
        ``n_train_repeat``).
      num_members, num_elites: ensemble size and elites (7 and 5).
      model_hidden_sizes: the dynamics model's swish layers (200, 200, 200, 200).
      model_lr: the dynamics model's Adam learning rate (1e-3).
      model_batch_size: the model's minibatch size per member (256).
      model_train_freq: env steps between two model training phases (250).
      model_train_steps: Adam steps per model training phase. The reference trains to
        convergence on a held-out split instead; see the module docstring.
      holdout_size: real transitions for the input statistics and for choosing elites.
      rollout_batch_size: model rollouts started per phase (100,000).
      rollout_schedule: [a, b, x, y]: rollout length from x to y over epochs a to b
        (HalfCheetah's [20, 100, 1, 1]: 1-step rollouts).
      epoch_length: env steps per epoch of the rollout schedule (1,000).
      model_retain_epochs: epochs of rollouts the model buffer holds (1).
      real_ratio: the fraction of real transitions in a SAC minibatch (0.05).
      real_ratio_end: the real fraction a linear schedule from ``real_ratio`` ends at;
        None: constant. With a schedule each minibatch row is real or model by its index
        (``scheduled_buffer``).
      real_ratio_steps: that schedule's length in env steps.
      termination: "auto" (by env name, module docstring) or "never".
      termination_fn: the model rollouts' terminations, a ``package.module:function``.
        ``fn(next_obs [R, O]) -> bool [R]`` (Emote's ``termination_fn``) or
        ``fn(action [R, A], next_obs [R, O])`` (mbrl-lib's); replaces ``termination``.
      reward_fn: the model rollouts' rewards, a ``package.module:function``.
        ``fn(action [R, A], next_obs [R, O]) -> float [R]``, used instead of the model's
        reward (Emote's ``reward_fn``).
    """

    learning_starts: int = 5_000
    updates_per_step: int = option(20, ge=1)
    num_members: int = option(7, ge=1)
    num_elites: int = option(5, ge=1)
    model_hidden_sizes: tuple[int, ...] = option((200, 200, 200, 200), ge=1, min_len=1)
    model_lr: float = option(1e-3, gt=0)
    model_batch_size: int = option(256, ge=1)
    model_train_freq: int = option(250, ge=1)
    model_train_steps: int = option(200, ge=1)
    holdout_size: int = option(1_000, ge=2)
    rollout_batch_size: int = option(100_000, ge=1)
    rollout_schedule: tuple[float, ...] = option((20.0, 100.0, 1.0, 1.0), ge=0, min_len=4)
    epoch_length: int = option(1_000, ge=1)
    model_retain_epochs: int = option(1, ge=1)
    real_ratio: float = option(0.05, ge=0, le=1)
    real_ratio_end: float | None = option(None, ge=0, le=1)
    real_ratio_steps: int | None = option(None, ge=1)
    termination: Literal["auto", "never"] = "auto"
    termination_fn: str | None = None
    reward_fn: str | None = None

    def __post_init__(self):
        super().__post_init__()
        check_schedule(self, "real_ratio_end", "real_ratio_steps", "env steps")
        if self.termination_fn is not None and self.termination != "auto":
            raise ValueError("termination_fn replaces termination: leave termination auto")


@flax.struct.dataclass
class ModelState:
    """The ensemble: ``params``, Adam state, input statistics ``mean``/``std`` ``[I]``
    float32 (I = obs dim + action dim) and the elites' indices ``[num_elites]`` int32."""

    params: Any
    opt_state: Any
    mean: jax.Array
    std: jax.Array
    elites: jax.Array


@flax.struct.dataclass
class MBPOState:
    """The skeleton's fields (``OffPolicyState``: what ``act`` reads) and the model's."""

    learner: LearnerState
    buffer: Any  # real transitions
    step: jax.Array = shared_field()  # int32 env steps given to update
    hparams: dict[str, jax.Array]
    model: ModelState
    model_buffer: Any
    param_noise: Any = None


def check_config(spec: EnvSpec, cfg: MBPOConfig, name: str) -> Callable:
    """One line for each mistake the ranges cannot state; returns the termination
    function ``(action [R, A], next_obs [R, O]) -> bool [R]``."""
    a, b, x, y = (cfg.rollout_schedule + (0.0,) * 4)[:4]
    lengths_ok = x >= 1 and y >= 1 and x == int(x) and y == int(y)
    if len(cfg.rollout_schedule) != 4 or not lengths_ok or (a >= b and x != y):
        raise ConfigError(
            f"agent '{name}' option 'rollout_schedule' needs [a, b, x, y] with epochs "
            f"0 <= a < b and integer lengths x, y >= 1 (x == y allows a >= b), got "
            f"{list(cfg.rollout_schedule)}"
        )
    if cfg.num_elites > cfg.num_members:
        raise ConfigError(
            f"agent '{name}' option 'num_elites' ({cfg.num_elites}) must be at most "
            f"'num_members' ({cfg.num_members})"
        )
    if len(spec.obs_shape) != 1 or spec.obs_extras:
        raise ConfigError(f"agent '{name}' needs flat vector observations, got {spec.obs_shape}")
    if cfg.termination_fn is not None:
        return cast(Callable, user_functions(spec, cfg.termination_fn, None, name)[0])
    if cfg.termination == "never":
        return lambda action, next_obs: TERMINATIONS["Pendulum"](next_obs)
    for env, fn in TERMINATIONS.items():
        if env in spec.name:
            return lambda action, next_obs, fn=fn: fn(next_obs)
    raise ConfigError(
        f"agent '{name}' has no termination function for {spec.name}; known: "
        f"{', '.join(TERMINATIONS)}; or set termination=never"
    )


class Model(NamedTuple):
    """The model's pure functions: ``init(key) -> ModelState``, ``example(r)`` (one row
    of the model buffer, ``[r, ...]``), and ``phase(model, learner, buffer_state,
    model_buffer, hparams, step, key) -> (model, model_buffer, metrics)``: train, pick
    elites, roll out (module docstring, steps 1-3)."""

    init: Callable[[jax.Array], ModelState]
    example: Callable[[int], Transition]
    phase: Callable[..., tuple[ModelState, Any, dict[str, jax.Array]]]


def transition(obs, action, reward, next_obs, terminated) -> Transition:
    return Transition(obs, action, reward, next_obs, terminated, jnp.zeros_like(terminated), {})


def batch_of(view: ReplayBuffer, buffer_state: Any, key: jax.Array) -> Transition:
    """A one-step batch ``[B, ...]`` drawn from a real-buffer view."""
    return jax.tree.map(lambda v: v[:, 0], view.sample(buffer_state, key).experience)


def make_model(
    spec: EnvSpec, cfg: MBPOConfig, name: str, policy: Callable, model_ring: ReplayBuffer
) -> Model:
    """The ensemble, its training phase and the rollouts into ``model_ring``."""
    terminal = check_config(spec, cfg, name)
    reward_of = user_functions(spec, None, cfg.reward_fn, name)[1]
    low, high = action_box(spec, name)
    obs_dim, action_dim = spec.obs_shape[0], low.shape[0]
    in_env_units = lambda action: (high + low) / 2 + (high - low) / 2 * action
    in_dim, out_dim = obs_dim + action_dim, obs_dim + 1
    ens = GaussianEnsemble(cfg.num_members, cfg.model_hidden_sizes, out_dim)
    model_opt = optax.scale_by_adam()
    e, r = cfg.num_members, cfg.rollout_batch_size
    a, b, x, y = cfg.rollout_schedule
    max_len = int(max(x, y))

    def view(batch: int) -> ReplayBuffer:
        return make_replay(spec, dataclasses.replace(cfg, batch_size=batch), name, "full", False)

    train_view, holdout_view, start_view = (
        view(cfg.model_batch_size * e),
        view(cfg.holdout_size),
        view(r),
    )

    def init(key: jax.Array) -> ModelState:
        params = ens.init(key, jnp.zeros((e, 1, in_dim), jnp.float32))
        return ModelState(
            params=params,
            opt_state=model_opt.init(params),
            mean=jnp.zeros((in_dim,), jnp.float32),
            std=jnp.ones((in_dim,), jnp.float32),
            elites=jnp.arange(cfg.num_elites, dtype=jnp.int32),
        )

    def example(n: int) -> Transition:
        z = jnp.zeros((n, obs_dim), jnp.float32)
        return transition(z, jnp.zeros((n, action_dim)), z[:, 0], z, jnp.zeros((n,), bool))

    def inputs(model: ModelState, obs, action):
        """Standardized ``[..., I]`` inputs of the ensemble."""
        return (jnp.concatenate([obs.astype(jnp.float32), action], -1) - model.mean) / model.std

    def model_targets(t: Transition):
        return jnp.concatenate([t.reward[:, None], (t.next_obs - t.obs).astype(jnp.float32)], -1)

    def train_model(model: ModelState, buffer_state, h, key):
        """``model_train_steps`` Adam steps on the NLL, then the elites by held-out MSE."""
        stats_key, steps_key, holdout_key = jax.random.split(key, 3)
        t = batch_of(holdout_view, buffer_state, stats_key)
        raw = jnp.concatenate([t.obs.astype(jnp.float32), t.action], -1)
        std = raw.std(0)
        model = dataclasses.replace(model, mean=raw.mean(0), std=jnp.where(std < 1e-12, 1.0, std))

        def loss_fn(params, t):
            x_in = inputs(model, t.obs, t.action).reshape(e, cfg.model_batch_size, in_dim)
            target = model_targets(t).reshape(e, cfg.model_batch_size, out_dim)
            mean, log_var, bounds = ens.apply(params, x_in)
            return gaussian_nll(mean, log_var, target, *bounds)[0]

        def step(carry, key):
            params, opt_state = carry
            t = batch_of(train_view, buffer_state, key)
            loss, grads = jax.value_and_grad(loss_fn)(params, t)
            params, opt_state = opt_step(model_opt, params, grads, opt_state, h["model_lr"])
            return (params, opt_state), loss

        carry = (model.params, model.opt_state)
        keys = jax.random.split(steps_key, cfg.model_train_steps)
        (params, opt_state), losses = jax.lax.scan(step, carry, keys)
        t = batch_of(holdout_view, buffer_state, holdout_key)
        x_in = jnp.broadcast_to(inputs(model, t.obs, t.action), (e, cfg.holdout_size, in_dim))
        mse = jnp.mean((ens.apply(params, x_in)[0] - model_targets(t)) ** 2, axis=(1, 2))
        elites = jnp.argsort(mse)[: cfg.num_elites].astype(jnp.int32)
        model = dataclasses.replace(model, params=params, opt_state=opt_state, elites=elites)
        metrics = {"model_loss": losses[-1], "model_holdout_mse": mse[elites].mean()}
        return model, metrics

    def model_step(learner, model: ModelState, obs, key):
        """One model step of ``[R]`` states: ``(action, reward, next_obs, terminated)``."""
        policy_key, member_key, noise_key = jax.random.split(key, 3)
        action = policy(learner.actor_params, obs, policy_key, True)
        x_in = jnp.broadcast_to(inputs(model, obs, action), (e, r, in_dim))
        mean, log_var, _ = cast(tuple[jax.Array, jax.Array, Any], ens.apply(model.params, x_in))
        pick = model.elites[jax.random.randint(member_key, (r,), 0, cfg.num_elites)]
        mean, log_var = mean[pick, jnp.arange(r)], log_var[pick, jnp.arange(r)]
        out = mean + jnp.exp(0.5 * log_var) * jax.random.normal(noise_key, mean.shape)
        next_obs = obs + out[:, 1:]
        env_action = in_env_units(action)  # what the env's functions take
        reward = out[:, 0] if reward_of is None else reward_of(env_action, next_obs)
        return action, reward, next_obs, terminal(env_action, next_obs)

    def rollout(learner, model, buffer_state, model_buffer, step, key):
        """Model rollouts of ``rollout_length(epoch)`` steps into the model buffer."""
        start_key, steps_key = jax.random.split(key)
        start = batch_of(start_view, buffer_state, start_key).obs.astype(jnp.float32)
        k = rollout_length(step // cfg.epoch_length, a, b, int(x), int(y))

        def one(carry, inp):
            obs, ring = carry
            i, key = inp
            action, reward, next_obs, done = model_step(learner, model, obs, key)
            data = jax.tree.map(lambda v: v[None], transition(obs, action, reward, next_obs, done))
            ring = jax.lax.cond(i < k, lambda: model_ring.add(ring, data), lambda: ring)
            return (jnp.where(done[:, None], start, next_obs), ring), None

        keys = jax.random.split(steps_key, max_len)
        (_, model_buffer), _ = jax.lax.scan(one, (start, model_buffer), (jnp.arange(max_len), keys))
        return model_buffer, k

    def phase(model, learner, buffer_state, model_buffer, hparams, step, key):
        train_key, rollout_key = jax.random.split(key)
        model, metrics = train_model(model, buffer_state, hparams, train_key)
        model_buffer, k = rollout(learner, model, buffer_state, model_buffer, step, rollout_key)
        return model, model_buffer, {**metrics, "rollout_length": k.astype(jnp.float32)}

    return Model(init=init, example=example, phase=phase)


def nan_like(fn: Callable, *args: Any) -> Any:
    """``fn(*args)``'s output shapes filled with NaN (metrics of a branch not taken)."""
    return jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), jax.eval_shape(fn, *args))


def sac_buffers(
    spec: EnvSpec, cfg: MBPOConfig, name: str, model_size: int
) -> tuple[ReplayBuffer, ReplayBuffer, ReplayBuffer, Callable | None]:
    """``(real, model_ring, sac_buffer, real_rows)``: the real transitions' buffer, the
    model's ring of ``model_size`` rows, the view SAC samples its minibatches from
    (``mixed_buffer`` at a constant ``real_ratio``; ``scheduled_buffer`` with a schedule)
    and, with a schedule, ``real_rows(step) -> int32``, the real rows of a minibatch at
    env step ``step`` (``floor(batch_size * ratio)``, as ``real_batch_size``); else None."""
    n_real = real_batch_size(cfg.batch_size, cfg.real_ratio)
    n_model = cfg.batch_size - n_real
    if cfg.real_ratio_steps is not None:  # every row may be either: whole batches of both
        n_real = n_model = cfg.batch_size
    real = make_replay(
        spec, dataclasses.replace(cfg, batch_size=max(n_real, 1)), name, "full", False
    )
    model_ring = make_uniform_replay(model_size, cfg.rollout_batch_size, max(n_model, 1))
    if cfg.real_ratio_steps is None:
        mixed = mixed_buffer(real if n_real else None, model_ring if n_model else None)
        return real, model_ring, mixed, None
    ratio = linear_schedule(cfg.real_ratio, cfg.real_ratio_end or 0.0, cfg.real_ratio_steps)
    rows = lambda step: jnp.floor(cfg.batch_size * ratio(step)).astype(jnp.int32)
    return real, model_ring, scheduled_buffer(real, model_ring), rows


def make_agent(spec: EnvSpec, cfg: MBPOConfig, name: str = "mbpo") -> Agent:
    """Builds an MBPO agent for ``spec`` from a validated config."""
    algorithm = sac_algorithm(spec, cfg, name)
    check_config(spec, cfg, name)
    skeleton = make_off_policy_agent(spec, cfg, algorithm, name)
    low, high = action_box(spec, name)
    centre, half = (high + low) / 2, (high - low) / 2
    r, max_len = cfg.rollout_batch_size, int(max(cfg.rollout_schedule[2:]))
    rows = max_len * max(1, cfg.epoch_length // cfg.model_train_freq) * cfg.model_retain_epochs
    real, model_ring, sac_buffer, real_rows = sac_buffers(spec, cfg, name, r * rows)
    model_fns = make_model(spec, cfg, name, algorithm.policy, model_ring)

    def init(key: jax.Array) -> MBPOState:
        sac_key, model_key = jax.random.split(key)
        base = skeleton.init(sac_key)
        return MBPOState(
            learner=base.learner,
            buffer=base.buffer,
            step=base.step,
            hparams={**base.hparams, "model_lr": jnp.asarray(cfg.model_lr, jnp.float32)},
            model=model_fns.init(model_key),
            model_buffer=model_ring.init(model_fns.example(r)),
        )

    def update(state: MBPOState, rollout: Transition, key: jax.Array):
        num_steps, num_envs = rollout.reward.shape
        data = rollout._replace(action=(rollout.action - centre) / half, extras={})
        buffer_state = real.add(state.buffer, data)
        prev, step = state.step, state.step + num_steps * num_envs
        model_key, learn_key = jax.random.split(key)
        ls, freq = cfg.learning_starts, cfg.model_train_freq
        phase = (step >= ls) & ((prev < ls) | ((step - ls) // freq > (prev - ls) // freq))
        phase = phase & real.can_sample(buffer_state)
        args = (
            *(state.model, state.learner, buffer_state, state.model_buffer, state.hparams),
            *(step, model_key),
        )
        no_metrics = nan_like(lambda *a: model_fns.phase(*a)[2], *args)
        model, model_buffer, model_metrics = jax.lax.cond(
            phase, model_fns.phase, lambda m, _, __, mb, *___: (m, mb, no_metrics), *args
        )
        learning = (step >= ls) & (model_ring.num_items(model_buffer) > 0)
        g = cfg.updates_per_step * num_steps
        do_learn = functools.partial(learn, cfg, sac_buffer, algorithm, num_steps=g)
        buffers: tuple = (buffer_state, model_buffer)
        if real_rows is not None:  # the real_ratio schedule: this update's real rows
            buffers = (*buffers, real_rows(step))
        learn_args = (state.learner, buffers, state.hparams, learn_key)
        no_sac = nan_like(lambda *a: do_learn(*a)[1], *learn_args)
        (learner, _), sac_metrics = jax.lax.cond(
            learning, do_learn, lambda learner, *_: ((learner, None), no_sac), *learn_args
        )
        state = dataclasses.replace(
            state,
            learner=learner,
            buffer=buffer_state,
            step=step,
            model=model,
            model_buffer=model_buffer,
        )
        return state, {**sac_metrics, **model_metrics}

    return Agent(init=init, act=skeleton.act, update=update, init_carry=skeleton.init_carry)


def make_mbpo(spec: EnvSpec, **overrides: Any) -> Agent:
    """Builds an MBPO agent for ``spec``; raises ``ConfigError`` on a bad option or env."""
    return make_agent(spec, build_config(MBPOConfig, overrides, "agent 'mbpo'"))
