"""What every runner shares: the run's options (``RunConfig``), how a run is cut into
chunks (``ChunkLayout``), the runner state, the ``Runner`` interface the host driver
drives, and what a checkpoint of a runner holds (the whole state, or the learner only:
``LearnerCheckpoint``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import Agent, Env, shared_field
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
      video_every: env steps between videos of one greedy episode, in RUN/videos; 0 = never.
        Each is recorded at the first chunk end past a multiple (``experiment.video``) and
        sent to TensorBoard and W&B; the training program and its keys are untouched.
      stop_return: the host driver stops after an evaluation reaching this return.
      seed: the PRNG seed of the run.
      opponent_pool: self-play only: past snapshots of the agent kept to play one seat in
        some envs; 0 = pure self-play. See ``runners/games/opponent_pool.py``.
      opponent_envs: self-play only: the fraction of envs with a snapshot in one seat.
        OpenAI Five's 20% of games against past selves (Berner et al. 2019, section 4.2).
      opponent_every: self-play only: env steps between two snapshots.
      opponent_scripted: self-play only: the fraction of envs with the game's scripted
        opponent (win, block, else random) in one seat; 0 = none.
    """

    steps: int = option(100_000, ge=1, le=INT32_MAX)  # step counters are int32
    rollout_len: int = option(1, ge=1)
    log_every: int = option(5_000, ge=1)
    eval_every: int = option(10_000, ge=0)
    eval_episodes: int = option(10, ge=1)
    video_every: int = option(0, ge=0)
    stop_return: float | None = None
    seed: int = option(0, ge=-INT32_MAX - 1, le=INT32_MAX)  # jax.random.PRNGKey's range
    opponent_pool: int = option(0, ge=0)
    opponent_envs: float = option(0.2, gt=0, le=1)
    opponent_every: int = option(25_600, ge=1)
    opponent_scripted: float = option(0.0, ge=0, le=1)


# The options of RunConfig that only self-play reads (runners/games/opponent_pool.py).
SELF_PLAY_OPTIONS = ("opponent_pool", "opponent_envs", "opponent_every", "opponent_scripted")


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
        key_shape = jax.eval_shape(lambda k: k, key)
        return LearnerCheckpoint(agent_state, cast(Any, key_shape), cast(Any, chunk))

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


def scanned_runner(
    env: Env,
    init: Callable[..., Any],
    iteration: Callable[..., Any],
    evaluate: Callable[..., Any],
    evaluate_all: Callable[..., dict[str, jax.Array]],
    layout: ChunkLayout,
) -> Runner:
    """The jittable ``Runner`` whose chunk scans ``iteration`` (the fused loop, self-play,
    several agents), then on evaluation chunks runs ``evaluate_all(agent_state, key)`` (a
    dict of scalars, logged on the chunk's last row; NaN on other rows and chunks) in a
    ``lax.cond``; checkpoints by ``checkpointing``."""

    def run_chunk(state: RunnerState) -> tuple[RunnerState, dict[str, jax.Array]]:
        state, metrics = jax.lax.scan(iteration, state, None, length=layout.iterations_per_chunk)
        chunk = state.chunk + 1
        key, eval_key = jax.random.split(state.key)
        shapes = jax.eval_shape(evaluate_all, state.agent_state, eval_key)
        skip = lambda: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes)
        rates = skip()
        if layout.eval_every:  # no evaluation program at all when it never runs
            rates = jax.lax.cond(
                layout.evaluates(chunk), lambda: evaluate_all(state.agent_state, eval_key), skip
            )
        metrics["step"] = layout.iteration_steps(chunk)
        last = jnp.full((layout.iterations_per_chunk,), jnp.nan, jnp.float32)
        metrics.update({k: last.at[-1].set(v) for k, v in rates.items()})
        return dataclasses.replace(state, key=key, chunk=chunk), metrics

    return Runner(
        init=init,
        run_chunk=run_chunk,
        evaluate=evaluate,
        layout=layout,
        **checkpointing(init, env.state_is_portable),
    )
