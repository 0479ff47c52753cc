"""The on-policy skeleton: gradient clipping, epochs x minibatches, and the actor-critic
learner's legal-action masks and dict observations, for PPO and A2C alike."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxrl import agents
from jaxrl.agents.common.optim import clip_by_global_norm
from jaxrl.agents.on_policy.core import make_optimizer, run_epochs
from jaxrl.types import ArraySpec, Discrete, EnvSpec, Transition

A = 5  # actions
N = 8  # envs
SPEC = EnvSpec(
    "masked", (3,), "float32", Discrete(A), N, 100, (ArraySpec("action_mask", (A,), "bool"),)
)
TINY = {"ppo": dict(hidden_sizes=(8,), update_epochs=2, num_minibatches=2), "a2c": {}}


def test_clip_by_global_norm_matches_numpy_and_chains_before_adam():
    rng = np.random.default_rng(0)
    grads = {"a": rng.normal(size=(3, 2)).astype(np.float32), "b": rng.normal(size=4)}
    grads = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), grads)
    norm = np.sqrt(sum((np.asarray(g, np.float64) ** 2).sum() for g in jax.tree.leaves(grads)))
    clip = clip_by_global_norm()
    for max_norm in (0.5 * norm, 2.0 * norm, np.inf):
        out, _ = clip.update(grads, clip.init(grads), max_norm=jnp.float32(max_norm))
        scale = min(1.0, max_norm / (norm + 1e-6))
        for g, o in zip(jax.tree.leaves(grads), jax.tree.leaves(out), strict=True):
            np.testing.assert_allclose(o, np.asarray(g) * scale, rtol=1e-6)
    # Chained: Adam sees the clipped gradients.
    opt, adam = make_optimizer(1e-5), optax.scale_by_adam(eps=1e-5)
    clipped, _ = clip.update(grads, clip.init(grads), max_norm=jnp.float32(0.1))
    got, _ = opt.update(grads, opt.init(grads), grads, max_norm=jnp.float32(0.1))
    want, _ = adam.update(clipped, adam.init(grads), grads)
    jax.tree.map(np.testing.assert_array_equal, got, want)


@pytest.mark.parametrize("epochs, minibatches", [(1, 1), (3, 2), (2, 4)])
def test_run_epochs_uses_every_sample_once_per_epoch(epochs, minibatches):
    batch = {"x": jnp.arange(8.0), "y": -jnp.arange(8.0)}

    def step(total, mb):
        assert mb["x"].shape == (8 // minibatches,)
        return total + mb["x"].sum(), (mb["x"], mb["y"])

    total, (xs, ys) = run_epochs(jax.random.PRNGKey(0), 0.0, batch, step, epochs, minibatches)
    assert xs.shape == (epochs, minibatches, 8 // minibatches)
    np.testing.assert_array_equal(ys, -xs)  # leaves permuted together
    for e in range(epochs):
        np.testing.assert_array_equal(np.sort(np.asarray(xs[e]).ravel()), np.arange(8.0))
    assert float(total) == epochs * 28.0
    if minibatches == 1:
        np.testing.assert_array_equal(xs[0, 0], np.arange(8.0))  # no permutation


def masked_obs(key, legal):
    """Dict observations ``[N]`` whose mask allows only action ``legal [N]``."""
    return {
        "obs": jax.random.normal(key, (N, 3)),
        "action_mask": jax.nn.one_hot(legal, A, dtype=jnp.bool_),
    }


def masked_rollout(agent, state, legal, T=4):
    """A rollout ``[T, N]`` of dict observations collected with ``agent.act``."""
    keys = jax.random.split(jax.random.PRNGKey(1), T + 1)
    obs = [masked_obs(k, legal) for k in keys]
    steps = []
    for t in range(T):
        action, _, extras = agent.act(state, obs[t], (), jax.random.PRNGKey(10 + t), True)
        reward = jax.random.normal(jax.random.PRNGKey(20 + t), (N,))
        done = jnp.zeros((N,), bool)
        steps.append(Transition(obs[t], action, reward, obs[t + 1], done, done, extras))
    return jax.tree.map(lambda *x: jnp.stack(x), *steps)


@pytest.mark.parametrize("name", ["ppo", "a2c"])
def test_masked_actions_are_never_sampled_or_greedy(name):
    agent = agents.make(name, SPEC, **TINY[name])
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    legal = jax.random.randint(jax.random.PRNGKey(5), (N,), 0, A)
    obs = masked_obs(jax.random.PRNGKey(6), legal)
    keys = jax.random.split(jax.random.PRNGKey(7), 64)
    act = jax.jit(lambda k: agent.act(state, obs, (), k, True))
    actions, _, extras = jax.vmap(act)(keys)
    np.testing.assert_array_equal(actions, jnp.broadcast_to(legal, (64, N)))
    np.testing.assert_array_equal(extras["log_prob"], 0.0)  # the only legal action: p = 1
    greedy, _, _ = agent.act(state, obs, (), keys[0], False)
    np.testing.assert_array_equal(greedy, legal)
    # Without the mask the initial policy is near uniform: other actions get picked.
    unmasked, _, _ = jax.vmap(lambda k: agent.act(state, obs["obs"], (), k, True))(keys)
    assert bool(jnp.any(unmasked != legal))


@pytest.mark.parametrize("name", ["ppo", "a2c"])
def test_the_loss_sees_the_mask_that_acting_saw(name):
    agent = agents.make(name, SPEC, **TINY[name], normalize_obs=True, entropy_weight=0.01)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    legal = jax.random.randint(jax.random.PRNGKey(5), (N,), 0, A)
    ro = masked_rollout(agent, state, legal)
    new, metrics = jax.jit(agent.update)(state, ro, jax.random.PRNGKey(2))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    # One legal action: log pi = 0 under every parameter, so the ratio is 1, the policy
    # loss and the entropy are 0; an unmasked loss would see 5 actions.
    assert float(metrics["approx_kl"]) == 0.0 and float(metrics["clip_fraction"]) == 0.0
    assert float(metrics["entropy"]) == 0.0 and abs(float(metrics["policy_loss"])) < 1e-6
    assert float(metrics["value_loss"]) > 0
    # Observation normalization sees the main observation only.
    assert new.obs_stats.mean.shape == (3,)
    np.testing.assert_allclose(
        new.obs_stats.mean, np.asarray(ro.obs["obs"]).reshape(-1, 3).mean(0), rtol=1e-3
    )
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), state.params, new.params)
    assert any(jax.tree.leaves(changed))
