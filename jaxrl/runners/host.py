"""The host-side training loop, for environments that are not JAX programs.

``make_host_runner(agent, env, config, eval_env)`` returns a ``Runner`` with the same
fields and the same per-iteration metrics as ``runners.scan.make_runner``, for a
``jaxrl.envs.gymnasium.HostEnv`` (a Gymnasium vector env stepped from Python). One
iteration steps the env ``rollout_len`` times with ``agent.act`` and then calls
``agent.update`` on the rollout ``[rollout_len, num_envs]``; a chunk is
``iterations_per_chunk`` iterations followed, on the chunks the fused runner would
evaluate on, by a greedy evaluation.

``act`` (both ``explore`` values) and ``update`` are each jitted once and compiled ahead
of time by ``init`` (so the driver's compile time includes them). Per env step the host
sends the observation batch to the device and gets the action batch back; the rollout
goes to ``update`` as one transfer per iteration; the agent state (replay buffer
included) stays on the device, donated to ``update`` so that it is updated in place. The
agent's metrics stay on the device until the end of the chunk.

Unlike the fused runner's, ``run_chunk`` is not pure: the environment's state lives in
the ``HostEnv`` object, so a ``HostRunnerState`` must be used once, in order. For the
same reason the runner says ``jittable=False`` and checkpoints a ``LearnerCheckpoint``
(agent state, key, chunk counter): a resumed run restarts its envs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.runners.base import ChunkLayout, RunConfig, Runner, learner_runner
from jaxrl.types import Agent, Transition, batched_spec, reset_carry


@dataclasses.dataclass
class HostRunnerState:
    """agent_state on the device; ``obs`` ``[N, ...]`` NumPy (or a dict of such); ``carry``
    the agent's per-env carry (on the device); ``key`` a PRNG key; ``chunk`` the number of
    chunks done."""

    agent_state: Any
    obs: Any
    carry: Any
    key: jax.Array
    chunk: int


def _seed(key: jax.Array) -> int:
    """A reset seed for the host env drawn from ``key``."""
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


def _compile(
    agent: Agent, spec: Any, eval_num_envs: int, T: int, agent_state: Any, key: jax.Array
) -> dict[str, Any]:
    """``act`` (``explore`` True for ``spec.num_envs`` envs, False for ``eval_num_envs``)
    and ``update`` (a rollout ``[T, num_envs]``, the agent state donated), each jitted
    with the key split inside and compiled ahead of time for these shapes."""
    num_envs = spec.num_envs

    def act_fn(agent_state, obs, carry, key, explore):
        key, act_key = jax.random.split(key)
        action, carry, extras = agent.act(agent_state, obs, carry, act_key, explore)
        return action, carry, extras, key

    def update_fn(agent_state, rollout, key):
        key, update_key = jax.random.split(key)
        agent_state, metrics = agent.update(agent_state, rollout, update_key)
        return agent_state, {k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}, key

    compiled = {}
    obs = batched_spec(spec.obs_spec, num_envs)
    eval_obs = batched_spec(spec.obs_spec, eval_num_envs)
    carry = jax.eval_shape(lambda: agent.init_carry(num_envs))
    eval_carry = jax.eval_shape(lambda: agent.init_carry(eval_num_envs))
    act = jax.jit(act_fn, static_argnums=4)
    compiled["act"] = act.lower(agent_state, obs, carry, key, True).compile()
    compiled["eval_act"] = act.lower(agent_state, eval_obs, eval_carry, key, False).compile()
    action, _, extras, _ = jax.eval_shape(
        lambda s, o, c, k: act_fn(s, o, c, k, True), agent_state, obs, carry, key
    )
    step = lambda x: jax.ShapeDtypeStruct((T, *x.shape), x.dtype)
    rollout = Transition(
        obs=jax.tree.map(step, obs),
        action=step(action),
        reward=jax.ShapeDtypeStruct((T, num_envs), jnp.float32),
        next_obs=jax.tree.map(step, obs),
        terminated=jax.ShapeDtypeStruct((T, num_envs), jnp.bool_),
        truncated=jax.ShapeDtypeStruct((T, num_envs), jnp.bool_),
        extras=jax.tree.map(step, extras),
    )
    update = jax.jit(update_fn, donate_argnums=0)
    compiled["update"] = update.lower(agent_state, rollout, key).compile()
    return compiled


def evaluate_episodes(
    agent: Agent, eval_env: Any, eval_act: Any, agent_state: Any, key: jax.Array
) -> np.ndarray:
    """The first episode's raw return of each env of host env ``eval_env`` (``[num_envs]``
    float32), acting with ``eval_act(agent_state, obs, carry, key) -> (action, carry,
    extras, key)``."""
    key, reset_key = jax.random.split(key)
    obs = eval_env.reset(_seed(reset_key)).obs
    n = eval_env.spec.num_envs
    carry = eval_initial_carry = agent.init_carry(n)
    finished, returns = np.zeros(n, bool), np.zeros(n, np.float32)
    for _ in range(eval_env.spec.max_episode_steps):
        if finished.all():
            break
        action, carry, _, key = eval_act(agent_state, obs, carry, key)
        ts = eval_env.step(jax.device_get(action))
        done = ts.terminated | ts.truncated
        if jax.tree.leaves(carry):
            carry = _reset_carry(carry, eval_initial_carry, done)
        returns = np.where(done & ~finished, ts.info["episode_return"], returns)
        finished |= done
        obs = ts.obs
    return returns


def make_host_evaluate(agent: Agent, env: Any) -> Any:
    """``evaluate(agent_state, key) -> returns [num_envs]`` on host env ``env`` (a
    Gymnasium vector env stepped from Python), greedy: ``jaxrl.evaluate``'s for host envs,
    which ``runners.scan.make_evaluate`` cannot trace."""

    def eval_act(agent_state, obs, carry, key):
        key, act_key = jax.random.split(key)
        action, carry, extras = agent.act(agent_state, obs, carry, act_key, False)
        return action, carry, extras, key

    act = jax.jit(eval_act)
    return lambda agent_state, key: evaluate_episodes(agent, env, act, agent_state, key)


_reset_carry = jax.jit(reset_carry)


def make_host_runner(agent: Agent, env: Any, config: RunConfig, eval_env: Any = None) -> Runner:
    """Builds the Python training loop for a host env (``envs.gymnasium.HostEnv``).

    The layout (``iterations_per_chunk``, ``num_chunks``, ``steps_per_iteration``), the
    evaluation schedule and the metrics of ``run_chunk`` (each ``[iterations_per_chunk]``:
    ``step`` int32, ``episodes`` int32, ``episode_return_sum`` float32,
    ``episode_length_sum`` int32, ``eval_return`` float32 NaN except on an evaluation
    chunk's last row, and the agent's float32 metrics) are those of
    ``runners.scan.make_runner``. ``evaluate(agent_state, key)`` returns the first
    episode's raw return of each env of ``eval_env`` (default: ``env.spawn``, a fresh
    copy of ``env`` with as many envs), float32 ``[E]``.
    """
    # Evaluating on the training env would disturb its episodes: use a fresh copy.
    eval_env = eval_env or env.spawn(env.spec.num_envs)
    spec = env.spec
    num_envs, T = spec.num_envs, config.rollout_len
    layout = ChunkLayout.of(config, num_envs)
    iterations_per_chunk = layout.iterations_per_chunk

    reset_fn = jax.jit(reset_carry)
    initial_carry = agent.init_carry(num_envs)
    compiled: dict[str, Any] = {}

    def compile_all(agent_state: Any, key: jax.Array) -> None:
        compiled.update(_compile(agent, spec, eval_env.spec.num_envs, T, agent_state, key))

    def init(key: jax.Array, hparams: Any = None) -> HostRunnerState:
        key, agent_key, env_key = jax.random.split(key, 3)
        # jit: distinct output buffers (eager init may alias params and target params,
        # which ``update`` could not then donate).
        agent_state = jax.jit(agent.init)(agent_key)
        if hparams is not None:
            agent_state = agent_state.replace(hparams=hparams)
        if not compiled:
            compile_all(agent_state, key)
        timestep = env.reset(_seed(env_key))
        return HostRunnerState(agent_state, timestep.obs, initial_carry, key, 0)

    def evaluate(agent_state: Any, key: jax.Array) -> np.ndarray:
        if not compiled:
            compile_all(agent_state, key)
        return evaluate_episodes(agent, eval_env, compiled["eval_act"], agent_state, key)

    def run_chunk(state: HostRunnerState) -> tuple[HostRunnerState, dict[str, Any]]:
        agent_state, obs, carry, key = state.agent_state, state.obs, state.carry, state.key
        stats = {
            "episodes": np.zeros(iterations_per_chunk, np.int32),
            "episode_return_sum": np.zeros(iterations_per_chunk, np.float32),
            "episode_length_sum": np.zeros(iterations_per_chunk, np.int32),
        }
        agent_metrics = []
        for i in range(iterations_per_chunk):
            steps, step_extras = [], []
            for _ in range(T):
                action, carry, extras, key = compiled["act"](agent_state, obs, carry, key)
                action_np, extras_np = jax.device_get((action, extras))
                ts = env.step(action_np)
                done = ts.terminated | ts.truncated
                if jax.tree.leaves(carry):
                    carry = reset_fn(carry, initial_carry, done)
                steps.append(
                    (obs, action_np, ts.reward, ts.info["final_obs"], ts.terminated, ts.truncated)
                )
                step_extras.append(extras_np)
                stats["episodes"][i] += done.sum()
                stats["episode_return_sum"][i] += ts.info["episode_return"][done].sum()
                stats["episode_length_sum"][i] += ts.info["episode_length"][done].sum()
                obs = ts.obs
            stacked = (jax.tree.map(lambda *x: np.stack(x), *f) for f in zip(*steps, strict=True))
            rollout = Transition(
                *stacked, extras=jax.tree.map(lambda *x: np.stack(x), *step_extras)
            )  # type: ignore[misc]  # steps hold the six fields before extras
            agent_state, metrics, key = compiled["update"](agent_state, rollout, key)
            agent_metrics.append(metrics)
        chunk = state.chunk + 1
        metrics = {k: np.stack(v) for k, v in jax.device_get(_transpose(agent_metrics)).items()}
        metrics.update(stats)
        metrics["step"] = layout.iteration_steps(chunk, np)
        metrics["eval_return"] = np.full(iterations_per_chunk, np.nan, np.float32)
        key, eval_key = jax.random.split(key)
        if layout.evaluates(chunk):
            metrics["eval_return"][-1] = evaluate(agent_state, eval_key).mean()
        return HostRunnerState(agent_state, obs, carry, key, chunk), metrics

    return learner_runner(agent, init, run_chunk, evaluate, layout)


def _transpose(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {k: [row[k] for row in rows] for k in rows[0]} if rows else {}
