"""Exported greedy policies: file sizes, export times and agreement with JAX.

For each agent family (default sizes, freshly initialized parameters: the graph and its
size do not depend on training), exports ``greedy_policy`` as ONNX (batch 256) and
StableHLO (symbolic batch), runs both on 256 random observations, and prints the largest
difference from ``agent.act(..., explore=False)`` (exact match counted for discrete
actions).

    python benchmarks/export_policies.py
"""

from __future__ import annotations

import platform
import time

import jax
import numpy as np
import onnxruntime as ort

from jaxrl import agents, envs
from jaxrl.export import greedy_policy, to_onnx, to_stablehlo

CASES = [
    ("dqn", "CartPole"),
    ("rainbow", "CartPole"),
    ("ppo", "CartPole"),
    ("a2c", "CartPole"),
    ("ppo", "Pendulum"),
    ("sac", "Pendulum"),
    ("td3", "Pendulum"),
    ("ddpg", "Pendulum"),
    ("dqn", "MinAtar-Breakout"),
    ("rainbow", "MinAtar-Breakout"),
    ("ppo", "MinAtar-Breakout"),
]
BATCH = 256


def feed_for(inputs, seed=0):
    rng = np.random.default_rng(seed)
    feed = {}
    for name, s in inputs.items():
        if np.dtype(s.dtype).kind == "f" and not name.startswith("carry"):
            feed[name] = (2 * rng.normal(size=s.shape)).astype(s.dtype)
        elif name.startswith("carry"):
            feed[name] = np.zeros(s.shape, s.dtype)
        else:
            feed[name] = rng.integers(0, 2, s.shape).astype(s.dtype)
    return feed


def agreement(got, want):
    if np.dtype(want.dtype).kind == "f":
        return f"max |diff| {np.abs(got - want).max():.1e}"
    return f"{(got == want).mean() * 100:.1f}% equal"


def main() -> None:
    print(f"{platform.machine()} CPU, jax {jax.__version__}, onnxruntime {ort.__version__}")
    header = f"{'agent':<8} {'env':<17} {'onnx KB':>8} {'s':>5} {'onnx vs act':>20} "
    print(header + f"{'hlo KB':>7} {'s':>5} {'hlo vs act':>20}")
    for agent_name, env_name in CASES:
        spec = envs.make(env_name, num_envs=1).spec
        agent = agents.make(agent_name, spec)
        state = agent.init(jax.random.PRNGKey(0))
        fn, inputs = greedy_policy(agent, state, spec, BATCH)
        feed = feed_for(inputs)
        want = np.asarray(jax.jit(fn)(**feed)[0])
        t0 = time.perf_counter()
        model = to_onnx(fn, inputs).SerializeToString()
        t1 = time.perf_counter()
        got = ort.InferenceSession(model).run(None, feed)[0]
        t2 = time.perf_counter()
        blob = to_stablehlo(fn, inputs)
        t3 = time.perf_counter()
        hlo = np.asarray(jax.export.deserialize(bytearray(blob)).call(*feed.values())[0])
        print(
            f"{agent_name:<8} {env_name:<17} {len(model) / 1e3:>8.1f} {t1 - t0:>5.1f} "
            f"{agreement(got, want):>20} {len(blob) / 1e3:>7.1f} {t3 - t2:>5.1f} "
            f"{agreement(hlo, want):>20}"
        )


if __name__ == "__main__":
    main()
