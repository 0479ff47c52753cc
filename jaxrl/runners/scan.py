"""The fused on-device training loop, in the style of PureJaxRL.

One *iteration* steps the vectorized environment ``rollout_len`` times with ``agent.act``
(``lax.scan``), then calls ``agent.update`` on the rollout ``[rollout_len, num_envs]``.
A *chunk* is ``iterations_per_chunk`` iterations (one ``lax.scan``) followed, every
``eval_every`` env steps, by greedy evaluation episodes. ``make_train`` scans over all chunks
and returns one pure function ``train(key) -> (RunnerState, metrics)`` that can be
jitted, and vmapped over seeds (and hyperparameters); the host driver in
``jaxrl.experiment`` instead calls ``Runner.run_chunk`` repeatedly to log between chunks.

Schedule decisions (whether to evaluate) come from the chunk counter, which only grows by
constants: a ``types.shared_field``, kept unbatched by ``experiment.sweep.batch_runner``, so
the evaluation ``lax.cond`` is a real branch under ``vmap`` (as are the agents' learning
branches on their own shared env-step counters).

The agent's per-env carry (``Agent.init_carry``: recurrent state, OU noise) lives in the
``RunnerState`` beside the observations; after every env step it is reset to its initial
value where an episode ended (``terminated | truncated``), in training and in evaluation.

Warm-up collection is the agent's business: an off-policy agent's ``update`` only stores
experience until ``learning_starts`` env steps have been seen (see ``agents/q_learning/dqn.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.runners.base import ChunkLayout, RunConfig, Runner, RunnerState, scanned_runner
from jaxrl.types import Agent, Env, TimeStep, Transition, reset_carry


def episode_done(ts: TimeStep) -> jax.Array:
    """``[N]`` bool: a whole episode ended, so ``info["episode_return"]`` is its raw score.

    ``info["episode_done"]`` where the env gives it (Atari with ``episodic_life`` ends a
    learning episode at each lost life but reports the score once per game), else
    ``terminated | truncated``.
    """
    return ts.info.get("episode_done", ts.terminated | ts.truncated)


def make_evaluate(agent: Agent, env: Env) -> Callable[[Any, jax.Array], jax.Array]:
    """Returns ``evaluate(agent_state, key) -> returns [env.spec.num_envs]``.

    Runs ``act(..., explore=False)`` in every env of ``env`` until each has finished one
    episode (at most ``max_episode_steps``) and returns each first episode's raw return.
    """
    num_envs = env.spec.num_envs

    initial_carry = agent.init_carry(num_envs)

    def evaluate(agent_state: Any, key: jax.Array) -> jax.Array:
        key, reset_key = jax.random.split(key)
        env_state, timestep = env.reset(reset_key)

        def cond(loop):
            _, _, _, _, finished, _, t = loop
            return (~finished.all()) & (t < env.spec.max_episode_steps)

        def body(loop):
            env_state, obs, carry, key, finished, returns, t = loop
            key, act_key, step_key = jax.random.split(key, 3)
            action, carry, _ = agent.act(agent_state, obs, carry, act_key, False)
            env_state, ts = env.step(env_state, action, step_key)
            carry = reset_carry(carry, initial_carry, ts.terminated | ts.truncated)
            done = episode_done(ts)
            returns = jnp.where(done & ~finished, ts.info["episode_return"], returns)
            return env_state, ts.obs, carry, key, finished | done, returns, t + 1

        loop = (
            env_state,
            timestep.obs,
            initial_carry,
            key,
            jnp.zeros(num_envs, bool),
            jnp.zeros(num_envs, jnp.float32),
            jnp.zeros((), jnp.int32),
        )
        return jax.lax.while_loop(cond, body, loop)[5]

    return evaluate


def make_rollout(agent: Agent, env: Env, rollout_len: int) -> Callable[..., Any]:
    """Returns ``rollout(agent_state, env_state, obs, carry, key) -> ((env_state, obs,
    carry), transitions, stats)``: ``rollout_len`` steps of ``env`` with ``agent.act``
    (``explore=True``) in one ``lax.scan``, the carry reset where an episode ends.

    ``transitions``: a ``Transition`` with leaves ``[rollout_len, num_envs, ...]``;
    ``stats``: ``episodes`` (int32), ``episode_return_sum`` (float32) and
    ``episode_length_sum`` (int32) over the episodes finished at each step,
    ``[rollout_len]``. The fused runner's iteration and Sebulba's actors
    (``runners/distributed/sebulba.py``) both use it.
    """
    initial_carry = agent.init_carry(env.spec.num_envs)

    def env_step(loop, key):
        agent_state, env_state, obs, carry = loop
        act_key, step_key = jax.random.split(key)
        action, carry, extras = agent.act(agent_state, obs, carry, act_key, True)
        env_state, ts = env.step(env_state, action, step_key)
        transition = Transition(
            obs, action, ts.reward, ts.info["final_obs"], ts.terminated, ts.truncated, extras
        )
        carry = reset_carry(carry, initial_carry, ts.terminated | ts.truncated)
        done = episode_done(ts)
        stats = {
            "episodes": done.sum(),
            "episode_return_sum": jnp.where(done, ts.info["episode_return"], 0.0).sum(),
            "episode_length_sum": jnp.where(done, ts.info["episode_length"], 0).sum(),
        }
        return (agent_state, env_state, ts.obs, carry), (transition, stats)

    def rollout(agent_state: Any, env_state: Any, obs: Any, carry: Any, key: jax.Array):
        keys = jax.random.split(key, rollout_len)
        (_, env_state, obs, carry), (transitions, stats) = jax.lax.scan(
            env_step, (agent_state, env_state, obs, carry), keys
        )
        return (env_state, obs, carry), transitions, stats

    return rollout


def make_runner(agent: Agent, env: Env, config: RunConfig, eval_env: Env | None = None) -> Runner:
    """Builds the chunked training program. ``eval_env`` defaults to ``env`` (then an
    evaluation averages ``env.spec.num_envs`` episodes)."""
    num_envs = env.spec.num_envs
    layout = ChunkLayout.of(config, num_envs)
    evaluate = make_evaluate(agent, eval_env or env)
    initial_carry = agent.init_carry(num_envs)

    def init(key: jax.Array, hparams: Any = None) -> RunnerState:
        key, agent_key, env_key = jax.random.split(key, 3)
        agent_state = agent.init(agent_key)
        if hparams is not None:
            agent_state = agent_state.replace(hparams=hparams)
        env_state, timestep = env.reset(env_key)
        return RunnerState(
            agent_state, env_state, timestep.obs, initial_carry, key, jnp.zeros((), jnp.int32)
        )

    rollout = make_rollout(agent, env, config.rollout_len)

    def iteration(state: RunnerState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        (env_state, obs, carry), transitions, stats = rollout(
            state.agent_state, state.env_state, state.obs, state.carry, rollout_key
        )
        agent_state, agent_metrics = agent.update(state.agent_state, transitions, update_key)
        metrics = {k: v.sum() for k, v in stats.items()}
        metrics.update({k: jnp.asarray(v, jnp.float32) for k, v in agent_metrics.items()})
        state = dataclasses.replace(
            state, agent_state=agent_state, env_state=env_state, obs=obs, carry=carry, key=key
        )
        return state, metrics

    def evaluate_mean(agent_state: Any, key: jax.Array) -> dict[str, jax.Array]:
        return {"eval_return": evaluate(agent_state, key).mean()}

    return scanned_runner(env, init, iteration, evaluate, evaluate_mean, layout)


def make_train(
    agent: Agent, env: Env, config: RunConfig, eval_env: Env | None = None
) -> Callable[..., tuple[RunnerState, dict[str, jax.Array]]]:
    """Returns the pure ``train(key, hparams=None) -> (RunnerState, metrics)``.

    ``metrics`` maps each name to an array ``[num_iterations]`` (one entry per update):
    the agent's metrics, ``step`` (env steps so far), ``episodes``,
    ``episode_return_sum``, ``episode_length_sum`` (over episodes finished in the
    iteration; raw, unclipped) and ``eval_return`` (NaN where no evaluation ran).
    ``hparams`` replaces the agent state's ``hparams`` (for vmapped sweeps).
    """
    runner = make_runner(agent, env, config, eval_env)

    def train(key: jax.Array, hparams: Any = None):
        state = runner.init(key, hparams)
        state, metrics = jax.lax.scan(
            lambda s, _: runner.run_chunk(s), state, None, length=runner.num_chunks
        )
        return state, jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), metrics)

    return train
