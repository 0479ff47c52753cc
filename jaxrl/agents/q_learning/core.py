"""The Q-learning agent that DQN and Rainbow are configurations of.

Read top to bottom: the state, then ``make_q_agent``, which assembles the parts

* a ``ValueHead`` (``agents/q_learning/value_heads.py``): the network head, greedy values, target
  construction, loss and priorities (expected value, C51, or a new one);
* a ``ReplayBuffer`` (``buffers/base.py``): uniform, prioritized or compact storage;
* ``Exploration``: noisy nets and/or epsilon-greedy;
* ``Prioritization``: importance weights and priority updates, or none;

into ``init``, ``act`` and ``update``. The options every Q-learning agent shares
(``QLearningConfig``), the hyperparameters in the state and the choices of parts
(``Exploration``, ``Prioritization``) are ``agents/q_learning/config.py``'s. ``update`` inserts the
rollout ``[T, num_envs]`` into the replay buffer held in the state and, once
``learning_starts`` env steps have been seen, takes ``updates_per_rollout`` gradient
steps. The learning branch is a ``lax.cond`` on the env-step counter and the buffer's row
count, which only grow by constants (``types.shared_field``), so it stays unbatched (a real
branch) under ``vmap`` over seeds or hyperparameters. (The compact buffer's ``can_sample``
counts valid items, which depend on the data: with it the predicate is batched and the
branch a select.)

Legal actions: for a dict observation with ``"action_mask"`` (``types.ACTION_MASK``),
greedy, epsilon-greedy (uniform among legal actions) and noisy acting pick only legal
actions, and bootstrap targets select among the legal actions of the bootstrap
observation. Networks see ``types.main_obs(obs)``.

Auxiliary learners (``agents/auxiliary/base.py``): AMP-like learners update and add reward terms
before the loss; a learner with a loss term (CURL, ``agents/auxiliary/curl.py``, given the torso as
its ``Encoder``) adds the gradient of its term to the agent's before the optimizer step
and then takes its own step (``after_step``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl.agents.auxiliary import base as aux_lib
from jaxrl.agents.auxiliary.extra_loss import KEY, check_attached
from jaxrl.agents.auxiliary.options import make_auxiliary
from jaxrl.agents.common.action_box import require_discrete
from jaxrl.agents.common.optim import scale_transform, scheduled_lr
from jaxrl.agents.common.param_noise import param_noise
from jaxrl.agents.common.replay_sampling import (
    ReplaySampling,
    prioritized_sampling,
    uniform_sampling,
)
from jaxrl.agents.q_learning.config import (
    Exploration,
    Prioritization,
    PrioritizedHparams,
    QHparams,
    QLearningConfig,
)
from jaxrl.agents.q_learning.exploration import (
    Explorer,
    ParamNoiseConfig,
    adapt_param_noise,
    current_epsilon,
    epsilon_greedy_explorer,
    scheduled_epsilon,
)
from jaxrl.agents.q_learning.value_heads import ValueHead
from jaxrl.buffers import PriorityParams, ReplayBuffer
from jaxrl.networks import MLP, QNetwork
from jaxrl.networks.multi_input import build_torso, example_inputs, input_fn, is_multi
from jaxrl.networks.torsos import refuse
from jaxrl.ops import (
    masked_epsilon_greedy,
    n_step_bootstrap,
    soft_update,
)
from jaxrl.types import (
    Agent,
    ConfigError,
    EnvSpec,
    Transition,
    action_mask,
    main_obs,
    num_actions,
    shared_field,
)


@flax.struct.dataclass
class QLearningState:
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any
    step: jax.Array = shared_field()  # int32 env steps given to update
    updates: jax.Array  # int32 gradient steps taken
    hparams: QHparams
    # With parameter-space noise (DQN's ``param_noise``): the perturbed network that
    # explores, its scale ``sigma`` and the last measured ``distance``; None otherwise.
    param_noise: Any = None
    aux: Any = None  # auxiliary learners and demonstrations (agents/auxiliary/base.py), or None
    actors: Any = (
        None  # Ape-X: the actors' copy of params and target params (agents/q_learning/apex.py)
    )


def make_network(spec: EnvSpec, cfg: QLearningConfig, head: ValueHead, x: Exploration):
    """The torso ``cfg.torso`` (noisy with ``x.noisy_torso``) and the value head on it."""
    module = head.network(num_actions(spec), cfg.dueling, x.noisy, x.sigma0)
    torso = build_torso(cfg.torso, spec, cfg.hidden_sizes)
    if x.noisy_torso:
        if not isinstance(torso, MLP):
            raise ConfigError(
                f"noisy_torso needs the mlp torso (vector observations), not {cfg.torso}"
            )
        torso = torso.clone(noisy=True, sigma0=x.sigma0)
    return QNetwork(torso=torso, head=module)


class _Parts(NamedTuple):
    spec: EnvSpec
    cfg: QLearningConfig
    head: ValueHead
    buffer: ReplayBuffer
    network: QNetwork
    optimizer: optax.GradientTransformation
    explore: Exploration
    sampling: ReplaySampling
    explorer: Explorer
    hparams: type
    aux: aux_lib.Auxiliary | None = None
    aux_steps: aux_lib.AuxiliarySteps = aux_lib.auxiliary_steps(None, windows=True)
    inputs: Callable[[Any], Any] = main_obs  # what the network sees (networks.multi_input)


def _apply(p: _Parts, params, obs, key, deterministic=False, role="online"):
    """The network's output; ``role`` (``"act"``, ``"select"``, ``"target"``, ``"online"``)
    picks the sample count of a sampling head (``ValueHead.samples``)."""
    if p.head.samples is not None:
        det = deterministic or not p.explore.noisy
        kw: dict[str, Any] = {"num_samples": p.head.samples[role]}
        return p.network.apply(params, p.inputs(obs), det, rngs={"noise": key}, **kw)
    if not p.explore.noisy or deterministic:
        return p.network.apply(params, p.inputs(obs), deterministic=True)
    return p.network.apply(params, p.inputs(obs), rngs={"noise": key})


def _stochastic(p: _Parts) -> bool:
    """Whether forward passes need a key: noisy nets or a sampling head (IQN)."""
    return p.explore.noisy or p.head.samples is not None


def _split(p: _Parts, key: jax.Array, n: int) -> list:
    """``n`` keys for stochastic forward passes; no PRNG work otherwise."""
    return list(jax.random.split(key, n)) if _stochastic(p) else [None] * n


def _priority(p: _Parts, state: QLearningState) -> PriorityParams | None:
    return p.sampling.knobs(state.hparams)


def _epsilon(p: _Parts, state: QLearningState, explore: bool) -> jax.Array:
    h, n = state.hparams, p.spec.num_envs
    return current_epsilon(p.cfg, p.explore, h, state.step, n, explore)


def _init(p: _Parts, key: jax.Array) -> QLearningState:
    params_key, noise_key = jax.random.split(key)
    obs = example_inputs(p.spec, p.cfg.torso)
    params = p.network.init({"params": params_key, "noise": noise_key}, obs)
    n = p.spec.num_envs
    obs_example = jax.tree.map(lambda s: jnp.zeros((n, *s.shape), s.dtype), p.spec.obs_spec)
    example = Transition(
        obs=obs_example,
        action=jnp.zeros((n,), jnp.int32),
        reward=jnp.zeros((n,), jnp.float32),
        next_obs=obs_example,
        terminated=jnp.zeros((n,), bool),
        truncated=jnp.zeros((n,), bool),
        extras={},
    )
    fields = {f.name for f in dataclasses.fields(p.hparams)}
    hparams = p.hparams(**{k: jnp.asarray(getattr(p.cfg, k), jnp.float32) for k in fields})
    return QLearningState(
        params=params,
        target_params=params,
        opt_state=p.optimizer.init(params),
        buffer=p.buffer.init(example),
        step=jnp.zeros((), jnp.int32),
        updates=jnp.zeros((), jnp.int32),
        hparams=hparams,
        param_noise=p.explorer.noise.init(params, jax.random.fold_in(key, 1)),
        aux=aux_lib.init(p.aux, key, params),
    )


def _act(p: _Parts, state: QLearningState, obs, carry, key: jax.Array, explore: bool = True):
    noise_key, key = jax.random.split(key) if _stochastic(p) else (None, key)
    params, epsilon = state.params, _epsilon(p, state, explore)
    select = masked_epsilon_greedy  # greedy evaluation at eval_epsilon
    if explore:  # the explorer's network (perturbed with parameter noise) and choice
        params, epsilon = p.explorer.noise.acting(state.param_noise, params, epsilon)
        select = p.explorer.select
    out = _apply(p, params, obs, noise_key, deterministic=not explore, role="act")
    q = p.head.q_values(out)
    action = select(key, q, epsilon, action_mask(obs))
    return action, carry, ({} if explore else {"q_values": q})  # q: TensorBoard histograms


def _targets(p: _Parts, state: QLearningState, params, batch: Transition, keys):
    """The head's target from the n-step window's bootstrap observation."""
    reward = batch.reward
    if p.cfg.reward_clip is not None:
        reward = jnp.clip(reward, -p.cfg.reward_clip, p.cfg.reward_clip)
    nstep = n_step_bootstrap(reward, batch.terminated, batch.truncated, state.hparams.gamma)
    rows = jnp.arange(reward.shape[0])
    bootstrap_obs = jax.tree.map(lambda x: x[rows, nstep.bootstrap_index], batch.next_obs)
    next_target = _apply(p, state.target_params, bootstrap_obs, keys[0], role="target")
    next_select = None
    if p.cfg.double:
        next_select = p.head.q_values(_apply(p, params, bootstrap_obs, keys[1], role="select"))
    mask = action_mask(bootstrap_obs)
    reward_sum = nstep.reward_sum
    if p.head.bonus is not None:
        obs = jax.tree.map(lambda x: x[:, 0], batch.obs)
        current = _apply(p, state.target_params, obs, keys[0], role="target")
        reward_sum = reward_sum + p.head.bonus(current, batch.action[:, 0], action_mask(obs))
    return p.head.target(next_target, next_select, mask, reward_sum, nstep.bootstrap_discount)


def _loss(p: _Parts, params, batch: Transition, target, weights, key):
    rows = jnp.arange(batch.action.shape[0])
    obs = jax.tree.map(lambda x: x[:, 0], batch.obs)
    online = jax.tree.map(lambda x: x[rows, batch.action[:, 0]], _apply(p, params, obs, key))
    losses, priorities = p.head.loss(online, target)
    q_taken = p.head.q_values(online)
    return (weights * losses).mean(), (jax.lax.stop_gradient(priorities), q_taken.mean())


def _gradient_step(p: _Parts, state: QLearningState, carry, key):
    """One minibatch step. ``carry`` holds what changes: params, optimizer state and,
    with prioritized replay only, the buffer (its priorities); a uniform buffer stays in
    ``state`` so that it is not threaded (and copied) through the loop."""
    params, opt_state, threaded, aux_state = carry
    stochastic = _stochastic(p)
    sample_key, *noise_keys = [key, *_split(p, key, 3)] if stochastic else [key, None, None, None]
    buffer_state = p.sampling.source(state.buffer, threaded)
    sample = p.buffer.sample(buffer_state, sample_key)
    batch = sample.experience
    aux_state, batch, aux_metrics = p.aux_steps.prepare(aux_state, batch, None, key)
    target = _targets(p, state, params, batch, noise_keys[:2])
    beta = p.sampling.beta(state.hparams, state.step)
    extras = p.sampling.weights(sample.probabilities, p.buffer.num_items(buffer_state), beta)
    weights = extras.get("weight", jnp.ones(batch.action.shape[:1], jnp.float32))
    loss_fn = functools.partial(_loss, p)
    (loss, (priorities, q_mean)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        params, batch, target, weights, noise_keys[2]
    )
    # CURL: a loss term on the agent's params (agents/auxiliary/base.py)
    term_grads, aux_grads, m = p.aux_steps.loss_grads(params, aux_state, batch, key)
    grads = p.aux_steps.combine(grads, term_grads)
    aux_metrics = {**aux_metrics, **m}
    threaded = p.sampling.feed_back(threaded, sample.indices, priorities, state.hparams)
    updates, opt_state = p.optimizer.update(grads, opt_state, params)
    lr = scheduled_lr(p.cfg, state.hparams.lr, state.step)
    updates = jax.tree.map(lambda u: -lr * u, updates)
    params = optax.apply_updates(params, updates)
    aux_state = p.aux_steps.after_step(aux_state, aux_grads, params)
    return (params, opt_state, threaded, aux_state), (loss, q_mean, aux_metrics)


def _learn(p: _Parts, state: QLearningState, key: jax.Array):
    keys = jax.random.split(key, p.cfg.updates_per_rollout)
    carried = p.sampling.threaded(state.buffer)
    step = lambda carry, key: _gradient_step(p, state, carry, key)
    carry = (state.params, state.opt_state, carried, state.aux)
    carry, (loss, q_mean, aux_metrics) = jax.lax.scan(step, carry, keys)
    return (*carry, loss.mean(), q_mean.mean(), jax.tree.map(jnp.nanmean, aux_metrics))


def _skip(p: _Parts, state: QLearningState, key: jax.Array):
    nan = jnp.full((), jnp.nan, jnp.float32)
    carried = p.sampling.threaded(state.buffer)
    shapes = lambda: jax.eval_shape(functools.partial(_learn, p), state, key)[-1]
    aux_metrics = p.aux_steps.nan_metrics(shapes)
    return state.params, state.opt_state, carried, state.aux, nan, nan, aux_metrics


def _update(p: _Parts, state: QLearningState, rollout: Transition, key: jax.Array):
    rollout = rollout._replace(extras={})
    env_steps = rollout.reward.shape[0] * rollout.reward.shape[1]
    buffer = p.buffer.add(state.buffer, rollout, _priority(p, state))
    return learn_from_replay(
        p, dataclasses.replace(state, buffer=buffer, step=state.step + env_steps), key, env_steps
    )


def learn_from_replay(p: _Parts, state: QLearningState, key: jax.Array, env_steps: int = 0):
    """``update`` once the rollout of ``env_steps`` is in the buffer and in ``state.step``:
    the gradient steps, the target update and the metrics (Ape-X inserts its own way)."""
    learning = (state.step >= p.cfg.learning_starts) & p.buffer.can_sample(state.buffer)
    learn, skip = functools.partial(_learn, p), functools.partial(_skip, p)
    outs = jax.lax.cond(learning, learn, skip, state, key)
    params, opt_state, buffer_state, aux_state, loss, q_mean, aux_metrics = outs
    tau = target_tau(state.step, env_steps, p.cfg.target_update_period, state.hparams.tau, learning)
    state = dataclasses.replace(
        state,
        params=params,
        opt_state=opt_state,
        buffer=p.sampling.source(state.buffer, buffer_state),
        target_params=soft_update(state.target_params, params, tau),
        updates=state.updates + jnp.where(learning, p.cfg.updates_per_rollout, 0),
        aux=aux_state,
    )
    metrics = {"loss": loss, "q_mean": q_mean, "epsilon": _epsilon(p, state, True)}
    metrics.update(aux_metrics)
    if p.aux is not None:  # the learners' on_metrics (none: metrics as they are)
        metrics = aux_lib.on_metrics(p.aux, metrics, aux_state)
    return p.explorer.noise.adapt(state, metrics, key)


def target_tau(step: jax.Array, env_steps: int, period: int, tau: Any, learning: Any) -> jax.Array:
    """The target update's fraction: ``tau`` when the env-step counter ``step`` crossed a
    multiple of ``period`` in the last ``env_steps`` and the agent learned, else 0."""
    crossed = (step // period) > ((step - env_steps) // period)
    return jnp.where(crossed & learning, tau, 0.0)


def _adapt_param_noise(p: _Parts, state: QLearningState, metrics: dict, key: jax.Array):
    """The parameter-noise scale adapted on a replay batch's first observations against
    the epsilon schedule's current value (``exploration.adapt_param_noise``); its scale
    and distance added to ``metrics``."""
    sample_key, probe_key, acting_key = jax.random.split(jax.random.fold_in(key, 1), 3)
    obs = jax.tree.map(lambda x: x[:, 0], p.buffer.sample(state.buffer, sample_key).experience.obs)
    q_values = lambda params: p.head.q_values(_apply(p, params, obs, None, deterministic=True))
    epsilon = scheduled_epsilon(p.cfg, state.hparams, state.step, p.spec.num_envs)
    noise = adapt_param_noise(
        cast(ParamNoiseConfig, p.cfg), state.param_noise, state.params, q_values, epsilon,
        num_actions(p.spec),
        probe_key, acting_key,
    )  # fmt: skip
    metrics = {
        **metrics,
        "param_noise_sigma": noise["sigma"],
        "param_noise_distance": noise["distance"],
    }
    return dataclasses.replace(state, param_noise=noise), metrics


def _encoder(spec: EnvSpec, network: QNetwork) -> aux_lib.Encoder:
    """The torso of ``network`` as CURL's ``Encoder`` (its params: ``["params"]["torso"]``)."""
    return aux_lib.Encoder(
        params=lambda params: {"params": params["params"]["torso"]},
        apply=lambda enc, obs: cast(jax.Array, network.torso.apply(enc, obs)),
        obs_shape=tuple(spec.obs_shape),
        obs_dtype=spec.obs_dtype,
    )


