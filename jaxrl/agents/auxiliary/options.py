"""The config options of demonstrations and auxiliary learners, shared by every agent that
takes them (the off-policy actor-critics SAC, TD3, DDPG and the Q-learning agents), and
``make_auxiliary``, which turns them into an ``agents.auxiliary.base.Auxiliary`` (or None).

The demonstration file is read here, once, when the agent is built (``load_npz``; its
keys, shapes and dtypes checked against the env's spec): a bad file, a ratio without a
file, or AMP without reference data is a ``ConfigError`` (one line; the CLI exits with
code 2 before a run directory is made).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from jaxrl.agents.auxiliary.amp import make_action_symmetry, make_amp
from jaxrl.agents.auxiliary.base import Auxiliary, Encoder
from jaxrl.agents.auxiliary.curl import make_curl
from jaxrl.agents.auxiliary.extra_loss import load
from jaxrl.buffers.demonstrations import demo_count, load_npz
from jaxrl.types import Box, ConfigError, EnvSpec, Transition
from jaxrl.validation import Options, option


@dataclasses.dataclass(frozen=True)
class AuxiliaryOptions(Options):
    """Demonstrations and auxiliary learners (``agents/auxiliary/base.py``); all off by default.

    Attributes:
      demo_file: a ``.npz`` of transitions: demonstrations mixed into batches, AMP's
        reference data. See ``buffers/demonstrations.py``; e.g. written by ``python -m
        jaxrl.export_buffer``. None: none.
      demo_ratio: the fraction of every replay batch replaced by demonstrations, in
        [0, 1]. Exactly ``round(demo_ratio * batch_size)`` rows per batch.
      amp: attach AMP (Peng et al. 2021), reference transitions ``demo_file``'s. The
        discriminator (``agents/auxiliary/amp.py``) tells the agent's ``(obs, next_obs)``
        from the demonstrations'.
      style_reward_weight: ``w_S``, the style reward's weight added to the task reward.
        A continuous hyperparameter (sweepable); 0 leaves the agent as without AMP.
      amp_grad_penalty: ``w^gp`` of the gradient penalty on reference samples (10, the
        paper's value); also the action-symmetry discriminator's.
      amp_lr: the discriminator's Adam learning rate (3e-4: SAC's). The paper's 1e-5 was
        for runs of 10^8 samples, too slow for short runs.
      amp_hidden_sizes: the discriminator's ReLU layers (the paper's 1024, 512 for
        humanoids; 256, 256 here).
      action_symmetry: attach Emote's action-symmetry discriminator and confusion reward.
      right_action_map, left_action_map: action dimensions of the right and the left
        side, pairwise mirrored (same length, each index in ``[0, |A|)``).
      confusion_reward_weight: the confusion reward's weight added to the task reward.
      curl: attach CURL (Laskin et al. 2020), a contrastive loss on random image crops.
        The loss (``agents/auxiliary/curl.py``) is added to the agent's, shaping its torso
        (the Q-learning agents: dqn, rainbow and their kind; sac, on its critic's encoder,
        shared then by the critics and, detached, by the actor: ``agents/off_policy/sac.py``).
        Defaults: CURL's reference Rainbow (``aravindsrinivas/curl_rainbow``); the preset
        ``pixels-pendulum-curl-sac`` sets the paper's SAC values.
      curl_pad: the crop's padding, pixels per side (4 for 84x84 Atari frames, 1 for
        MinAtar's 10x10). Edge pixels are repeated, then cropped back at a random offset,
        as the reference.
      curl_weight: the contrastive loss's weight in the agent's loss (1; the reference's
        0.01 for Pong, Boxing, Private Eye and Freeway).
      curl_tau: the momentum encoder's update fraction per gradient step (0.001). The
        reference's momentum 0.999; the paper's DMControl SAC 0.05.
      curl_lr: Adam's learning rate for ``W`` and the projection head (1e-4).
      curl_hidden, curl_dim: the projection head's widths (256, 128).
      curl_logit_scale: the InfoNCE logits' scale (0.1 as the reference; the paper: 1).
      extra_losses: a user's extra loss terms, each named ``package.module:function``.
        The function takes the env's spec and returns a ``jaxrl.agents.ExtraLoss``; a config
        file naming one needs ``--import package.module``. See ``docs/how-to/extra-losses.md``.
    """

    demo_file: str | None = None
    demo_ratio: float = option(0.0, ge=0, le=1)
    amp: bool = False
    style_reward_weight: float = option(1.0, ge=0)
    amp_grad_penalty: float = option(10.0, ge=0)
    amp_lr: float = option(3e-4, gt=0)
    amp_hidden_sizes: tuple[int, ...] = option((256, 256), ge=1, min_len=1)
    action_symmetry: bool = False
    right_action_map: tuple[int, ...] = option((), ge=0)
    left_action_map: tuple[int, ...] = option((), ge=0)
    confusion_reward_weight: float = option(1.0, ge=0)
    curl: bool = False
    curl_pad: int = option(4, ge=0)
    curl_weight: float = option(1.0, ge=0)
    curl_tau: float = option(0.001, gt=0, le=1)
    curl_lr: float = option(1e-4, gt=0)
    curl_hidden: int = option(256, ge=1)
    curl_dim: int = option(128, ge=1)
    curl_logit_scale: float = option(0.1, gt=0)
    extra_losses: tuple[str, ...] = ()


def _symmetry(spec: EnvSpec, cfg: Any, name: str):
    right, left = tuple(cfg.right_action_map), tuple(cfg.left_action_map)
    size = int(np.prod(spec.action_space.shape)) if isinstance(spec.action_space, Box) else 0
    if not right or len(right) != len(left) or max(right + left) >= size:
        raise ConfigError(
            f"agent '{name}': action_symmetry needs right_action_map and left_action_map of "
            f"the same non-zero length with indices in [0, {size}) (continuous actions), got "
            f"{list(right)} and {list(left)}"
        )
    return make_action_symmetry(
        right, left, cfg.amp_hidden_sizes, cfg.amp_grad_penalty, cfg.amp_lr,
        cfg.confusion_reward_weight,
    )  # fmt: skip


def _curl(spec: EnvSpec, cfg: Any, name: str, encoder: Encoder | None):
    if encoder is None:
        raise ConfigError(
            f"agent '{name}': curl attaches to sac and the Q-learning agents (dqn, rainbow, "
            "...) only"
        )
    if len(encoder.obs_shape) != 3:
        raise ConfigError(
            f"agent '{name}': curl needs image observations [H, W, C], {spec.name} gives "
            f"{list(encoder.obs_shape)}; set curl false"
        )
    return make_curl(
        encoder, cfg.curl_pad, cfg.curl_hidden, cfg.curl_dim, cfg.curl_logit_scale,
        cfg.curl_weight, cfg.curl_tau, cfg.curl_lr, getattr(cfg, "adam_eps", 1.5e-4),
    )  # fmt: skip


def make_auxiliary(
    spec: EnvSpec,
    cfg: Any,
    name: str,
    to_stored_action: Callable[[np.ndarray], np.ndarray] | None = None,
    encoder: Encoder | None = None,
) -> Auxiliary | None:
    """The ``Auxiliary`` of ``cfg``'s ``AuxiliaryOptions`` for agent ``name`` on ``spec``,
    or None when nothing is attached (a ``demo_file`` alone is read and checked).
    ``to_stored_action`` maps the file's actions (env units) to the agent's stored ones
    (the actor-critics' ``[-1, 1]``); ``encoder`` is the agent's torso for CURL (the
    Q-learning skeleton's, SAC's critic's; None: CURL is refused). ConfigError for a bad
    demonstration file, a ratio without one, AMP without reference data, or a ratio with
    n-step returns or prioritized replay (demonstrations are one-step, uniform)."""
    want_demos = cfg.demo_ratio > 0
    users = cfg.extra_losses
    if not (want_demos or cfg.amp or cfg.action_symmetry or cfg.demo_file or cfg.curl or users):
        return None
    if cfg.demo_file is None and (want_demos or cfg.amp):
        what = f"demo_ratio {cfg.demo_ratio}" if want_demos else "amp"
        raise ConfigError(
            f"agent '{name}': {what} needs reference data: give --agent.demo_file PATH.npz "
            "(transitions, e.g. from python -m jaxrl.export_buffer)"
        )
    if want_demos and (getattr(cfg, "n_step", 1) > 1 or getattr(cfg, "prioritized", False)):
        raise ConfigError(
            f"agent '{name}': demo_ratio > 0 takes one-step uniform replay; set n_step 1 and "
            "prioritized false, or demo_ratio 0"
        )
    demos = None
    if cfg.demo_file is not None:
        try:
            demos = load_npz(cfg.demo_file, spec)
        except ValueError as e:
            raise ConfigError(f"agent '{name}': {e}") from None
        if to_stored_action is not None:
            demos = demos._replace(action=to_stored_action(demos.action))
    learners = []
    if cfg.amp:
        reference = cast(Transition[np.ndarray], demos)  # amp needs a demo_file (above)
        amp = make_amp(
            reference, cfg.amp_hidden_sizes, cfg.amp_grad_penalty, cfg.amp_lr,
            cfg.style_reward_weight,
        )  # fmt: skip
        learners.append(("amp", amp))
    if cfg.action_symmetry:
        learners.append(("symmetry", _symmetry(spec, cfg, name)))
    if cfg.curl:
        learners.append(("curl", _curl(spec, cfg, name, encoder)))
    learners.extend(load(users, spec, name))
    count = demo_count(cfg.demo_ratio, cfg.batch_size)
    if not (learners or count):
        return None  # a checked file that nothing uses
    return Auxiliary(tuple(learners), demos if count else None, count)


__all__ = ["AuxiliaryOptions", "make_auxiliary"]
