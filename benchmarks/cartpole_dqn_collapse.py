"""Why DQN on CartPole falls back after solving (issue 21, part 2): variants of a preset.

    python benchmarks/cartpole_dqn_collapse.py [--preset cartpole-dqn] [--seeds 8]
        [--steps N] [--variants NAME ...] [--set LABEL KEY=VALUE ...] [--plot FILE]

Each variant is the preset with a few dotted overrides (``VARIANTS``, or ``--set label
agent.loss=mse agent.double=true``; values parsed as the CLI's overrides), run as one
vmapped program of ``--seeds`` members for the preset's budget (``--steps`` cuts it) with
no early stop, through ``benchmarks/presets.py``'s ``run_preset``. Per variant it prints
one table row: the IQM of the final greedy returns (20 episodes per member) with its 95%
stratified bootstrap CI (``jaxrl.stats``), members at or above 475 at the end and at any evaluation,
the IQM evaluation curve's peak and its end, compile and run seconds, and the load
average, and how 20 greedy episodes per member of the final policies end (summed over
members: the cart off the track, the pole fallen, or 500 steps). ``--plot`` draws every
variant's IQM evaluation curve (95% bootstrap band) in one figure; ``--json`` writes the
per-member numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from presets import run_preset  # noqa: E402

from jaxrl import stats  # noqa: E402
from jaxrl.envs.classic import cartpole_reset, cartpole_step  # noqa: E402
from jaxrl.experiment.config import parse_override  # noqa: E402
from jaxrl.plot import plot  # noqa: E402
from jaxrl.types import member_axes  # noqa: E402

TARGET = 475.0

# The candidates of issue 21 part 2, each a set of overrides of the preset. Loss and
# clipping are named in every variant so that the table reads the same whichever the
# preset has: "huber-clip" is the preset before issue 21 (SB3's loss and clip), "mse" the
# preset after it (CleanRL's and PureJaxRL's DQN loss, no clip).
HUBER_CLIP = {"agent.loss": "huber", "agent.max_grad_norm": 10.0}
MSE = {"agent.loss": "mse", "agent.max_grad_norm": None}
LINEAR = {"agent.lr_schedule": "linear", "agent.lr_decay_steps": 150_000}
VARIANTS: dict[str, dict] = {
    "huber-clip": HUBER_CLIP,
    "huber-no-clip": {"agent.loss": "huber", "agent.max_grad_norm": None},
    "mse-clip": {"agent.loss": "mse", "agent.max_grad_norm": 10.0},
    "mse": MSE,
    "huber-clip-lr-linear": {**HUBER_CLIP, **LINEAR},
    "mse-lr-linear": {**MSE, **LINEAR},
    "huber-clip-double": {**HUBER_CLIP, "agent.double": True},
    "huber-clip-net256": {**HUBER_CLIP, "agent.hidden_sizes": [256, 256]},
    "mse-net256": {**MSE, "agent.hidden_sizes": [256, 256]},
}

HEADER = (
    "| variant | steps | seeds | final IQM [95% CI] | final >= 475 | ever >= 475 | "
    "IQM curve: peak (step) -> end | compile s | run s | load | greedy ends: cart/pole/500 |\n"
    "| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- | --- |"
)


def row(label: str, r: dict) -> str:
    finals, curves = r["finals"], r["curves"]
    ci = stats.interval_estimate(finals)
    curve = np.array([stats.iqm(curves[:, t]) for t in range(curves.shape[1])])
    peak = int(np.argmax(curve))
    ever = int(np.sum((curves >= TARGET).any(axis=1)))
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"| {label} | {r['cfg']['run']['steps']:,} | {len(finals)} | "
        f"{float(ci.point):.1f} [{float(ci.lower):.1f}, {float(ci.upper):.1f}] | "
        f"{int(np.sum(finals >= TARGET))}/{len(finals)} | {ever}/{len(finals)} | "
        f"{curve[peak]:.0f} ({r['steps'][peak] / 1000:.0f}k) -> {curve[-1]:.0f} | "
        f"{r['compile']:.0f} | {r['run']:.0f} | {load} |"
    )


def failure_modes(agent, agent_states, episodes: int = 20, length: int = 500) -> np.ndarray:
    """How the greedy episodes of each member's final policy end: ``[members, 3]`` counts
    of episodes that ended by the cart leaving the track (``|x| > 2.4``), by the pole
    falling (``|theta| > 12 deg``), or not at all in ``length`` steps (truncated)."""

    def member(agent_state, key):
        state, obs = jax.vmap(cartpole_reset)(jax.random.split(key, episodes))
        carry = agent.init_carry(episodes)

        def step(c, k):
            state, obs, carry, alive, end = c
            action, carry, _ = agent.act(agent_state, obs, carry, k, False)
            nxt, obs, _, term = jax.vmap(cartpole_step)(
                state, action, jax.random.split(k, episodes)
            )
            end = jnp.where((alive & term)[:, None], nxt, end)
            return (nxt, obs, carry, alive & ~term, end), None

        alive = jnp.ones(episodes, bool)
        init = (state, obs, carry, alive, jnp.zeros_like(state))
        (_, _, _, alive, end), _ = jax.lax.scan(step, init, jax.random.split(key, length))
        cart = ~alive & (jnp.abs(end[:, 0]) > 2.4)
        return jnp.stack([cart.sum(), (~alive & ~cart).sum(), alive.sum()])

    members = jax.tree.leaves(agent_states.params)[0].shape[0]
    keys = jax.random.split(jax.random.PRNGKey(12345), members)
    axes = member_axes(agent_states)
    return np.asarray(jax.jit(jax.vmap(member, in_axes=(axes, 0)))(agent_states, keys))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="cartpole-dqn")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--variants", nargs="*", default=[], choices=sorted(VARIANTS))
    parser.add_argument("--set", nargs="+", action="append", default=[], metavar="ARG")
    parser.add_argument("--plot", help="one PNG with every variant's IQM curve")
    parser.add_argument("--json", help="per-member numbers of every variant")
    args = parser.parse_args(argv)
    runs = [(name, VARIANTS[name]) for name in args.variants]
    for label, *pairs in args.set:
        runs.append(
            (label, {k: parse_override(v) for k, _, v in (p.partition("=") for p in pairs)})
        )
    print(HEADER, flush=True)
    lines, record = [], {}
    for label, overrides in runs:
        r = run_preset(args.preset, args.seeds, args.steps, args.seeds, overrides)
        modes = failure_modes(r["agent"], r["agent_state"]).sum(axis=0)
        print(
            row(label, r) + f" {modes[0]}/{modes[1]}/{modes[2]} |",
            flush=True,
        )
        lines.append(dict(label=label, step=r["steps"], values=r["curves"], final=r["finals"]))
        record[label] = dict(
            overrides=overrides,
            steps=r["steps"].tolist(),
            eval_curves=r["curves"].tolist(),
            finals=r["finals"].tolist(),
            failure_modes=modes.tolist(),
        )
    if args.plot:
        plot(lines, "eval_return", args.plot, center="iqm")
    if args.json:
        Path(args.json).write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
