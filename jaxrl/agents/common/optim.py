"""Optimizers and learning-rate schedules by name, for every agent, built from optax.

Every agent config inherits ``OptimizerOptions``. An agent builds its optimizer as its
own gradient clipping chained with ``scale_transform(cfg, eps)`` (the optimizer without
its learning rate) and takes the step ``-lr_t * u`` itself, where
``lr_t = lr * lr_factor(cfg)(step)`` and ``lr`` is read from ``state.hparams``: the
learning rate stays sweepable (``--sweep agent.lr=...``) whatever the optimizer or
schedule. With the defaults (``adam``, ``constant``) the transform is exactly
``optax.scale_by_adam(eps=eps)`` and no factor is applied, so nothing changes.

Optimizers (optax's defaults unless set):

* ``adam`` (Kingma & Ba 2015): ``optax.scale_by_adam(eps)``; ``eps`` is the agent's
  ``adam_eps``.
* ``adamw`` (Loshchilov & Hutter 2019): Adam plus ``weight_decay * params`` before the
  learning rate, as ``optax.adamw`` (weight decay 1e-4, optax's default).
* ``radam`` (Liu et al. 2020, rectified Adam): ``optax.scale_by_radam(eps)``, PQN's
  optimizer in purejaxql.
* ``rmsprop`` (Tieleman & Hinton 2012): ``optax.scale_by_rms`` (or ``scale_by_stddev``
  when ``rmsprop_centered``) with ``rmsprop_decay``, ``rmsprop_eps``,
  ``rmsprop_eps_in_sqrt`` and ``rmsprop_initial_scale``, then ``momentum``, as
  ``optax.rmsprop``. TensorFlow 1's centered RMSProp of Dopamine's DQN
  (``atari-dqn-rmsprop``: decay 0.95, eps 1e-5 inside the root, mean square
  initialised to 1) and PyTorch's of the MinAtar paper (``minatar-dqn-rmsprop``: alpha
  0.95, eps 0.01 outside the root, initialised to 0) are both these options.
* ``sgd``: the gradient, with ``momentum`` (heavy ball, ``optax.trace``) when > 0.

``grad_clip`` clips each gradient element to ``[-grad_clip, grad_clip]`` before the
optimizer (``optax.clip``: RLHive's ``grad_clip``), after an agent's global-norm clip
(``max_grad_norm``, machin's ``gradient_max``) where it has one.

Learning-rate schedules over the agent's env-step counter (``lr_decay_steps`` and
``lr_boundaries`` count env steps):

* ``constant``: ``lr``.
* ``linear``: ``lr`` to ``lr * lr_end_factor`` over ``lr_decay_steps``
  (``optax.linear_schedule``).
* ``cosine``: ``lr`` to ``lr * lr_end_factor`` on a half cosine over ``lr_decay_steps``
  (Loshchilov & Hutter 2017; ``optax.cosine_decay_schedule`` with ``alpha``).
* ``piecewise``: ``lr`` multiplied by ``lr_scales[i]`` from step ``lr_boundaries[i]``
  on, the scales accumulating (``optax.piecewise_constant_schedule``:
  boundaries (1000, 2000) and scales (0.1, 0.1) give ``lr``, ``lr / 10``, ``lr / 100``);
  boundaries strictly increasing.

Epsilon-greedy's schedules (``EpsilonOptions``, ``epsilon_schedule``: linear, exponential
or piecewise over env steps) are here too, for the Q-learning agents and tabular
Q-learning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

from jaxrl.ops import exponential_schedule, linear_schedule, piecewise_linear_schedule
from jaxrl.validation import Options, option

Schedule = Callable[[jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class OptimizerOptions(Options):
    """The optimizer and learning-rate schedule of an agent (module docstring).

    Attributes:
      optimizer: ``"adam"``, ``"adamw"``, ``"radam"``, ``"rmsprop"`` or ``"sgd"``, with
        optax's defaults unless set below.
      grad_clip: clip each gradient element to [-grad_clip, grad_clip] before the
        optimizer (RLHive's grad_clip); None: no clip.
      adam_eps: Adam's epsilon (optax's 1e-8), also RAdam's and AdamW's.
      weight_decay: AdamW's decoupled weight decay (optax's 1e-4).
      momentum: RMSProp's and SGD's momentum; 0 for none.
      rmsprop_decay: RMSProp's decay of the mean square (0.9).
      rmsprop_eps: RMSProp's epsilon (1e-8).
      rmsprop_eps_in_sqrt: RMSProp adds its epsilon inside the square root (TensorFlow's;
        optax's default) rather than outside (PyTorch's).
      rmsprop_centered: centered RMSProp, dividing by the gradient's standard deviation.
      rmsprop_initial_scale: RMSProp's initial mean square (0; TensorFlow 1's is 1).
      lr_schedule: the learning rate over env steps: ``"constant"``, ``"linear"``,
        ``"cosine"`` or ``"piecewise"``. See the module docstring.
      lr_decay_steps: env steps of a linear or cosine decay (needed by both).
      lr_end_factor: a linear or cosine decay ends at ``lr * lr_end_factor``.
      lr_boundaries: a piecewise schedule's env steps, strictly increasing.
      lr_scales: the factors a piecewise schedule applies from each boundary on
        (cumulative).
    """

    optimizer: Literal["adam", "adamw", "radam", "rmsprop", "sgd"] = "adam"
    grad_clip: float | None = option(None, gt=0)
    adam_eps: float = option(1e-8, ge=0)
    weight_decay: float = option(1e-4, ge=0)
    momentum: float = option(0.0, ge=0, lt=1)
    rmsprop_decay: float = option(0.9, ge=0, lt=1)
    rmsprop_eps: float = option(1e-8, ge=0)
    rmsprop_eps_in_sqrt: bool = True
    rmsprop_centered: bool = False
    rmsprop_initial_scale: float = option(0.0, ge=0)
    lr_schedule: Literal["constant", "linear", "cosine", "piecewise"] = "constant"
    lr_decay_steps: int | None = option(None, ge=1)
    lr_end_factor: float = option(0.0, ge=0)
    lr_boundaries: tuple[int, ...] = option((), ge=0)
    lr_scales: tuple[float, ...] = option((), ge=0)

    def __post_init__(self):
        super().__post_init__()
        if self.lr_schedule in ("linear", "cosine") and self.lr_decay_steps is None:
            raise ValueError(f"lr_schedule {self.lr_schedule} needs lr_decay_steps (env steps)")
        if getattr(self, "anneal_lr", False) and self.lr_schedule != "constant":
            raise ValueError(
                f"lr_schedule {self.lr_schedule} and anneal_lr both decay the learning rate; "
                "set anneal_lr false (lr_schedule linear with lr_end_factor 0 is the same decay)"
            )
        if self.lr_schedule == "piecewise":
            check_piecewise("lr_boundaries", self.lr_boundaries, "lr_scales", self.lr_scales)


def check_piecewise(b_name: str, boundaries: tuple, v_name: str, values: tuple) -> None:
    """``ValueError`` (one line) unless ``boundaries`` are strictly increasing and as many
    as ``values``, at least one."""
    if not boundaries or len(boundaries) != len(values):
        raise ValueError(
            f"a piecewise schedule needs {b_name} and {v_name} of one length (at least 1), "
            f"got {list(boundaries)} and {list(values)}"
        )
    if any(x >= y for x, y in zip(boundaries, boundaries[1:], strict=False)):
        raise ValueError(f"{b_name} must be strictly increasing, got {list(boundaries)}")


@dataclasses.dataclass(frozen=True)
class EpsilonOptions(Options):
    """Epsilon-greedy's schedule over env steps (``epsilon_schedule``), shared by the
    Q-learning agents (``agents/q_learning/config.py``) and tabular Q-learning; an agent's
    config may change the defaults and say more of them.

    Attributes:
      epsilon_start: epsilon at env step 0 of a linear schedule.
      epsilon_end: epsilon at the end of the schedule, and the floor of an exponential one.
      epsilon_decay_steps: env steps of a linear schedule from ``epsilon_start`` to
        ``epsilon_end`` (RLHive's LinearSchedule).
      epsilon_schedule: ``"linear"``, ``"exponential"`` or ``"piecewise"``. Exponential:
        epsilon multiplied by ``epsilon_decay`` at every acting call, floored at
        ``epsilon_end`` (machin's ``epsilon_decay``); piecewise: linear through the points
        ``epsilon_boundaries`` (env steps), ``epsilon_values``.
      epsilon_decay: an exponential schedule's factor per acting call (machin's 0.9999).
      epsilon_boundaries: a piecewise schedule's env steps, strictly increasing.
      epsilon_values: a piecewise schedule's epsilon at each boundary.
      eval_epsilon: epsilon of greedy evaluation (``explore=False``).
    """

    epsilon_start: float = option(1.0, ge=0, le=1)
    epsilon_end: float = option(0.05, ge=0, le=1)
    epsilon_decay_steps: int = option(250_000, ge=0)
    epsilon_schedule: Literal["linear", "exponential", "piecewise"] = "linear"
    epsilon_decay: float = option(0.9999, gt=0, le=1)
    epsilon_boundaries: tuple[int, ...] = option((), ge=0)
    epsilon_values: tuple[float, ...] = option((), ge=0, le=1)
    eval_epsilon: float = option(0.0, ge=0, le=1)

    def __post_init__(self):
        super().__post_init__()
        if self.epsilon_schedule == "piecewise":
            b, v = self.epsilon_boundaries, self.epsilon_values
            check_piecewise("epsilon_boundaries", b, "epsilon_values", v)


def scale_transform(cfg: OptimizerOptions, eps: float = 1e-8) -> optax.GradientTransformation:
    """``cfg.optimizer`` without its learning rate (``eps``: Adam's epsilon), after the
    element-wise clip of ``cfg.grad_clip`` where it is set."""
    optimizer = _optimizer(cfg, eps)
    if cfg.grad_clip is None:
        return optimizer  # the optimizer's own state layout, as before the option existed
    return optax.chain(optax.clip(cfg.grad_clip), optimizer)


def _optimizer(cfg: OptimizerOptions, eps: float) -> optax.GradientTransformation:
    if cfg.optimizer == "adam":
        return optax.scale_by_adam(eps=eps)
    if cfg.optimizer == "radam":
        return optax.scale_by_radam(eps=eps)
    if cfg.optimizer == "adamw":
        return optax.chain(
            optax.scale_by_adam(eps=eps), optax.add_decayed_weights(cfg.weight_decay)
        )
    momentum = [optax.trace(decay=cfg.momentum)] if cfg.momentum > 0 else []
    if cfg.optimizer == "sgd":
        return optax.chain(*momentum) if momentum else optax.identity()
    scale = optax.scale_by_stddev if cfg.rmsprop_centered else optax.scale_by_rms
    rms = scale(
        decay=cfg.rmsprop_decay,
        eps=cfg.rmsprop_eps,
        initial_scale=cfg.rmsprop_initial_scale,
        eps_in_sqrt=cfg.rmsprop_eps_in_sqrt,
    )
    return optax.chain(rms, *momentum)


def lr_factor(cfg: OptimizerOptions) -> Schedule | None:
    """``step -> factor`` of ``cfg.lr_schedule`` (the learning rate is ``lr * factor``), or
    None for ``constant`` (no factor: the update is unchanged bit for bit)."""
    if cfg.lr_schedule == "constant":
        return None
    if cfg.lr_schedule == "linear":
        return optax.linear_schedule(1.0, cfg.lr_end_factor, cfg.lr_decay_steps)
    if cfg.lr_schedule == "cosine":
        return optax.cosine_decay_schedule(1.0, cfg.lr_decay_steps, alpha=cfg.lr_end_factor)
    scales = dict(zip(cfg.lr_boundaries, cfg.lr_scales, strict=True))
    return optax.piecewise_constant_schedule(1.0, scales)


def scheduled_lr(cfg: OptimizerOptions, lr: jax.Array, step: jax.Array) -> jax.Array:
    """The learning rate at env step ``step``: ``lr`` (from hparams) times the factor."""
    factor = lr_factor(cfg)
    return lr if factor is None else lr * factor(step)


def optimizer_step(
    optimizer: optax.GradientTransformation, params: Any, grads: Any, opt_state: Any, lr: Any
) -> tuple[Any, Any]:
    """One step of ``optimizer`` (a ``scale_transform``: no learning rate) with the
    (possibly traced, scheduled) learning rate ``lr``: ``params - lr * u``."""
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
    return params, opt_state


def parameter_norms(name: str, params: Any, grads: Any) -> dict[str, jax.Array]:
    """Per-parameter logging as Emote's ``LogWeightsAndGradNorm`` does it: for each leaf of
    ``params`` (and the matching leaf of ``grads``, the same tree) the L2 norm of the
    weights and of their gradient, float32 scalars, keyed ``norms/NAME/PATH/weight`` and
    ``norms/NAME/PATH/grad`` with ``PATH`` the leaf's keys joined by ``/``
    (``params/Dense_0/kernel``)."""

    def path_name(path: tuple) -> str:
        return "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path)

    out: dict[str, jax.Array] = {}
    for kind, tree in (("weight", params), ("grad", grads)):
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            norm = jnp.sqrt(jnp.sum(jnp.square(leaf.astype(jnp.float32))))
            out[f"norms/{name}/{path_name(path)}/{kind}"] = norm
    return out


def scheduled_lrs(cfg: OptimizerOptions, hparams: dict, step: jax.Array) -> dict:
    """``hparams`` with every learning rate (``lr`` and keys ending in ``_lr``: SAC's
    ``actor_lr``, ``critic_lr``, ``alpha_lr``) at env step ``step``; the same dict when
    the schedule is constant."""
    factor = lr_factor(cfg)
    if factor is None:
        return hparams
    scale = factor(step)
    return {k: v * scale if k == "lr" or k.endswith("_lr") else v for k, v in hparams.items()}


def epsilon_schedule(
    cfg: EpsilonOptions, start: jax.Array, end: jax.Array, num_envs: int
) -> Schedule:
    """The exploration rate over env steps of ``cfg.epsilon_schedule``: ``linear`` from
    ``start`` to ``end`` over ``epsilon_decay_steps`` (RLHive's ``LinearSchedule``);
    ``exponential``: ``max(end, start * epsilon_decay^k)`` after ``k`` acting calls of
    ``num_envs`` env steps (machin's multiplicative ``epsilon_decay``, 0.9999);
    ``piecewise``: linear through the points ``(epsilon_boundaries[i], epsilon_values[i])``.
    ``start``/``end`` come from hparams."""
    if cfg.epsilon_schedule == "exponential":
        return exponential_schedule(start, end, cfg.epsilon_decay, num_envs)
    if cfg.epsilon_schedule == "piecewise":
        return piecewise_linear_schedule(cfg.epsilon_boundaries, cfg.epsilon_values)
    return linear_schedule(start, end, cfg.epsilon_decay_steps)


def clip_by_global_norm(eps: float = 1e-6) -> optax.GradientTransformationExtraArgs:
    """Scales the gradients by ``min(1, max_norm / (global_norm + eps))``, ``max_norm``
    given to ``update`` as the keyword ``max_norm`` (a traced value from ``state.hparams``,
    so that a sweep can vmap over it; ``inf`` turns clipping off).

    ``optax.clip_by_global_norm`` computes the same global norm but scales by
    ``(g / norm) * max_norm`` where ``norm >= max_norm`` (and takes ``max_norm`` when the
    transform is built): the results differ in the last bits and by ``eps``, so this keeps
    the OpenAI baselines' / CleanRL's formula that jaxrl's PPO has always used; chain it
    like any optax transform (``make_optimizer``)."""

    def update(updates, state, params=None, *, max_norm, **extra_args):
        del params, extra_args
        leaves = jax.tree.leaves(updates)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in leaves))
        scale = jnp.minimum(1.0, max_norm / (norm + eps))
        return jax.tree.map(lambda g: g * scale, updates), state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update)
