"""MinAtar (envs/minatar.py) against the original numpy package (``minatar==1.0.15``).

Parity: each game runs a fixed random action sequence for ``STEPS`` steps in jaxrl's
vector env (one env, sticky actions off, ramping on as the original's default, no time
limit) and in the original ``minatar.Environment``; observations, rewards and terminals
must be equal at every step, resets included. The random spawns are aligned, not
skipped: the original's game object gets a scripted random source (``Scripted``) that
answers each of its random calls (``rand``, ``randint`` in ``_spawn_entity``,
``_spawn_enemy``, ``_spawn_diver``, ``_randomize_cars``, ``reset``) with the outcome that
jaxrl drew for that step (``minatar.step_draws`` / ``init_draws`` on the same keys that the
env uses), so both run the same game; a call the script does not expect fails the test.
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import envs
from jaxrl.envs import minatar
from jaxrl.types import ConfigError

STEPS = 400
ORIGINAL = {  # jaxrl id -> the original's game name
    "MinAtar-Breakout": "breakout",
    "MinAtar-Asterix": "asterix",
    "MinAtar-Freeway": "freeway",
    "MinAtar-Seaquest": "seaquest",
    "MinAtar-SpaceInvaders": "space_invaders",
}


class Scripted:
    """A stand-in for the original game's ``np.random.RandomState``: each call pops the
    next answer queued for the calling function (``script[function] = [answer, ...]``);
    an answer may be a callable, evaluated at call time."""

    def __init__(self):
        self.script: dict[str, list] = {}

    def _next(self, *args, **kwargs):
        caller = sys._getframe(1).f_code.co_name
        answer = self.script[caller].pop(0)  # KeyError / IndexError: an unexpected call
        return answer() if callable(answer) else answer

    rand = randint = _next


def original_env(module: str, **kw):
    """The original package's ``Environment`` (imported here, not at collection: it imports
    seaborn and SciPy, 1.5 s in each pytest-xdist worker)."""
    from minatar import Environment

    return Environment(module, **kw)


def coin(flag) -> float:
    """The ``rand()`` answer that makes ``rand() < p`` equal ``flag`` (for p in (0, 1))."""
    return 0.0 if bool(flag) else 0.999


def script_step(module: str, draws, game) -> dict[str, list]:
    """Answers for the original's random calls in one step, from jaxrl's ``draws``."""
    d = [np.asarray(x) for x in draws]
    if module == "asterix":
        empty = lambda: [i for i, e in enumerate(game.entities) if e is None]
        return {"_spawn_entity": [coin(d[0]), coin(d[1]), lambda: empty().index(int(d[2]))]}
    if module == "seaquest":
        return {
            "_spawn_enemy": [coin(d[0]), coin(d[1]), int(d[2])],
            "_spawn_diver": [coin(d[3]), int(d[4])],
        }
    if module == "freeway":
        return {"_randomize_cars": [d[0].copy(), np.where(d[1] > 0, 0.75, 0.25)]}
    return {}


def script_reset(module: str, draws, game) -> dict[str, list]:
    if module == "breakout":
        return {"reset": [int(draws[0])]}
    return script_step(module, draws, game) if module == "freeway" else {}


def jaxrl_rollout(name, actions, key):
    """jaxrl's env (one env, sticky off) over ``actions``, with the draws of every step and
    of the reset it may do, computed on the env's own keys (``make_vector_env`` splits a
    step key into ``[step key, reset key]``; ``make_minatar``'s step splits its key into
    ``[sticky key, draws key]``)."""
    module = minatar.GAMES[name][0]
    env = envs.make(name, num_envs=1, sticky_action_prob=0.0, max_episode_steps=10**6)
    reset_key, *step_keys = jax.random.split(key, len(actions) + 1)

    def body(state, x):
        action, k = x
        k_step, k_reset = jax.random.split(k, 2)
        core = jax.tree.map(lambda leaf: leaf[0], state.core)
        draws = minatar.step_draws(module, jax.random.split(k_step)[1], core)
        state, ts = env.step(state, action[None], k)
        return state, (ts, draws, minatar.init_draws(module, k_reset))

    def run(reset_key, keys, acts):
        state, ts0 = env.reset(reset_key)
        first = minatar.init_draws(module, jax.random.split(reset_key, 1)[0])
        return ts0, first, jax.lax.scan(body, state, (acts, keys))[1]

    acts = jnp.asarray(actions, jnp.int32)
    return jax.jit(run)(reset_key, jnp.stack(step_keys), acts)


@pytest.mark.parametrize("name", list(ORIGINAL))
def test_parity_with_the_original_package(name):
    module = minatar.GAMES[name][0]
    full = minatar.SPECS[module][1]
    rng = np.random.default_rng(0)
    actions = rng.integers(0, len(full), STEPS)
    if name == "MinAtar-Freeway":  # mostly "up", so that the chicken crosses and scores
        actions = np.where(np.arange(STEPS) % 8 == 7, actions, 1)
    ts0, first, (ts, draws, reset_draws) = jaxrl_rollout(name, actions, jax.random.PRNGKey(3))
    ts, draws, reset_draws = jax.device_get((ts, draws, reset_draws))

    orig = original_env(ORIGINAL[name], sticky_action_prob=0.0, difficulty_ramping=True)
    game = orig.env
    assert sorted(orig.minimal_action_set()) == list(full)
    game.random = rng = Scripted()
    rng.script = script_reset(module, first, game)
    orig.reset()
    np.testing.assert_array_equal(ts0.obs[0], orig.state())
    episodes = 0
    for t, a in enumerate(actions):
        rng.script = script_step(module, [x[t] for x in draws], game)
        reward, terminal = orig.act(full[a])
        where = f"{name} step {t}"
        np.testing.assert_array_equal(ts.info["final_obs"][t, 0], orig.state(), err_msg=where)
        assert ts.reward[t, 0] == reward, where
        assert bool(ts.terminated[t, 0]) == bool(terminal), where
        assert not ts.truncated[t, 0]
        if terminal:
            episodes += 1
            rng.script = script_reset(module, [x[t] for x in reset_draws], game)
            orig.reset()
        np.testing.assert_array_equal(ts.obs[t, 0], orig.state(), err_msg=where)
    assert float(np.sum(ts.reward)) > 0, f"{name}: no reward in {STEPS} steps: a weak test"
    if name in ("MinAtar-Breakout", "MinAtar-Asterix", "MinAtar-Seaquest"):
        assert episodes >= 1, f"{name}: no episode ended in {STEPS} steps: resets untested"


def _pgx_state(module, **fields):
    state = minatar.initial_state(module, jax.random.PRNGKey(0))
    return state.replace(**{k: jnp.asarray(v, getattr(state, k).dtype) for k, v in fields.items()})


@pytest.mark.parametrize("ramping", [True, False])
def test_difficulty_ramping_as_the_original(ramping):
    """Asterix with its ramp timer run out and Space Invaders with its wave cleared: with
    ramping on both speed up on the next step (Asterix's spawn interval 10 -> 9, the alien
    move interval 12 -> 11, ramp index 0 -> 1), with it off nothing changes, and the ramp
    fields and observations equal the original's (``ramping=True/False``) after 3 steps."""
    cases = (
        ("asterix", {"_ramp_timer": -1}, {"ramp_timer": -1}, ("_spawn_speed", "spawn_speed")),
        (
            "space_invaders",
            {"_alien_map": np.zeros((10, 10), bool)},
            {"alien_map": np.zeros((10, 10))},
            ("_enemy_move_interval", "enemy_move_interval"),
        ),
    )
    for module, ours_set, theirs_set, (ours_field, theirs_field) in cases:
        state = _pgx_state(module, **ours_set)
        orig = original_env(module, sticky_action_prob=0.0, difficulty_ramping=ramping)
        orig.reset()
        for k, v in theirs_set.items():
            setattr(orig.env, k, v)
        before = int(getattr(state, ours_field))
        step = jax.jit(
            lambda s, k, m=module: minatar.game_step(
                m, s, jnp.int32(0), minatar.step_draws(m, k, s), ramping
            )
        )
        for t in range(3):
            state = step(state, jax.random.PRNGKey(t))
            orig.act(0)
            assert int(getattr(state, ours_field)) == getattr(orig.env, theirs_field), module
            np.testing.assert_array_equal(minatar.observe(module, state), orig.state())
        after = int(getattr(state, ours_field))
        assert after == (before - 1 if ramping else before), (module, before, after)
        if module == "asterix":
            assert int(state._ramp_index) == orig.env.ramp_index == int(ramping)


