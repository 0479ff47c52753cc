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

from jaxrl.types import Agent, Env, TimeStep, Transition, reset_carry, shared_field
from jaxrl.validation import Options, option

INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class RunConfig(Options):
    """Options of the training loop.

    Attributes:
      steps: total environment steps (summed over envs); rounded up to whole chunks.
      rollout_len: env steps per env between two ``update`` calls (T).
      log_every: env steps per chunk: one row of logged metrics each.
      eval_every: env steps between greedy evaluations (rounded to whole chunks); 0 = never.
      eval_episodes: episodes per evaluation (the CLI's evaluation env has this many envs).
      stop_return: the host driver stops after an evaluation reaching this return.
      seed: the PRNG seed of the run.
      opponent_pool: self-play only: past snapshots of the agent that play one seat in some
        envs (``runners/opponent_pool.py``); 0 = pure self-play.
      opponent_envs: self-play only: the fraction of envs with a snapshot in one seat
        (OpenAI Five's 20% of games against past selves, Berner et al. 2019, section 4.2).
      opponent_every: self-play only: env steps between two snapshots.
      opponent_scripted: self-play only: the fraction of envs with the game's scripted
        opponent (win, block, else random) in one seat; 0 = none.
    """

    steps: int = option(100_000, ge=1, le=INT32_MAX)  # step counters are int32
    rollout_len: int = option(1, ge=1)
    log_every: int = option(5_000, ge=1)
    eval_every: int = option(10_000, ge=0)
    eval_episodes: int = option(10, ge=1)
    stop_return: float | None = None
    seed: int = option(0, ge=-INT32_MAX - 1, le=INT32_MAX)  # jax.random.PRNGKey's range
    opponent_pool: int = option(0, ge=0)
    opponent_envs: float = option(0.2, gt=0, le=1)
    opponent_every: int = option(25_600, ge=1)
    opponent_scripted: float = option(0.0, ge=0, le=1)


