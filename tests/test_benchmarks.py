"""The benchmark scripts still import: a name a refactor removed from ``jaxrl`` (as
``DQN_FLAGS`` once was from ``jaxrl.agents.q_learning.dqn``) fails here, not in a user's hands."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

IMPORT_ALL = """
import importlib, pathlib, sys, traceback
sys.path.insert(0, "benchmarks")
failed = []
for path in sorted(pathlib.Path("benchmarks").glob("*.py")):
    try:
        importlib.import_module("benchmarks." + path.stem)
    except BaseException:
        failed.append(path.name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_benchmark_script_imports():
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert "atari_throughput.py" in scripts and len(scripts) > 20
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_mbpo_termination_task_and_its_function_agree():
    """``benchmarks/mbpo_termination.py``: a positive force is CartPole's push right, any
    other its push left, and ``cartpole_done`` (against NumPy) is the env's own
    termination on the observation it returns, on every step of random play."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from benchmarks.mbpo_termination import cartpole_done, make_cartpole
    from jaxrl.envs.classic import cartpole_step

    obs = np.random.default_rng(0).normal(scale=[1.5, 1, 0.2, 1], size=(64, 4))
    done = (np.abs(obs[:, 0]) > 2.4) | (np.abs(obs[:, 2]) > 12 * 2 * np.pi / 360)
    np.testing.assert_array_equal(cartpole_done(jnp.asarray(obs, jnp.float32)), done)
    assert 0 < done.sum() < len(done)
    env = make_cartpole(num_envs=8)
    state, ts = env.reset(jax.random.PRNGKey(0))
    reference = jax.jit(jax.vmap(lambda s, push: cartpole_step(s, push, None)[1]))
    step, ended = jax.jit(env.step), 0
    for t in range(60):
        force = jax.random.uniform(jax.random.PRNGKey(t), (8, 1), minval=-1, maxval=1)
        want = reference(ts.obs, (force[:, 0] > 0).astype(jnp.int32))
        state, ts = step(state, force, jax.random.PRNGKey(100 + t))
        np.testing.assert_allclose(ts.info["final_obs"], want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(ts.terminated, cartpole_done(ts.info["final_obs"]))
        ended += int(ts.terminated.sum())
    assert ended > 0