def _sticky_counts(prob, steps=300, n=64):
    """Over ``steps`` x ``n`` Breakout steps whose chosen action always differs from the
    previous executed one: (steps that repeated the previous action instead, steps
    counted); steps that end an episode are left out (the reset clears the action)."""
    env = envs.make("MinAtar-Breakout", num_envs=n, sticky_action_prob=prob)
    full = jnp.asarray(minatar.SPECS["breakout"][1])

    def body(state, key):
        prev = state.core._last_action  # full action ids [n]
        chosen = (jnp.argmax(full[None] == prev[:, None], axis=1) + 1) % 3  # != prev
        state, ts = env.step(state, chosen, key)
        done = ts.terminated | ts.truncated
        return state, (jnp.sum((state.core._last_action == prev) & ~done), jnp.sum(~done))

    def run(key):
        state, _ = env.reset(key)
        return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

    sticky, counted = jax.jit(run)(jax.random.PRNGKey(7))
    return int(sticky.sum()), int(counted.sum())


def test_sticky_action_rate():
    """The measured rate of sticky actions is 0.1 within 4 binomial standard deviations;
    none with probability 0, all with probability 1."""
    k, n = _sticky_counts(0.1)
    assert n > 10_000
    assert abs(k / n - 0.1) < 4 * np.sqrt(0.1 * 0.9 / n), (k, n)
    assert _sticky_counts(0.0, steps=50)[0] == 0
    k, n = _sticky_counts(1.0, steps=50)
    assert k == n


def test_bad_options_are_one_line_errors():
    for kwargs, words in (
        (dict(sticky_action_prob=1.5), "sticky_action_prob must be a number in [0, 1]"),
        (dict(difficulty_ramping="yes"), "difficulty_ramping must be true or false"),
        (dict(backend="numpy"), "unknown MinAtar backend 'numpy'; valid: pgx, gymnax"),
        (dict(backend="gymnax", sticky_action_prob=0.1), "has no sticky actions"),
    ):
        with pytest.raises(ConfigError, match=None) as info:
            envs.make("MinAtar-Breakout", **kwargs)
        assert words in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="no gymnax backend"):
        envs.make("MinAtar-Seaquest", backend="gymnax")
    assert envs.make("MinAtar-Breakout", backend="gymnax").spec.obs_shape == (10, 10, 4)
