"""Recurrent PPO (agents/on_policy/sequence.py, ``--agent.cell``): the rollout and the
update against a Python loop over envs and steps that runs the network one env and one
step at a time, resetting the carry where an episode starts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.types import ConfigError
from tests.helpers import rollout_after_one_update

T, N = 6, 4
GAMMA, LAM, CLIP, VCLIP, ENT, VW, LR = 0.99, 0.95, 0.2, 0.2, 0.01, 0.5, 0.5
# Plain SGD without clipping or annealing: the update's step is -LR x the gradient.
TINY = dict(
    cell_size=6,
    hidden_sizes=(8,),
    optimizer="sgd",
    lr=LR,
    max_grad_norm=None,
    anneal_lr=False,
    update_epochs=1,
    num_minibatches=2,
)


@pytest.fixture(scope="module")
def setup():
    """A rollout of a trained-once recurrent PPO (a GRU) on StatelessCartPole, the update
    on it, and the network on one env and one step."""
    env = envs.make("StatelessCartPole-v1", num_envs=N, max_episode_steps=3)  # truncations
    agent = agents.make("ppo", env.spec, cell="gru", **TINY)
    state, ro, update = rollout_after_one_update(agent, env, T)
    done = np.asarray(ro.terminated | ro.truncated)
    assert done[:-1].any(0).all() and ro.truncated.any()  # truncations bootstrap
    key = jax.random.PRNGKey(4)
    return agent, state, ro, key, update(state, ro, key), _network(agent, state)


def _network(agent, state):
    """The agent's network on one env, ``(params, carry, obs [1, ...]) -> (carry,
    log_probs [1, A], value [1])``, through ``act`` (greedy: ``action_probs``); jitted,
    so that the loops below (and their gradients) run it as one call per step."""

    def step(params, carry, obs):
        s = state.replace(params=params)
        _, new, extras = agent.act(s, obs, carry, jax.random.PRNGKey(0), False)
        return new, jnp.log(extras["action_probs"]), extras["value"]

    return jax.jit(step)


def loop_outputs(agent, step, params, ro, envs_=range(N), next_values=True):
    """Per env of ``envs_``, per step: log pi(a_t), entropy, V(x_t) and (``next_values``)
    V(x'_t), the carry run from the rollout's first carry and set to zeros after an
    episode's last step; each ``[T, len(envs_)]``."""
    done = np.asarray(ro.terminated | ro.truncated)
    keys = ("log_prob", "entropy", "value", "next")
    out = {k: [[jnp.zeros(())] * len(envs_) for _ in range(T)] for k in keys}
    for i, n in enumerate(envs_):
        carry = jax.tree.map(lambda c, n=n: c[0, n : n + 1], ro.extras["carry"])
        for t in range(T):
            if t and done[t - 1, n]:
                carry = agent.init_carry(1)
            carry, log_probs, value = step(params, carry, ro.obs[t, n][None])
            out["log_prob"][t][i] = log_probs[0, ro.action[t, n]]
            out["entropy"][t][i] = -(jnp.exp(log_probs) * log_probs).sum()
            out["value"][t][i] = value[0]
            if next_values:
                out["next"][t][i] = step(params, carry, ro.next_obs[t, n][None])[2][0]
    return {k: jnp.stack([jnp.stack(row) for row in v]) for k, v in out.items()}


def np_gae(reward, value, next_value, terminated, truncated):
    adv, a = np.zeros((T, N)), np.zeros(N)
    for t in reversed(range(T)):
        delta = reward[t] + GAMMA * (1 - terminated[t]) * next_value[t] - value[t]
        a = delta + GAMMA * LAM * (1 - (terminated[t] | truncated[t])) * a
        adv[t] = a
    return adv, adv + value


def test_rollout_equals_a_loop_over_envs_and_steps(setup):
    """Acting's log-probabilities and values are the loop's; the carry each step was
    given (``extras["carry"]``) is zeros after an episode ended, and the first is the
    rollout's start."""
    agent, state, ro, _, _, step = setup
    ref = loop_outputs(agent, step, state.params, ro)
    np.testing.assert_allclose(ro.extras["log_prob"], ref["log_prob"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ro.extras["value"], ref["value"], rtol=1e-5, atol=1e-6)
    done = np.asarray(ro.terminated | ro.truncated)
    h = np.asarray(jax.tree.leaves(ro.extras["carry"])[0])  # [T, N, size]
    assert (h[1:][done[:-1]] == 0).all() and (h[1:][~done[:-1]] != 0).any()


def test_update_equals_a_loop_over_envs_and_steps(setup):
    """Two SGD steps, one per minibatch of whole env sequences (the epoch's permutation
    of the envs, halved), each on PPO's loss computed by the loop from the rollout's
    first carry: GAE from acting's values and the loop's V(x'_t), advantages normalized
    per minibatch."""
    agent, state, ro, key, (new, _), step = setup
    old = loop_outputs(agent, step, state.params, ro)
    reward, term, trunc = (np.asarray(x) for x in (ro.reward, ro.terminated, ro.truncated))
    adv, target = np_gae(
        reward, np.asarray(ro.extras["value"]), np.asarray(old["next"]), term, trunc
    )
    perm = np.asarray(jax.random.permutation(jax.random.split(key, 1)[0], N)).reshape(2, N // 2)

    def loss(params, envs_):
        out = loop_outputs(agent, step, params, ro, envs_, next_values=False)
        pick = lambda x: jnp.asarray(x)[:, envs_].reshape(-1)
        mine = lambda x: x.reshape(-1)
        a = pick(adv)
        a = (a - a.mean()) / (a.std() + 1e-8)
        ratio = jnp.exp(mine(out["log_prob"]) - pick(ro.extras["log_prob"]))
        pg = -jnp.minimum(ratio * a, jnp.clip(ratio, 1 - CLIP, 1 + CLIP) * a).mean()
        v, v_old, r = mine(out["value"]), pick(ro.extras["value"]), pick(target)
        clipped = v_old + jnp.clip(v - v_old, -VCLIP, VCLIP)
        v_loss = 0.5 * jnp.maximum((v - r) ** 2, (clipped - r) ** 2).mean()
        return pg + VW * v_loss - ENT * mine(out["entropy"]).mean()

    params = state.params
    for envs_ in perm:
        grads = jax.grad(loss)(params, envs_)
        params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6), new.params, params
    )
    moved = jax.tree.map(lambda a, b: bool((a != b).any()), new.params, state.params)
    assert all(jax.tree.leaves(moved))  # the cell's parameters included
    assert int(new.updates - state.updates) == 2


def test_num_envs_must_split_into_whole_sequences(setup):
    agent, state, ro, key, _, _ = setup
    three = jax.tree.map(lambda x: x[:, :3], ro)
    with pytest.raises(ConfigError, match="num_envs = 3 is not divisible by num_minibatches = 2"):
        agent.update(state, three, key)
