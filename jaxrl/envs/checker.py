"""``check(env)``: an environment against jaxrl's contract (docs/concepts/contracts.md),
before anything trains on it; SB3's ``check_env`` for jaxrl's envs.

A JAX ``Env`` is checked for:

* **spec**: an ``EnvSpec`` of positive sizes, a known observation dtype, an action space
  ``Discrete(n >= 1)`` or a ``Box`` whose bounds match its shape;
* **layout**: ``reset`` and ``step`` trace under ``jax.jit`` and return the shapes and
  dtypes the spec declares (``boundary.check_env``), with ``info["final_obs"]`` (as
  ``obs``), ``info["episode_return"]`` (as ``reward``) and ``info["episode_length"]``
  (int32 ``[N]``); a reset returns reward 0, both flags False and ``final_obs == obs``;
* **the rollout** of ``steps`` random (legal) actions (``default_steps``), one jitted
  ``lax.scan``:
  ``terminated`` and ``truncated`` never both true; no episode longer than
  ``max_episode_steps``, and ``truncated`` only at that limit; ``info["episode_length"]``
  and ``info["episode_return"]`` at an episode's end equal the steps and the rewards
  summed since the last end; ``final_obs == obs`` wherever no episode ended, and not at
  every end (an env that does not reset, or whose auto-reset loses the last
  observation); finite rewards and observations; with an action mask, at least one legal
  action in every env at every step. Where ``info["episode_done"]`` is given (Atari's
  ``episodic_life``), episodes end there, and ``episode_return`` (the game's raw score)
  is not compared with the rewards (clipped by ``reward_clipping``);
* **vmap**: where ``env.vmappable``, the rollout vmapped over two keys equals the first
  key's own rollout (its reset and first ``VMAP_STEPS`` steps; floats to a relative 1e-5);
* **determinism**: the same key gives the same rollout, bit for bit.

A ``gym:`` env (``HostEnv``) is one copy of it (``HostEnv.make_single``, jaxrl's wrappers
included) through Gymnasium's own ``gymnasium.utils.env_checker.check_env``.

Each problem is one line; ``check`` returns them all (an empty list: the env passes).
Where ``reset`` or ``step`` cannot be traced, or return the wrong layout, the rollout is
not run. ``jaxrl check-env NAME`` (``jaxrl.check_env``) runs it from the command line.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs import boundary
from jaxrl.types import Box, ConfigError, Discrete, Env, EnvSpec, action_mask
from jaxrl.validation import first_line

RTOL = 1e-5  # floats of a vmapped rollout against each member's own
RETURN_TOL = 1e-4  # episode returns against the rewards summed in float64
VMAP_STEPS = 8  # steps of a vmapped rollout compared with the single one
STEPS_CAP = 1000  # the default rollout's length at most (Atari's limit is 27,000 steps)


def check(
    env: Any, steps: int | None = None, seed: int = 0, notes: list[str] | None = None
) -> list[str]:
    """The problems of ``env`` (module docstring), one line each; [] when it passes.

    ``steps``: the rollout's length, default ``default_steps(env.spec)``; ``seed``: the
    rollout's key; ``notes``: a list that gets Gymnasium's warnings on a ``gym:`` env
    (advice, not failures: an infinite observation bound, say).
    """
    if getattr(env, "host_loop", False):
        return check_gym(env, [] if notes is None else notes)
    if not isinstance(env, Env):
        return [f"not a jaxrl.types.Env (envs.make_vector_env builds one): {type(env).__name__}"]
    problems = check_spec(env.spec)
    if problems:
        return problems
    spec = env.spec
    try:
        boundary.check_env(spec.name, env, spec.num_envs)
    except ConfigError as e:
        return [str(e).removeprefix(f"env {spec.name!r}: ")]
    except Exception as e:  # beyond the TypeError and ValueError boundary says in a line
        return [f"reset(key) and step(state, action, key) fail under jax.jit: {first_line(e)}"]
    steps = default_steps(spec) if steps is None else steps
    key = jax.random.PRNGKey(seed)
    run = jax.jit(lambda k: rollout(env, k, steps))
    try:
        first, actions, later = jax.device_get(run(key))
    except Exception as e:  # a failure inside the program: the env's, reported in a line
        return [f"the rollout of {steps} steps failed under jit: {first_line(e)}"]
    problems = check_reset(spec, first) + check_rollout(spec, first, later)
    again = jax.device_get(run(key))
    if not trees_equal(again, (first, actions, later), rtol=0.0):
        problems.append(f"determinism: the same key ({seed}) gave a different rollout")
    if env.vmappable:
        problems += check_vmap(env, key, steps, (first, actions, later))
    return problems


def default_steps(spec: EnvSpec) -> int:
    """``max_episode_steps + 1`` (an episode that never terminates is seen truncated), at
    most ``STEPS_CAP``."""
    return min(spec.max_episode_steps + 1, STEPS_CAP)


def check_spec(spec: Any) -> list[str]:
    """The problems of an ``EnvSpec`` on its own."""
    if not isinstance(spec, EnvSpec):
        return [f"spec: not a jaxrl.types.EnvSpec: {type(spec).__name__}"]
    problems = []
    for field in ("num_envs", "max_episode_steps", "num_players"):
        value = getattr(spec, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(f"spec: {field} must be a positive int, got {value!r}")
    if not all(isinstance(d, int) and d >= 0 for d in spec.obs_shape):
        problems.append(f"spec: obs_shape must be non-negative ints, got {spec.obs_shape}")
    try:
        np.dtype(spec.obs_dtype)
    except TypeError:
        problems.append(f"spec: obs_dtype {spec.obs_dtype!r} is not a dtype")
    space = spec.action_space
    if isinstance(space, Discrete):
        if space.n < 1:
            problems.append(f"spec: Discrete(n) needs n >= 1, got {space.n}")
    elif isinstance(space, Box):
        size = int(np.prod(space.shape))
        if len(space.low) != size or len(space.high) != size:
            problems.append(
                f"spec: Box{space.shape} needs {size} low and high bounds, got "
                f"{len(space.low)} and {len(space.high)}"
            )
        elif not np.all(np.asarray(space.low) <= np.asarray(space.high)):
            problems.append("spec: a Box low bound is above its high bound")
    else:
        problems.append(f"spec: action_space must be Discrete or Box, got {space!r}")
    return problems


def random_actions(spec: EnvSpec, obs: Any, key: jax.Array) -> jax.Array:
    """Uniform random actions ``[N, ...]``: legal ones under an action mask; a ``Box``'s
    infinite bounds replaced by -1 and 1."""
    n, space = spec.num_envs, spec.action_space
    if isinstance(space, Discrete):
        mask = action_mask(obs)
        if mask is None:
            return jax.random.randint(key, (n,), 0, space.n)
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)
    low = np.nan_to_num(np.asarray(space.low, np.float32), neginf=-1.0).reshape(space.shape)
    high = np.nan_to_num(np.asarray(space.high, np.float32), posinf=1.0).reshape(space.shape)
    return jax.random.uniform(key, (n, *space.shape), jnp.float32, low, high)


def rollout(env: Env, key: jax.Array, steps: int) -> tuple[Any, jax.Array, Any]:
    """``(reset's TimeStep, actions [T, N, ...], TimeSteps [T, ...])`` of ``steps`` random
    actions from ``reset(key)``, as one ``lax.scan``."""
    reset_key, key = jax.random.split(key)
    state, first = env.reset(reset_key)

    def body(carry: Any, k: jax.Array) -> tuple[Any, Any]:
        state, obs = carry
        act_key, step_key = jax.random.split(k)
        action = random_actions(env.spec, obs, act_key)
        state, ts = env.step(state, action, step_key)
        return (state, ts.obs), (action, ts)

    _, (actions, later) = jax.lax.scan(body, (state, first.obs), jax.random.split(key, steps))
    return first, actions, later


def check_reset(spec: EnvSpec, first: Any) -> list[str]:
    """The problems of the reset's ``TimeStep``: its ``info`` entries and its values."""
    problems = info_layout(spec, first, "reset")
    if problems:
        return problems
    if np.any(first.reward) or np.any(first.terminated) or np.any(first.truncated):
        problems.append("reset: must return reward 0 and terminated, truncated False")
    if not trees_equal(first.info["final_obs"], first.obs, rtol=0.0):
        problems.append("reset: info['final_obs'] must equal obs")
    return problems + masks_and_finite(spec, first.obs, first.reward, "reset")


def info_layout(spec: EnvSpec, ts: Any, call: str) -> list[str]:
    """The problems of ``ts.info``'s required entries' presence, shapes and dtypes."""
    info = ts.info if isinstance(ts.info, dict) else {}
    missing = [k for k in ("final_obs", "episode_return", "episode_length") if k not in info]
    if missing:
        return [f"{call}: info must hold {', '.join(missing)}"]
    lead = np.shape(ts.reward)[: np.ndim(ts.terminated)]
    wants = {
        "final_obs": (jax.tree.map(np.shape, ts.obs), jax.tree.map(np.result_type, ts.obs)),
        "episode_return": (np.shape(ts.reward), np.dtype(np.float32)),
        "episode_length": (lead, np.dtype(np.int32)),
    }
    problems = []
    for key, (shape, dtype) in wants.items():
        got = (jax.tree.map(np.shape, info[key]), jax.tree.map(np.result_type, info[key]))
        if got != (shape, dtype):
            problems.append(f"{call}: info['{key}'] must be {dtype} {shape}, got {got[1]} {got[0]}")
    return problems


def masks_and_finite(spec: EnvSpec, obs: Any, reward: Any, call: str) -> list[str]:
    """Non-finite rewards or float observations; env steps with no legal action."""
    problems = []
    if not np.all(np.isfinite(reward)):
        problems.append(f"{call}: a reward is not finite")
    floats = [x for x in jax.tree.leaves(obs) if np.issubdtype(np.result_type(x), np.floating)]
    if not all(np.all(np.isfinite(x)) for x in floats):
        problems.append(f"{call}: an observation is not finite")
    mask = action_mask(obs)
    if spec.has_action_mask and mask is not None and not np.all(np.any(mask, axis=-1)):
        problems.append(f"{call}: the action mask leaves an env with no legal action")
    return problems


def check_rollout(spec: EnvSpec, first: Any, later: Any) -> list[str]:
    """The problems of a rollout's ``TimeStep``s ``[T, ...]`` (module docstring)."""
    if info_layout(spec, first, "reset"):
        return []  # said by check_reset
    problems = info_layout(spec, jax.tree.map(lambda x: x[0], later), "step")
    problems += masks_and_finite(spec, later.obs, later.reward, "step")
    term, trunc = np.asarray(later.terminated), np.asarray(later.truncated)
    if np.any(term & trunc):
        problems.append("step: terminated and truncated are both true at once")
    raw = "episode_done" not in later.info  # else the logged score may not be the reward's sum
    ends = np.asarray(later.info.get("episode_done", term | trunc), bool)
    limit, steps = spec.max_episode_steps, len(term)
    length = np.zeros(term.shape[1:], np.int64)
    ret = np.zeros(np.shape(first.reward), np.float64)
    lengths, returns, final_kept, seen = [], [], [], 0
    for t in range(steps):
        length += 1
        ret += np.asarray(later.reward[t], np.float64)
        if np.any(length > limit):
            lengths.append(f"an episode ran past max_episode_steps ({limit}) without truncated")
        if np.any(trunc[t] & (length < limit)):
            lengths.append(f"truncated before the time limit max_episode_steps ({limit})")
        info, obs = later.info, later.obs
        for i in np.flatnonzero(ends[t]):
            seen += 1
            if info["episode_length"][t][i] != length[i]:
                lengths.append(
                    f"info['episode_length'] {info['episode_length'][t][i]} at an episode's "
                    f"end, after {length[i]} steps"
                )
            if raw and not np.allclose(
                info["episode_return"][t][i], ret[i], RETURN_TOL, RETURN_TOL
            ):
                returns.append(
                    f"info['episode_return'] {np.round(info['episode_return'][t][i], 4)} at an "
                    f"episode's end, but the rewards since its start sum to {np.round(ret[i], 4)}"
                )
            final_kept.append(not trees_equal(pick(info["final_obs"], t, i), pick(obs, t, i)))
        for i in np.flatnonzero(~(term[t] | trunc[t])):
            if not trees_equal(pick(info["final_obs"], t, i), pick(obs, t, i), rtol=0.0):
                problems.append("step: info['final_obs'] differs from obs where no episode ended")
                break
        length[ends[t]] = 0
        ret[ends[t]] = 0.0
    problems += sorted(set(lengths)) + returns[:1]
    if final_kept and not any(final_kept):
        problems.append(
            f"auto-reset: at all {seen} episode ends obs equals info['final_obs']: the env "
            "does not reset, or its auto-reset loses the last observation"
        )
    return list(dict.fromkeys(problems))


def pick(tree: Any, t: int, i: Any) -> Any:
    """Env ``i``'s entry at step ``t`` of a rollout's pytree ``[T, N, ...]``."""
    return jax.tree.map(lambda x: np.asarray(x)[t, i], tree)


def trees_equal(a: Any, b: Any, rtol: float = RTOL) -> bool:
    """Whether two pytrees of arrays are equal: the same structure and shapes, integers
    and booleans exactly, floats to ``rtol`` (0: bit for bit, NaN equal to NaN)."""
    leaves_a, tree_a = jax.tree.flatten(a)
    leaves_b, tree_b = jax.tree.flatten(b)
    if str(tree_a) != str(tree_b):
        return False
    for x, y in zip(leaves_a, leaves_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        exact = rtol == 0.0 or not np.issubdtype(x.dtype, np.floating)
        if exact and not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return False
        if not exact and not np.allclose(x, y, rtol=rtol, atol=rtol, equal_nan=True):
            return False
    return True


def check_vmap(env: Env, key: jax.Array, steps: int, own: Any) -> list[str]:
    """The rollout vmapped over ``key`` and another against ``own``, ``key``'s rollout of
    ``steps`` steps: its reset and first ``VMAP_STEPS`` steps (later ones may part by
    float rounding in a chaotic env)."""
    keys = jnp.stack([key, jax.random.fold_in(key, 1)])
    try:
        batched = jax.jit(jax.vmap(lambda k: rollout(env, k, steps)))(keys)
        first, actions, later = jax.device_get(jax.tree.map(lambda x: x[0], batched))
    except Exception as e:  # the env's failure under vmap, reported in a line
        return [f"vmap: reset and step fail under jax.vmap: {first_line(e)}"]
    head = lambda tree: jax.tree.map(lambda x: x[:VMAP_STEPS], tree)
    if not trees_equal((first, head(actions), head(later)), (own[0], *map(head, own[1:]))):
        return ["vmap: a member of a vmapped rollout differs from the same key's own rollout"]
    return []


def check_gym(env: Any, notes: list[str]) -> list[str]:
    """Gymnasium's ``check_env`` on one copy of a ``gym:`` env: its error (a problem) and
    its warnings (appended to ``notes``), one line each."""
    make_single = getattr(env, "make_single", None)
    if make_single is None:
        return []  # a host-loop env that is not a Gymnasium env: nothing of Gymnasium's to check
    from gymnasium.utils.env_checker import check_env as gym_check_env

    single = make_single()
    problems = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gym_check_env(single, skip_render_check=True)
    except Exception as e:  # check_env asserts and raises; each is the env's problem
        problems.append(f"gymnasium check_env: {first_line(e)}")
    finally:
        single.close()
    for w in caught:
        text = str(w.message).strip().splitlines()[0].replace("\x1b[33m", "").replace("\x1b[0m", "")
        if "is different from the unwrapped version" not in text:  # jaxrl's wrappers, said
            notes.append(f"gymnasium check_env: {text.removeprefix('WARN: ')}")
    return problems
