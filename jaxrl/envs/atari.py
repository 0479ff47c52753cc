"""Atari 2600 games through ale-py's XLA vector environment, stepped inside ``jit`` and
``lax.scan`` like any other ``Env`` (see ``jaxrl.types.Env``).

ale-py's ``AtariVectorEnv(...).xla()`` (ale-py >= 0.11) exposes its C++ vector
environment as two XLA foreign-function calls, ``reset`` and ``step``, on CPU and CUDA.
They run the emulators on ale-py's own thread pool while the compiled program waits, so
acting, learning and emulating form one program with no Python in the loop. This module
wraps them behind the ``Env`` contract:

* **auto-reset in the same step**: ale-py's XLA step resets a finished game on the *next*
  call (ignoring that call's action); here every game that ended is reset at once with a
  partial reset, so ``obs`` is the next game's first observation and
  ``info["final_obs"]`` the true last one;
* **terminated distinct from truncated**: ``terminated`` is a game over (or, with
  ``episodic_life``, a lost life), ``truncated`` is the ``max_num_frames_per_episode``
  limit; never both;
* **raw score**: ``info["episode_return"]`` / ``info["episode_length"]`` are the whole
  game's unclipped score and agent steps, given where ``info["episode_done"]`` is true
  (a game ended); ``reward`` is clipped to [-1, 1] when ``reward_clipping`` (learning
  only).

Preprocessing (Mnih et al. 2015; Machado et al. 2018), each a named option of
``make_atari`` with the usual default: 84x84 grayscale frames (``img_height``,
``img_width``), the action repeated for ``frameskip`` 4 emulator frames with the last two
max-pooled (``maxpool``), the last ``stack_num`` 4 frames stacked, up to ``noop_max`` 30
no-op actions after a reset, sticky actions with ``repeat_action_probability`` 0.25
(Machado et al. 2018; Dopamine), ``episodic_life`` off (Machado et al. 2018; Dopamine;
Mnih et al. 2015 had it on), reward clipping on, and games truncated after
``max_num_frames_per_episode`` 108,000 emulator frames (27,000 agent steps, 30 minutes).

Observations are ``uint8 [N, img_height, img_width, stack_num]``, the newest frame last;
frames before the start of an episode are zeros (as Dopamine and
``buffers/compact.py``'s ``stack_padding="zero"``). Networks divide by 255.

Limits of the backend:

* the state holds a handle to the C++ environments of this process, so its state cannot
  be restored in another process, and ``jax.vmap`` cannot map the foreign calls. Instead
  ``reset`` and ``step`` batch themselves (``jax.custom_batching.custom_vmap``): under a
  ``vmap`` of size K (the members of ``--seeds K``/``--sweep``) they step one vector env
  of K x ``num_envs`` emulators, made on first use, and split its observations, rewards
  and ends per member: member i owns emulators ``i * num_envs ..``, seeded from its own
  key exactly as an unbatched reset with that key seeds them, so each member learns from
  its own envs only and equals the single run of its seed. A vmap nested in that one
  raises ``ConfigError``;
* ``reset(key)`` derives one emulator seed per env from ``key`` (sticky actions and no-op
  starts then follow the emulators' own generators); ``step`` ignores its key.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxrl.types import Array, ConfigError, Discrete, Env, EnvSpec, PRNGKey, TimeStep
from jaxrl.validation import check_int

# The single-player games of ale-py's ROM set (ale_py.roms.get_all_rom_ids() without the
# two-player-only combat, joust, maze_craze and warlords), as Gymnasium's "ALE/...-v5".
GAMES: list[str] = (
    "adventure air_raid alien amidar assault asterix asteroids atlantis atlantis2 "
    "backgammon bank_heist basic_math battle_zone beam_rider berzerk blackjack bowling "
    "boxing breakout carnival casino centipede chopper_command crazy_climber crossbow "
    "darkchambers defender demon_attack donkey_kong double_dunk earthworld "
    "elevator_action enduro entombed et fishing_derby flag_capture freeway frogger "
    "frostbite galaxian gopher gravitar hangman haunted_house hero human_cannonball "
    "ice_hockey jamesbond journey_escape kaboom kangaroo keystone_kapers king_kong klax "
    "koolaid krull kung_fu_master laser_gates lost_luggage mario_bros miniature_golf "
    "montezuma_revenge mr_do ms_pacman name_this_game othello pacman phoenix pitfall "
    "pitfall2 pong pooyan private_eye qbert riverraid road_runner robotank seaquest "
    "sir_lancelot skiing solaris space_invaders space_war star_gunner superman surround "
    "tennis tetris tic_tac_toe_3d time_pilot trondead turmoil tutankham up_n_down venture "
    "video_checkers video_chess video_cube video_pinball wizard_of_wor word_zapper "
    "yars_revenge zaxxon"
).split()


# Host memory of one emulator of ale-py's vector env (the emulator, its screens and frame
# stack): measured as the growth of this process's resident memory over 64 and 256 Pong
# emulators after reset and 5 steps, 0.87-0.94 MiB each (ale-py 0.12.1), rounded up.
# ``experiment.sweep.check_host_envs`` refuses a seed sweep whose K x num_envs emulators
# would not fit the host's available memory.
HOST_BYTES_PER_ENV = 2**20
BACKENDS = ("ale_py", "envpool")


def game_name(rom: str) -> str:
    """``"ms_pacman" -> "MsPacman"`` (ale-py's ``rom_id_to_name``)."""
    return rom.title().replace("_", "")


class AtariState(NamedTuple):
    """State of the wrapper; every leaf but ``handle`` has a leading ``num_envs`` axis.

    Attributes:
      handle: ``uint8 [8]``, ale-py's handle of the C++ environments; threading it from
        call to call orders the foreign calls.
      lives: ``int32 [N]`` lives left (for ``episodic_life``).
      episode_return: ``float32 [N]`` raw score of the current game so far.
      episode_length: ``int32 [N]`` agent steps of the current game so far.
      since_start: ``int32 [N]`` agent steps since the current episode (life, with
        ``episodic_life``) started; frames older than that are zeroed in observations.
    """

    handle: Array
    lives: Array
    episode_return: Array
    episode_length: Array
    since_start: Array


def _no_vmap(name: str):
    """Wraps a foreign call so that ``jax.vmap`` of it is a ``ConfigError``."""

    def decorate(fn):
        fn = jax.custom_batching.custom_vmap(fn)

        @fn.def_vmap
        def rule(axis_size, in_batched, *args):
            raise ConfigError(
                f"{name}: the Atari emulators cannot be vmapped twice (the members of a "
                "seed sweep are one vmap); run the outer level as separate processes"
            )

        return fn

    return decorate


def _check_float(what: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"{what} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _check_bool(what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{what} must be true or false, got {value!r}")
    return value


def make_atari(
    game: str,
    num_envs: int = 1,
    *,
    img_height: int = 84,
    img_width: int = 84,
    frameskip: int = 4,
    maxpool: bool = True,
    stack_num: int = 4,
    noop_max: int = 30,
    repeat_action_probability: float = 0.25,
    episodic_life: bool = False,
    reward_clipping: bool = True,
    max_num_frames_per_episode: int = 108_000,
    use_fire_reset: bool = False,
    full_action_space: bool = False,
    num_threads: int = 0,
    backend: str = "ale_py",
) -> Env:
    """``num_envs`` copies of Atari game ``game`` (a ROM id such as ``"pong"``).

    Args (ale-py's names):
      img_height, img_width: size of the grayscale frames (84 x 84; Mnih et al. 2015).
      frameskip: emulator frames per agent step, the action repeated (4).
      maxpool: observe the pixel-wise max of the last two of those frames (True).
      stack_num: frames stacked in an observation, newest last (4).
      noop_max: a reset is followed by ``U{0 .. noop_max - 1}`` no-op frames (30; 0 or 1:
        none).
      repeat_action_probability: sticky actions: each emulator frame repeats the
        previous action with this probability (0.25; Machado et al. 2018, Dopamine).
      episodic_life: a lost life is ``terminated`` (the game goes on; its frame stack
        restarts from zeros, as Dopamine's ``terminal_on_life_loss``) (False).
      reward_clipping: ``reward`` clipped to [-1, 1]; ``info["episode_return"]`` stays
        raw (True).
      max_num_frames_per_episode: games are truncated after this many emulator frames
        (108,000 = 27,000 agent steps; Machado et al. 2018).
      use_fire_reset: press FIRE after a reset where the game has it (False, as Dopamine).
      full_action_space: all 18 actions instead of the game's minimal set (False).
      num_threads: ale-py worker threads (0: one per CPU core, at most ``num_envs``).
      backend: ``"ale_py"`` (ale-py's XLA vector env, the default) or ``"envpool"``
        (``jaxrl[envpool]``; ``atari_envpool``: the same options by envpool's names,
        stepped through host callbacks inside the program).

    Returns:
      An ``Env`` with ``obs`` ``uint8 [N, img_height, img_width, stack_num]``, actions
      ``int32 [N]`` in ``Discrete(n)``, and ``info`` with ``final_obs``,
      ``episode_return``, ``episode_length``, ``episode_done`` (``[N]`` bool, a game
      ended: the two before are its raw score and length) and ``lives``.
    """
    name = f"ALE/{game_name(game)}-v5"
    if game not in GAMES:
        raise ConfigError(f"unknown Atari game {game!r}; valid: {', '.join(GAMES)}")
    num_envs = check_int("num_envs", num_envs)
    options = _checked_options(name, dict(locals()))
    if backend not in BACKENDS:
        raise ConfigError(
            f"unknown env.backend {backend!r} for {name}; valid: {', '.join(BACKENDS)}"
        )
    make_build = _envpool_build if backend == "envpool" else _ale_py_build
    return _env(
        name,
        num_envs,
        make_build(game, name, options),
        img_height,
        img_width,
        stack_num,
        frameskip,
        max_num_frames_per_episode,
    )


def _checked_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """``make_atari``'s keyword ``options`` (by ale-py's names) checked (a ``ConfigError``
    naming a bad one), with ``repeat_action_probability`` as a float."""
    for what, minimum in (
        ("img_height", 1),
        ("img_width", 1),
        ("frameskip", 1),
        ("stack_num", 1),
        ("noop_max", 0),
        ("max_num_frames_per_episode", 1),
        ("num_threads", 0),
    ):
        check_int(f"{name} option '{what}'", options[what], minimum)
    for what in (
        "maxpool",
        "episodic_life",
        "reward_clipping",
        "use_fire_reset",
        "full_action_space",
    ):
        _check_bool(f"{name} option '{what}'", options[what])
    what = "repeat_action_probability"
    options[what] = _check_float(f"{name} option '{what}'", options[what], 0.0, 1.0)
    return options


def _envpool_build(
    game: str, name: str, options: dict[str, Any]
) -> Callable[[int], tuple[Any, _Game]]:
    """``build(count)``: envpool's vector env of ``count`` emulators and its ``_Game``."""
    from jaxrl.envs import atari_envpool

    task = atari_envpool.task_id(game, game_name(game))

    def build(count: int) -> tuple[Any, _Game]:
        pool = atari_envpool.Pool(task, count, options)
        calls = atari_envpool.calls(pool, _no_vmap(name))
        return pool, _game_of(name, count, options, calls, pad_stack=True)

    return build


def _ale_py_build(
    game: str, name: str, options: dict[str, Any]
) -> Callable[[int], tuple[Any, _Game]]:
    """``build(count)``: ale-py's vector env of ``count`` emulators and its ``_Game``."""
    try:
        from ale_py import AtariVectorEnv
    except ImportError:
        raise ConfigError(f"env {name!r} needs ale-py: pip install 'jaxrl[atari]'") from None
    ale_options = {k: options[k] for k in _ALE_PY_OPTIONS}

    def build(count: int) -> tuple[Any, _Game]:
        vec = AtariVectorEnv(
            game,
            count,
            **ale_options,
            grayscale=True,
            episodic_life=False,  # done here from `lives`, without resetting the game
            reward_clipping=False,  # done here, so that the raw score can be logged
        )
        return vec, _game_of(name, count, options, _ale_calls(vec, name))

    return build


def _game_of(
    name: str,
    count: int,
    options: dict[str, Any],
    calls: tuple[ArrayLike, Any, Any],
    pad_stack: bool = False,
) -> _Game:
    """The ``_Game`` of ``count`` emulators with ``make_atari``'s ``options`` and the
    foreign ``calls`` ``(initial_handle, ale_reset, ale_step)``."""
    initial_handle, ale_reset, ale_step = calls
    return _Game(
        name,
        count,
        options["stack_num"],
        options["episodic_life"],
        options["reward_clipping"],
        initial_handle,
        ale_reset,
        ale_step,
        pad_stack,
    )


# make_atari's options passed to ale-py's AtariVectorEnv as they are.
_ALE_PY_OPTIONS = (
    "num_threads",
    "max_num_frames_per_episode",
    "repeat_action_probability",
    "full_action_space",
    "img_height",
    "img_width",
    "stack_num",
    "frameskip",
    "maxpool",
    "noop_max",
    "use_fire_reset",
)


def _env(name, num_envs, build, img_height, img_width, stack_num, frameskip, max_frames) -> Env:
    """The ``Env`` of the vector env ``build(num_envs)`` makes (and, for the K members of
    a ``vmap``, of the one ``build(K * num_envs)`` makes)."""
    vec, game_ = build(num_envs)
    num_actions = getattr(vec, "num_actions", None) or int(vec.single_action_space.n)
    spec = EnvSpec(
        name=name,
        obs_shape=(img_height, img_width, stack_num),
        obs_dtype="uint8",
        action_space=Discrete(num_actions),
        num_envs=num_envs,
        max_episode_steps=math.ceil(max_frames / frameskip),
    )
    # The vector envs of K members (``jax.vmap`` of size K), made on first use; this
    # dict keeps them alive as long as the functions that hold their handles.
    member_envs: dict[int, tuple[Any, _Game]] = {}

    def members(count: int) -> _Game:
        if count not in member_envs:
            member_envs[count] = build(count * num_envs)
        return member_envs[count][1]

    reset, step = _member_batched(game_, members)
    # `vec` owns the C++ environments the handle points to: both functions keep it alive.
    reset.ale_vector_env = step.ale_vector_env = vec
    reset.member_envs = step.member_envs = member_envs
    reset.host_bytes_per_env = HOST_BYTES_PER_ENV  # for the memory check of a seed sweep
    return Env(spec=spec, reset=reset, step=step, state_is_portable=False)


def _ale_calls(vec: Any, name: str) -> tuple[Array, Any, Any]:
    """``(initial_handle, ale_reset, ale_step)``: ale-py's XLA calls of ``vec``, each
    refusing ``jax.vmap``.

    ``ale_reset(handle, indices [k], seeds [k]) -> (handle, obs [N, S, H, W], lives [N])``
    resets the envs ``indices`` (seed -1 keeps an emulator's random stream), the others
    reporting their current observation; ``ale_step(handle, action [N]) -> (handle, obs,
    reward, game_over, truncated, lives)``.
    """
    # Also registers the foreign-call targets. A member env is made while its program is
    # traced: the handle must be a concrete array, not a tracer of that trace.
    with jax.ensure_compile_time_eval():
        initial_handle, _, xla_step = vec.xla()
    ale_shape = vec.observation_space.shape  # [N, stack, H, W]
    i32 = jax.ShapeDtypeStruct((ale_shape[0],), jnp.int32)
    # ale-py's own xla_reset resets a boolean mask only outside jit; this is its call with
    # the indices given directly: (handle, indices [k], seeds [k]) -> (handle, obs [N, ...],
    # env_ids, lives, frame_number, episode_frame_number), the envs not reset reporting
    # their current observation.
    reset_call = jax.ffi.ffi_call(
        "atari_vector_xla_reset",
        (jax.ShapeDtypeStruct((8,), jnp.uint8), jax.ShapeDtypeStruct(ale_shape, jnp.uint8))
        + (i32,) * 4,
        has_side_effect=True,
    )

    @_no_vmap(name)
    def ale_reset(handle, indices, seeds):
        handle, obs, _, lives, _, _ = reset_call(handle, indices, seeds)
        return handle, obs, lives

    @_no_vmap(name)
    def ale_step(handle, action):
        handle, (obs, reward, terminated, truncated, info) = xla_step(handle, action)
        return handle, obs, reward, terminated, truncated, info["lives"]

    return initial_handle, ale_reset, ale_step


class _Game(NamedTuple):
    """What ``reset`` and ``step`` of one ``make_atari`` env need (static)."""

    name: str
    num_envs: int
    stack_num: int
    episodic_life: bool
    reward_clipping: bool
    initial_handle: ArrayLike  # ale-py's jax array or envpool's NumPy one
    ale_reset: Any
    ale_step: Any
    # Zero the frames from before the episode's start in every observation (envpool
    # repeats the first frame there; ale-py zeroes them itself).
    pad_stack: bool = False


def _observe(game: _Game, ale_obs: Array, since_start: Array) -> Array:
    """``[N, S, H, W]`` -> ``[N, H, W, S]``; with episodic life, frames from before the
    current life zeroed (ale-py zeroes them itself after a reset)."""
    obs = jnp.moveaxis(ale_obs, 1, -1)
    if not (game.episodic_life or game.pad_stack):
        return obs
    keep = jnp.arange(game.stack_num)  # frame k (0 oldest) is kept iff k >= S-1-since
    mask = keep[None, :] >= game.stack_num - 1 - since_start[:, None]  # [N, S]
    return jnp.where(mask[:, None, None, :], obs, jnp.zeros((), jnp.uint8))


def _emulator_seeds(key: PRNGKey, num_envs: int) -> Array:
    """``int32 [num_envs]``: the emulators' seeds a reset with ``key`` gives them."""
    return jax.random.randint(key, (num_envs,), 0, 2**31 - 1, dtype=jnp.int32)


def _reset(game: _Game, key: PRNGKey) -> tuple[AtariState, TimeStep]:
    return _reset_seeded(game, _emulator_seeds(key, game.num_envs))


def _reset_seeded(game: _Game, seeds: Array) -> tuple[AtariState, TimeStep]:
    num_envs = game.num_envs
    indices = jnp.arange(num_envs, dtype=jnp.int32)
    handle, ale_obs, lives = game.ale_reset(game.initial_handle, indices, seeds)
    zeros_f = jnp.zeros((num_envs,), jnp.float32)
    zeros_i = jnp.zeros((num_envs,), jnp.int32)
    false = jnp.zeros((num_envs,), bool)
    obs = _observe(game, ale_obs, zeros_i)
    info = {
        "final_obs": obs,
        "episode_return": zeros_f,
        "episode_length": zeros_i,
        "episode_done": false,
        "lives": lives,
    }
    state = AtariState(handle, lives, zeros_f, zeros_i, zeros_i)
    return state, TimeStep(obs, zeros_f, false, false, info)


def _reset_ended(game: _Game, handle: Array, ended: Array, ale_obs: Array, lives: Array):
    """Resets every env where ``ended``, one partial reset each (seed -1 keeps each
    emulator's random stream); returns the batch's observations and lives after."""
    order = jnp.nonzero(ended, size=game.num_envs, fill_value=0)[0].astype(jnp.int32)
    minus_one = jnp.full((1,), -1, jnp.int32)

    def body(carry):
        k, handle, _, _ = carry
        handle, ale_obs, lives = game.ale_reset(handle, order[k][None], minus_one)
        return k + 1, handle, ale_obs, lives

    count = ended.sum()
    _, handle, ale_obs, lives = jax.lax.while_loop(
        lambda c: c[0] < count, body, (jnp.zeros((), count.dtype), handle, ale_obs, lives)
    )
    return handle, ale_obs, lives


def _step(
    game: _Game, state: AtariState, action: Array, key: PRNGKey
) -> tuple[AtariState, TimeStep]:
    del key
    if jnp.shape(action) != (game.num_envs,):
        raise ValueError(
            f"{game.name}: expected actions of shape {(game.num_envs,)}, got {action.shape}"
        )
    handle, ale_obs, reward, game_over, truncated, lives = game.ale_step(
        state.handle, action.astype(jnp.int32)
    )
    truncated = truncated & ~game_over
    game_end = game_over | truncated
    raw_reward = reward.astype(jnp.float32)
    ep_return = state.episode_return + raw_reward
    ep_length = state.episode_length + 1
    terminated = game_over
    if game.episodic_life:
        terminated = game_over | ((lives < state.lives) & ~truncated)
    final_obs = _observe(game, ale_obs, state.since_start + 1)
    handle, ale_obs, lives = jax.lax.cond(
        game_end.any(),
        functools.partial(_reset_ended, game),
        lambda handle, ended, ale_obs, lives: (handle, ale_obs, lives),
        handle,
        game_end,
        ale_obs,
        lives,
    )
    since_start = jnp.where(terminated | truncated, 0, state.since_start + 1)
    obs = _observe(game, ale_obs, since_start)
    info = {
        "final_obs": final_obs,
        "episode_return": jnp.where(game_end, ep_return, 0.0),
        "episode_length": jnp.where(game_end, ep_length, 0),
        "episode_done": game_end,
        "lives": lives,
    }
    new_state = AtariState(
        handle=handle,
        lives=lives,
        episode_return=jnp.where(game_end, 0.0, ep_return),
        episode_length=jnp.where(game_end, 0, ep_length),
        since_start=since_start,
    )
    reward_out = jnp.clip(raw_reward, -1.0, 1.0) if game.reward_clipping else raw_reward
    return new_state, TimeStep(obs, reward_out, terminated, truncated, info)


def _member_batched(game: _Game, members: Any) -> tuple[Any, Any]:
    """``reset`` and ``step`` of ``game`` that ``jax.vmap`` runs as one vector env.

    Under ``jax.vmap`` of size ``K`` (the members of a ``--seeds``/``--sweep`` run),
    ``members(K)`` gives the ``_Game`` of ``K * N`` emulators, made once: member ``i``
    owns emulators ``i * N .. (i + 1) * N - 1``. A batched reset seeds member ``i``'s
    emulators from its own key exactly as an unbatched reset with that key does; a
    batched step concatenates the members' actions ``[K, N] -> [K * N]`` in one call and
    splits every output ``[K * N, ...] -> [K, N, ...]``, so member ``i`` sees only its
    own envs. The handle is one for all members (``[K, 8]``, rows equal). A second,
    nested ``vmap`` is still a ``ConfigError`` (``_no_vmap``).
    """
    n = game.num_envs

    def split(state: AtariState, ts: TimeStep, k: int) -> tuple[AtariState, TimeStep]:
        handle = jnp.broadcast_to(state.handle, (k, *state.handle.shape))
        rows = lambda x: x.reshape(k, n, *x.shape[1:])  # noqa: E731
        # The handle is left out (None) while the per-env leaves are reshaped.
        headless = state._replace(handle=None)  # type: ignore[arg-type]
        state = jax.tree.map(rows, headless)._replace(handle=handle)
        return state, jax.tree.map(rows, ts)

    def batched(args: tuple, in_batched: list, k: int) -> tuple:
        return tuple(
            jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (k, *x.shape)), a, b)
            for a, b in zip(args, in_batched, strict=True)
        )

    @jax.custom_batching.custom_vmap
    def reset(key: PRNGKey) -> tuple[AtariState, TimeStep]:
        return _reset(game, key)

    @reset.def_vmap
    def reset_members(k: int, in_batched: list, key: PRNGKey):
        (keys,) = batched((key,), in_batched, k)
        seeds = jax.vmap(_emulator_seeds, in_axes=(0, None))(keys, n).reshape(k * n)
        out = split(*_reset_seeded(members(k), seeds), k)
        return out, jax.tree.map(lambda _: True, out)

    @jax.custom_batching.custom_vmap
    def step(state: AtariState, action: Array, key: PRNGKey) -> tuple[AtariState, TimeStep]:
        return _step(game, state, action, key)

    @step.def_vmap
    def step_members(k: int, in_batched: list, state: AtariState, action: Array, key):
        state, action = batched((state, action), in_batched[:2], k)
        headless = state._replace(handle=None)  # type: ignore[arg-type]  # as in split
        flat = jax.tree.map(lambda x: x.reshape(k * n, *x.shape[2:]), headless)
        flat = flat._replace(handle=state.handle[0])
        out = split(*_step(members(k), flat, action.reshape(k * n, *action.shape[2:]), key), k)
        return out, jax.tree.map(lambda _: True, out)

    return reset, step


def factory(game: str):
    """The registry's factory for ``game``: ``factory("pong")(num_envs=..., **options)``."""
    return functools.partial(make_atari, game)
