"""Where SAC from pixels spends its time on the CPU: one gradient step of the preset
``jaxrl/presets/pixels-pendulum-sac.yaml`` (twin critics and an actor, each with its own
conv encoder, batch 128 of 32x32x3 uint8 frames) as its own jitted call (the bound) and
inside ``lax.scan`` (where the fused training program runs it), with the canonical
backward pass of ``networks/conv.py`` (what the torso builders choose on the CPU) and with
XLA's own (docs/concepts/backends.md).

    python benchmarks/pixels_sac_step.py [--steps 10] [--config FILE]

Prints ms per gradient step and the scan/standalone ratio; compile times apart. The
training chunk's own speed is the ``sps`` column of a run's metrics (one gradient step
per env step once learning starts): compare it with the bound.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from unittest import mock

import jax
import jax.numpy as jnp
from rich.console import Console
from rich.table import Table

from jaxrl.agents.off_policy.core import LearnerState, make_optimizer
from jaxrl.agents.off_policy.sac import sac_algorithm
from jaxrl.experiment.config import resolve
from jaxrl.types import Transition


def gradient_step(config: str):
    """``(step(learner, key) -> learner, learner)`` of SAC on the config's env."""
    cfg = resolve(config_file=config)
    spec = cfg.env.make(1).spec
    acfg = cfg.agent.options
    alg = sac_algorithm(spec, acfg)
    optimizer, key, batch_size = make_optimizer(acfg), jax.random.PRNGKey(0), acfg.batch_size
    obs = jax.random.randint(key, (batch_size, *spec.obs_shape), 0, 255).astype(spec.obs_dtype)
    action_dim = spec.action_space.shape[0]
    actor = alg.actor.init(key, obs[:1])
    critic = alg.critic.init(key, obs[:1], jnp.zeros((1, action_dim)))
    learner = LearnerState(
        actor_params=actor,
        critic_params=critic,
        target_actor_params=None,
        target_critic_params=critic,
        actor_opt_state=optimizer.init(actor),
        critic_opt_state=optimizer.init(critic),
        extra=alg.init_extra(),
        updates=jnp.zeros((), jnp.int32),
        aux=None,
    )
    batch = Transition(
        obs=obs,
        action=jnp.zeros((batch_size, action_dim)),
        reward=jnp.zeros((batch_size,)),
        next_obs=obs,
        terminated=jnp.zeros((batch_size,), bool),
        truncated=jnp.zeros((batch_size,), bool),
        extras={},
    )
    scalars = dict(actor_lr=1e-3, critic_lr=1e-3, gamma=0.99, tau=0.005, reward_scale=1.0)
    h = {k: jnp.asarray(v, jnp.float32) for k, v in {**scalars, **alg.hparams}.items()}
    return lambda learner, key: alg.gradient_step(learner, batch, h, key)[0], learner


def measure(config: str, canonical: bool, steps: int) -> dict[str, float]:
    """Compile and run times of ``steps`` gradient steps. The torso specs' encoders are
    built (at trace time) with the backward pass ``canonical`` asks for."""
    with mock.patch("jaxrl.networks.spec.canonical_backward_default", lambda: canonical):
        return _measure(config, steps)


def _measure(config: str, steps: int) -> dict[str, float]:
    step, learner = gradient_step(config)
    key = jax.random.PRNGKey(1)
    alone = jax.jit(step)

    def many(learner, key):
        body = lambda learner, key: (step(learner, key), None)  # noqa: E731
        return jax.lax.scan(body, learner, jax.random.split(key, steps))[0]

    scanned = jax.jit(many)
    out = {}
    start = time.perf_counter()
    alone = alone.lower(learner, key).compile()
    out["compile alone s"] = time.perf_counter() - start
    start = time.perf_counter()
    scanned = scanned.lower(learner, key).compile()
    out["compile scan s"] = time.perf_counter() - start
    state = jax.block_until_ready(alone(learner, key))  # warm
    start = time.perf_counter()
    for i in range(steps):
        state = alone(state, jax.random.fold_in(key, i))
    jax.block_until_ready(state)
    out["alone ms"] = 1e3 * (time.perf_counter() - start) / steps
    state = jax.block_until_ready(scanned(learner, key))  # warm
    start = time.perf_counter()
    jax.block_until_ready(scanned(state, key))
    out["scan ms"] = 1e3 * (time.perf_counter() - start) / steps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="jaxrl/presets/pixels-pendulum-sac.yaml")
    parser.add_argument("--steps", type=int, default=10, help="gradient steps timed")
    args = parser.parse_args()
    table = Table(title=f"SAC gradient step, {args.config}")
    for column in ("backward pass", "alone ms/step", "in scan ms/step", "scan / alone",
                   "compile alone s", "compile scan s"):  # fmt: skip
        table.add_column(column, justify="right")
    for canonical in (True, False):
        r = measure(args.config, canonical, args.steps)
        table.add_row(
            "canonical (conv.py)" if canonical else "XLA's own",
            f"{r['alone ms']:.0f}",
            f"{r['scan ms']:.0f}",
            f"{r['scan ms'] / r['alone ms']:.2f}",
            f"{r['compile alone s']:.1f}",
            f"{r['compile scan s']:.1f}",
        )
    console = Console()
    console.print(table)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    console.print(
        f"{platform.processor() or platform.machine()}, jax {jax.__version__}, load {load}"
    )


if __name__ == "__main__":
    main()
