"""The fused on-device training loop, in the style of PureJaxRL.

One *iteration* steps the vectorized environment ``rollout_len`` times with ``agent.act``
(``lax.scan``), then calls ``agent.update`` on the rollout ``[rollout_len, num_envs]``.
A *chunk* is ``iterations_per_chunk`` iterations (one ``lax.scan``) followed, every
``eval_every`` env steps, by greedy evaluation episodes. ``make_train`` scans over all chunks
and returns one pure function ``train(key) -> (RunnerState, metrics)`` that can be
jitted, and vmapped over seeds (and hyperparameters); the host driver in
``jaxrl.experiment`` instead calls ``Runner.run_chunk`` repeatedly to log between chunks.

Schedule decisions (whether to evaluate) come from the chunk counter, which only grows by
constants and so stays unbatched under ``vmap``: the evaluation ``lax.cond`` is a real branch.

The agent's per-env carry (``Agent.init_carry``: recurrent state, OU noise) lives in the
``RunnerState`` beside the observations; after every env step it is reset to its initial
value where an episode ended (``terminated | truncated``), in training and in evaluation.

Warm-up collection is the agent's business: an off-policy agent's ``update`` only stores
experience until ``learning_starts`` env steps have been seen (see ``agents/dqn.py``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import Agent, Env, TimeStep, Transition, reset_carry


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Options of the training loop.

    Attributes:
      steps: total environment steps (summed over envs); rounded up to whole chunks.
      rollout_len: env steps per env between two ``update`` calls (T).
      log_every: env steps per chunk: one row of logged metrics each.
      eval_every: env steps between greedy evaluations (rounded to whole chunks); 0 = never.
      eval_episodes: episodes per evaluation (the CLI's evaluation env has this many envs).
      stop_return: the host driver stops after an evaluation reaching this return.
      seed: the PRNG seed of the run.
    """

    steps: int = 100_000
    rollout_len: int = 1
    log_every: int = 5_000
    eval_every: int = 10_000
    eval_episodes: int = 10
    stop_return: float | None = None
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "rollout_len", "log_every", "eval_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0, got {self.eval_every}")


@flax.struct.dataclass
class RunnerState:
    agent_state: Any
    env_state: Any
    obs: Any  # the observation pytree [num_envs, ...]
    carry: Any  # the agent's per-env carry
    key: jax.Array
    chunk: jax.Array  # int32 chunks completed; unbatched under vmap


class Runner(NamedTuple):
    """``init(key) -> RunnerState``; ``run_chunk(state) -> (state, metrics)`` with metrics
    ``{name: [iterations_per_chunk]}``; the static layout of the run. ``jittable`` is
    False for a runner that steps its env from Python (``runners/host.py``): the driver
    then calls its functions as they are."""

    init: Callable[..., RunnerState]
    run_chunk: Callable[[RunnerState], tuple[RunnerState, dict[str, jax.Array]]]
    evaluate: Callable[[Any, jax.Array], jax.Array]
    iterations_per_chunk: int
    num_chunks: int
    steps_per_iteration: int
    jittable: bool = True


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


def make_runner(agent: Agent, env: Env, config: RunConfig, eval_env: Env | None = None) -> Runner:
    """Builds the chunked training program. ``eval_env`` defaults to ``env`` (then an
    evaluation averages ``env.spec.num_envs`` episodes)."""
    num_envs = env.spec.num_envs
    steps_per_iteration = config.rollout_len * num_envs
    iterations_per_chunk = max(1, config.log_every // steps_per_iteration)
    steps_per_chunk = iterations_per_chunk * steps_per_iteration
    num_chunks = math.ceil(config.steps / steps_per_chunk)
    eval_every_chunks = max(1, round(config.eval_every / steps_per_chunk))
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

    def iteration(state: RunnerState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        keys = jax.random.split(rollout_key, config.rollout_len)
        (_, env_state, obs, carry), (rollout, stats) = jax.lax.scan(
            env_step, (state.agent_state, state.env_state, state.obs, state.carry), keys
        )
        agent_state, agent_metrics = agent.update(state.agent_state, rollout, update_key)
        metrics = {k: v.sum() for k, v in stats.items()}
        metrics.update({k: jnp.asarray(v, jnp.float32) for k, v in agent_metrics.items()})
        state = state.replace(
            agent_state=agent_state, env_state=env_state, obs=obs, carry=carry, key=key
        )
        return state, metrics

    def run_chunk(state: RunnerState) -> tuple[RunnerState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(iteration, state, None, length=iterations_per_chunk)
        chunk = state.chunk + 1
        key, eval_key = jax.random.split(state.key)
        eval_return = jax.lax.cond(
            (config.eval_every > 0) & (chunk % eval_every_chunks == 0),
            lambda: evaluate(state.agent_state, eval_key).mean(),
            lambda: jnp.full((), jnp.nan, jnp.float32),
        )
        # Per-iteration rows: env steps done, and the evaluation on the chunk's last row.
        first = (chunk - 1) * iterations_per_chunk
        metrics["step"] = (first + 1 + jnp.arange(iterations_per_chunk)) * steps_per_iteration
        metrics["eval_return"] = (
            jnp.full((iterations_per_chunk,), jnp.nan, jnp.float32).at[-1].set(eval_return)
        )
        return state.replace(key=key, chunk=chunk), metrics

    return Runner(
        init=init,
        run_chunk=run_chunk,
        evaluate=evaluate,
        iterations_per_chunk=iterations_per_chunk,
        num_chunks=num_chunks,
        steps_per_iteration=steps_per_iteration,
    )


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