def make_q_agent(
    spec: EnvSpec,
    cfg: QLearningConfig,
    head: ValueHead,
    buffer: ReplayBuffer,
    exploration: Exploration = Exploration(),
    prioritization: Prioritization | None = None,
    name: str = "q_learning",
    explorer: Explorer | None = None,
) -> Agent:
    """The Q-learning agent of these parts (module docstring). ``prioritization`` must be
    given iff ``buffer`` is prioritized; ``cfg`` then needs ``beta_start``, ``alpha`` and
    ``priority_eps`` (they go into ``hparams``). ``explorer``: an exploration strategy
    (``exploration.Explorer``) in place of the one ``exploration`` describes."""
    p = make_parts(spec, cfg, head, buffer, exploration, prioritization, name)
    if explorer is not None:
        p = p._replace(explorer=explorer)
    return Agent(
        functools.partial(_init, p), functools.partial(_act, p), functools.partial(_update, p)
    )


def make_parts(spec, cfg, head, buffer, exploration, prioritization, name) -> _Parts:
    """``make_q_agent``'s parts, for an agent that assembles them its own way (Ape-X)."""
    require_discrete(spec, name)
    clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm else []
    network = make_network(spec, cfg, head, exploration)
    auxiliary = make_auxiliary(spec, cfg, name, encoder=_encoder(spec, network))
    if auxiliary is not None and is_multi(cfg.torso):
        raise refuse(f"agent '{name}' with auxiliary learners or demonstrations")
    users = getattr(cfg, "extra_losses", ())
    if auxiliary is not None and users:  # a user's terms, checked on the network
        obs = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
        params = jax.eval_shape(lambda k: network.init({"params": k, "noise": k}, obs), KEY)
        action = jax.ShapeDtypeStruct((), jnp.int32)
        check_attached(auxiliary.learners, users, params, spec, action, name)
    sampling = uniform_sampling()
    if prioritization is not None:  # the buffer's knobs and beta kept in PrioritizedHparams
        sampling = prioritized_sampling(
            buffer,
            prioritization.beta_decay_steps,
            knobs=lambda h: PriorityParams(h.alpha, h.priority_eps),
            beta_start=lambda h: h.beta_start,
        )
    parts = _Parts(
        spec=spec,
        cfg=cfg,
        head=head,
        buffer=buffer,
        network=network,
        optimizer=optax.chain(*clip, scale_transform(cfg, cfg.adam_eps)),
        explore=exploration,
        sampling=sampling,
        explorer=epsilon_greedy_explorer(),
        hparams=QHparams if prioritization is None else PrioritizedHparams,
        aux=auxiliary,
        aux_steps=aux_lib.auxiliary_steps(auxiliary, windows=True),
        inputs=input_fn(cfg.torso),
    )
    if exploration.param_noise:  # the perturbed network explores (exploration.py)
        adapt = lambda state, metrics, key: _adapt_param_noise(parts, state, metrics, key)
        noise = param_noise(cfg, adapt)
        parts = parts._replace(explorer=parts.explorer._replace(noise=noise))
    return parts
