"""A scripted two-player turn-based game and fake agents that record what the game
runners hand them, shared by the tests of ``runners/games``."""

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import ACTION_MASK, OBS, Agent, ArraySpec, Discrete, Env, EnvSpec, TimeStep

N = 2
MOVES = 3  # player 0, player 1, player 0: player 1 does not move last


def make_game(num_envs=N, num_actions=2):
    """A scripted turn-based game of ``num_actions`` actions: player 0 moves first,
    players alternate, the game terminates after ``MOVES`` moves. Move ``t`` (0-based)
    pays ``t + 1`` to the mover and ``100 (t + 1)`` to the other player, plus ``1000 a``
    to the mover for action ``a``.
    ``obs["obs"]`` is ``[t, games started, env index]`` (the runner calls ``act`` per env,
    so the env index travels in the observation)."""
    spec = EnvSpec(
        "scripted",
        (3,),
        "float32",
        Discrete(num_actions),
        num_envs,
        MOVES,
        (ArraySpec(ACTION_MASK, (num_actions,), "bool"),),
        num_players=2,
        turn_based=True,
    )

    def observe(t, games):
        obs = jnp.stack([t, games, jnp.arange(num_envs)], -1).astype(jnp.float32)
        return {OBS: obs, ACTION_MASK: jnp.ones((num_envs, num_actions), bool)}

    def timestep(t, games, reward, terminated, final_obs, returns, lengths):
        info = {
            "final_obs": final_obs,
            "episode_return": returns,
            "episode_length": lengths,
            "current_player": (t % 2).astype(jnp.int32),
        }
        false = jnp.zeros(num_envs, bool)
        return TimeStep(observe(t, games), reward, terminated, false, info)

    def reset(key):
        t = jnp.zeros(num_envs, jnp.int32)
        zeros = jnp.zeros((num_envs, 2), jnp.float32)
        obs = observe(t, t)
        state = (t, t, zeros)
        return state, timestep(t, t, zeros, t > 0, obs, zeros, t)

    def step(state, action, key):
        t, games, returns = state
        mover = t % 2
        pay = (t + 1).astype(jnp.float32)
        reward = jnp.where(
            jax.nn.one_hot(mover, 2, dtype=bool), (pay + 1000 * action)[:, None], 100 * pay[:, None]
        )
        returns = returns + reward
        t = t + 1
        done = t >= MOVES
        final_obs = observe(t, games)
        ep_returns = jnp.where(done[:, None], returns, 0.0)
        lengths = jnp.where(done, t, 0)
        games = games + done
        t = jnp.where(done, 0, t)
        returns = jnp.where(done[:, None], 0.0, returns)
        return (t, games, returns), timestep(t, games, reward, done, final_obs, ep_returns, lengths)

    return Env(spec, reset, step)


@flax.struct.dataclass
class Recorder:
    """A fake learner's state: the last rollout it was given."""

    rollout: object
    hparams: object = None


def recording_agent(env, rollout_len):
    """Acts ``a = (t + games + env) % 2`` (so actions differ by step, game and env) and
    keeps the last rollout it was given; an ``extras`` entry tags each step."""

    def act(state, obs, carry, key, explore):
        o = obs[OBS]
        action = (o[:, 0] + o[:, 1] + o[:, 2]).astype(jnp.int32) % 2
        return action, carry, {"tag": o[:, 0] * 10 + o[:, 1]}

    def init(key):
        obs = jax.tree.map(
            lambda s: jnp.zeros((rollout_len, env.spec.num_envs, *s.shape), s.dtype),
            env.spec.obs_spec,
        )
        zeros = jnp.zeros((rollout_len, env.spec.num_envs))
        false = zeros > 0
        rollout = (obs, zeros.astype(jnp.int32), zeros, obs, false, false, {"tag": zeros})
        return Recorder(rollout)

    def update(state, rollout, key):
        return Recorder(tuple(rollout)), {}

    return Agent(init, act, update)


def reference_stream(env_index, count):
    """The hand-written stitched transitions of env ``env_index``, in the order the queue
    hands them out: per game (number ``g``), at its third move the mover's (player 0's)
    first transition completes, then the game ends and player 0's and player 1's final
    transitions follow."""
    out = []
    g = 0
    while len(out) < count:
        a = [(t + g + env_index) % 2 for t in range(MOVES)]  # the recorder's actions
        r = [[0.0, 0.0] for _ in range(MOVES)]
        for t in range(MOVES):
            r[t][t % 2] = t + 1 + 1000 * a[t]
            r[t][1 - t % 2] = 100 * (t + 1)
        obs = lambda t, g=g: [float(t), float(g), float(env_index)]
        final = [float(MOVES), float(g), float(env_index)]
        # obs, action, reward, next_obs, terminated
        out.append((obs(0), a[0], r[0][0] + r[1][0], obs(2), False))  # player 0: move 0 -> 2
        out.append((obs(2), a[2], r[2][0], final, True))  # player 0's final
        out.append((obs(1), a[1], r[1][1] + r[2][1], final, True))  # player 1's final
        g += 1
    return out[:count]


def one_coin_agent(rollout_len: int, num_envs: int) -> Agent:
    """An agent that draws one coin per ``act`` call, shared by the batch (as noisy nets
    draw one parameter noise per forward pass), and records the actions it is handed."""

    def act(state, obs, carry, key, explore):
        coin = jax.random.randint(key, (), 0, 2)
        return jnp.full((obs[OBS].shape[0],), coin, jnp.int32), carry, {}

    def update(state, rollout, key):
        return Recorder(rollout.action), {}

    return Agent(lambda key: Recorder(jnp.zeros((rollout_len, num_envs), jnp.int32)), act, update)


def summing_random_agent() -> Agent:
    """Acts at random (so the key matters) and keeps the sum of the rewards it is
    handed."""

    def act(state, obs, carry, key, explore):
        return jax.random.randint(key, (obs[OBS].shape[0],), 0, 2), carry, {}

    def update(state, rollout, key):
        return state.replace(rollout=state.rollout + rollout.reward.sum()), {}

    return Agent(lambda key: Recorder(jnp.zeros(())), act, update)