class ChunkLayout(NamedTuple):
    """How a run is cut into iterations and chunks, and when it evaluates: computed once
    (``of``) and shared by the fused runner, the host runner and the host driver.

    An iteration is ``steps_per_iteration = rollout_len * num_envs`` env steps; a chunk is
    ``iterations_per_chunk = max(1, log_every // steps_per_iteration)`` iterations; a run
    is ``num_chunks = ceil(steps / steps_per_chunk)`` chunks; an evaluation follows every
    ``eval_every_chunks``-th chunk (``max(1, round(eval_every / steps_per_chunk))``), and
    none when ``eval_every`` is 0.
    """

    steps_per_iteration: int
    iterations_per_chunk: int
    num_chunks: int
    eval_every_chunks: int
    eval_every: int  # RunConfig.eval_every; 0: never evaluate

    @classmethod
    def of(cls, config: RunConfig, num_envs: int) -> ChunkLayout:
        steps_per_iteration = config.rollout_len * num_envs
        iterations_per_chunk = max(1, config.log_every // steps_per_iteration)
        steps_per_chunk = iterations_per_chunk * steps_per_iteration
        return cls(
            steps_per_iteration=steps_per_iteration,
            iterations_per_chunk=iterations_per_chunk,
            num_chunks=math.ceil(config.steps / steps_per_chunk),
            eval_every_chunks=max(1, round(config.eval_every / steps_per_chunk)),
            eval_every=config.eval_every,
        )

    @property
    def steps_per_chunk(self) -> int:
        return self.iterations_per_chunk * self.steps_per_iteration

    @property
    def total_steps(self) -> int:
        return self.num_chunks * self.steps_per_chunk

    def evaluates(self, chunk: Any) -> Any:
        """Whether chunk number ``chunk`` (1-based: chunks done after it) ends with an
        evaluation; a Python bool for an int ``chunk``, a traced bool for a traced one."""
        return (self.eval_every > 0) & (chunk % self.eval_every_chunks == 0)

    def iteration_steps(self, chunk: Any, xp: Any = jnp) -> Any:
        """``[iterations_per_chunk]`` int32: env steps done after each iteration of chunk
        number ``chunk`` (1-based), with ``xp`` ``jax.numpy`` or ``numpy``."""
        first = (chunk - 1) * self.iterations_per_chunk
        steps = (first + 1 + xp.arange(self.iterations_per_chunk)) * self.steps_per_iteration
        return steps.astype(xp.int32)


@flax.struct.dataclass
class RunnerState:
    agent_state: Any
    env_state: Any
    obs: Any  # the observation pytree [num_envs, ...]
    carry: Any  # the agent's per-env carry
    key: jax.Array
    chunk: jax.Array = shared_field()  # int32 chunks completed; unbatched under vmap


@flax.struct.dataclass
class LearnerCheckpoint:
    """What a checkpoint holds for a runner whose env state cannot be saved (a host env,
    or ale-py's XLA vector env, whose state is a handle to this process's emulators): the
    agent state (replay buffer included), the PRNG key and the chunk counter. A resume
    restarts the environments with fresh episodes."""

    agent_state: Any
    key: jax.Array
    chunk: jax.Array = shared_field()


def save_learner(state: Any) -> LearnerCheckpoint:
    """The ``LearnerCheckpoint`` of a runner state (fused or host)."""
    return LearnerCheckpoint(state.agent_state, state.key, jnp.asarray(state.chunk, jnp.int32))


def learner_saved_shape(agent: Agent) -> Callable[..., LearnerCheckpoint]:
    """``saved_shape(key, hparams=None)`` of a runner that checkpoints its learner only
    (host, Sebulba): the ``LearnerCheckpoint``'s shapes and dtypes, nothing run."""

    def saved_shape(key: jax.Array, hparams: Any = None) -> LearnerCheckpoint:
        agent_state = jax.eval_shape(agent.init, key)
        chunk = jax.ShapeDtypeStruct((), jnp.int32)
        return LearnerCheckpoint(agent_state, jax.eval_shape(lambda k: k, key), chunk)

    return saved_shape


def learner_runner(
    agent: Agent,
    init: Callable[..., Any],
    run_chunk: Callable[..., Any],
    evaluate: Callable[..., Any],
    layout: ChunkLayout,
    restore: Callable[..., Any] | None = None,
) -> Runner:
    """A host-driven (not jittable) ``Runner`` that checkpoints its learner only (the host
    and Sebulba runners): ``save_learner``, ``learner_saved_shape(agent)``, and
    ``restore`` (default ``restore_learner``: new env episodes, the saved learner)."""
    return Runner(
        init=init,
        run_chunk=run_chunk,
        evaluate=evaluate,
        layout=layout,
        save=save_learner,
        saved_shape=learner_saved_shape(agent),
        restore=restore or restore_learner,
        jittable=False,
    )


def restore_learner(saved: LearnerCheckpoint, fresh: Callable[[], Any]) -> Any:
    """A fresh runner state (new env episodes) holding ``saved``'s learner."""
    state = fresh()
    chunk = int(saved.chunk) if isinstance(state.chunk, int) else saved.chunk
    return dataclasses.replace(state, agent_state=saved.agent_state, key=saved.key, chunk=chunk)


def _restore_whole(saved: Any, fresh: Callable[[], Any]) -> Any:
    return saved


class Runner(NamedTuple):
    """A training program in chunks, as the host driver runs it.

    ``init(key, hparams=None) -> state``; ``run_chunk(state) -> (state, metrics)`` with
    metrics ``{name: [iterations_per_chunk]}``; ``evaluate(agent_state, key) -> returns``;
    ``layout``, the run's ``ChunkLayout``. What differs between runners is said here, so
    that the driver needs no case of its own:

    * ``jittable``: whether ``init``, ``run_chunk`` and ``evaluate`` are JAX programs that
      the driver may jit, compile ahead of time and vmap over members. False for a runner
      that steps its env from Python (``runners/host.py``): the driver then calls its
      functions as they are, one member only.
    * ``save(state)``: the pytree of arrays a checkpoint holds (the whole state where the
      env's state can be saved, else a ``LearnerCheckpoint``); ``saved_shape(*init_args)``
      its shapes and dtypes, without running anything; ``restore(saved, fresh)``: the
      state to continue from, with ``fresh()`` building an initial one when the env must
      restart.
    """

    init: Callable[..., Any]
    run_chunk: Callable[[Any], tuple[Any, dict[str, jax.Array]]]
    evaluate: Callable[[Any, jax.Array], jax.Array]
    layout: ChunkLayout
    save: Callable[[Any], Any]
    saved_shape: Callable[..., Any]
    restore: Callable[[Any, Callable[[], Any]], Any]
    jittable: bool = True

    @property
    def iterations_per_chunk(self) -> int:
        return self.layout.iterations_per_chunk

    @property
    def num_chunks(self) -> int:
        return self.layout.num_chunks

    @property
    def steps_per_iteration(self) -> int:
        return self.layout.steps_per_iteration


def checkpointing(init: Callable[..., Any], portable: bool) -> dict[str, Any]:
    """The ``save``, ``saved_shape`` and ``restore`` fields of a jittable runner whose
    ``init`` is ``init``: the whole state where the env's state is ``portable``, else
    the learner only."""
    save = (lambda state: state) if portable else save_learner
    return dict(
        save=save,
        saved_shape=lambda *args: jax.eval_shape(lambda *a: save(init(*a)), *args),
        restore=_restore_whole if portable else restore_learner,
    )


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
    ``episode_length_sum`` (int32) over the episodes finished at each step, ``[rollout_len]``.
    The fused runner's iteration and Sebulba's actors (``runners/sebulba.py``) both use it.
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
    iterations_per_chunk = layout.iterations_per_chunk
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
        state = state.replace(
            agent_state=agent_state, env_state=env_state, obs=obs, carry=carry, key=key
        )
        return state, metrics

    def run_chunk(state: RunnerState) -> tuple[RunnerState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(iteration, state, None, length=iterations_per_chunk)
        chunk = state.chunk + 1
        key, eval_key = jax.random.split(state.key)
        eval_return = jax.lax.cond(
            layout.evaluates(chunk),
            lambda: evaluate(state.agent_state, eval_key).mean(),
            lambda: jnp.full((), jnp.nan, jnp.float32),
        )
        # Per-iteration rows: env steps done, and the evaluation on the chunk's last row.
        metrics["step"] = layout.iteration_steps(chunk)
        metrics["eval_return"] = (
            jnp.full((iterations_per_chunk,), jnp.nan, jnp.float32).at[-1].set(eval_return)
        )
        return state.replace(key=key, chunk=chunk), metrics

    return Runner(
        init=init,
        run_chunk=run_chunk,
        evaluate=evaluate,
        layout=layout,
        **checkpointing(init, env.state_is_portable),
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
