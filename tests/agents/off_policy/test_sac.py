"""SAC: one gradient step's critic, actor and temperature updates and the Polyak targets
against NumPy computations from the networks' outputs, a fixed alpha, and training on
Pendulum through the fused runner."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.off_policy.sac import SACConfig
from jaxrl.networks.continuous import CriticEnsemble, SquashedGaussianActor
from jaxrl.ops.squashed_gaussian import squashed_gaussian_sample
from jaxrl.runners.base import RunConfig
from jaxrl.runners.scan import make_train
from tests.agents.off_policy.test_td3 import HIGH, LOW, SPEC, TINY, one_transition, step_key


def as64(x):
    return np.asarray(x, np.float64)


@pytest.mark.parametrize(
    "options",
    [
        dict(),  # tuned temperature, alpha starts at 1
        dict(autotune_alpha=False, alpha=0.3, reward_scale=5.0),
        dict(target_entropy=3.0, alpha=2.0),
        dict(max_alpha=0.5),  # Emote's bound: alpha 1 read as 0.5, the step clipped again
        dict(terminated=True),  # the bootstrap cut
        dict(terminated=True, terminal_masking=False),  # Emote's default: not cut
        # Emote's t_entropy as a LinearSchedule, at gradient step 3 of 4: 3 -> -1
        dict(
            alpha=2.0,
            target_entropy=3.0,
            target_entropy_end=-1.0,
            target_entropy_steps=4,
            updates=3,
        ),
    ],
)
def test_one_gradient_step_matches_numpy(options):
    gamma, tau, lr = 0.9, 0.2, 1e-2
    options = dict(options)
    terminated = options.pop("terminated", False)
    updates = options.pop("updates", 0)
    opts = dict(TINY, gamma=gamma, tau=tau, alpha_lr=lr, **options)
    agent, cfg = agents.make("sac", SPEC, **opts), SACConfig(**opts)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    learner = dataclasses.replace(state.learner, updates=jnp.int32(updates))
    state = dataclasses.replace(state, learner=learner)
    data = one_transition(1, terminated)
    key = jax.random.PRNGKey(2)
    new, metrics = jax.jit(agent.update)(state, data, key)

    actor = SquashedGaussianActor(2, (8,))
    critic = CriticEnsemble(2, (8,))
    old, cur = state.learner, new.learner
    b = TINY["batch_size"]
    obs, next_obs = jnp.repeat(data.obs[0], b, 0), jnp.repeat(data.next_obs[0], b, 0)
    action = np.repeat(np.asarray(data.action[0]), b, 0)
    action = jnp.asarray((action - (HIGH + LOW) / 2) / ((HIGH - LOW) / 2))
    next_key, actor_key = jax.random.split(step_key(key))
    alpha = min(options.get("alpha", 1.0), options.get("max_alpha", np.inf))
    cut = terminated and cfg.terminal_masking
    target_entropy = -2.0 if cfg.target_entropy is None else cfg.target_entropy
    if cfg.target_entropy_end is not None:  # linear in the gradient steps taken before
        frac = min(updates / cfg.target_entropy_steps, 1.0)
        target_entropy = (1 - frac) * target_entropy + frac * cfg.target_entropy_end
        np.testing.assert_allclose(float(metrics["target_entropy"]), target_entropy, rtol=1e-6)

    # Critics: y = scale r + gamma (min_k Qbar_k(s', a') - alpha log pi(a'|s')).
    next_action, next_logp = squashed_gaussian_sample(
        next_key, *actor.apply(old.actor_params, next_obs)
    )
    next_q = as64(critic.apply(old.target_critic_params, next_obs, next_action)).min(0)
    bootstrap = 0.0 if cut else gamma * (next_q - alpha * as64(next_logp))
    y = cfg.reward_scale * float(data.reward[0, 0]) + bootstrap
    q = as64(critic.apply(old.critic_params, obs, action))
    np.testing.assert_allclose(
        float(metrics["critic_loss"]), 0.5 * ((q - y) ** 2).mean(-1).sum(), rtol=1e-5
    )
    np.testing.assert_allclose(float(metrics["q_mean"]), q.mean(), rtol=1e-5)

    # Actor against the updated critics: mean(alpha log pi - min_k Q_k(s, a~)).
    pi_action, logp = squashed_gaussian_sample(actor_key, *actor.apply(old.actor_params, obs))
    pi_q = as64(critic.apply(cur.critic_params, obs, pi_action)).min(0)
    np.testing.assert_allclose(
        float(metrics["actor_loss"]), np.mean(alpha * as64(logp) - pi_q), rtol=1e-5
    )
    np.testing.assert_allclose(float(metrics["entropy"]), -as64(logp).mean(), rtol=1e-5)
    np.testing.assert_allclose(float(metrics["alpha"]), alpha, rtol=1e-6)

    # Temperature: the gradient of -mean(log_alpha (log pi + target)) is
    # g = -mean(log pi + target); Adam's first step moves log_alpha by -lr g / |g|.
    log_alpha0 = np.log(alpha)
    g = -np.mean(as64(logp) + target_entropy)
    want = log_alpha0 - lr * np.sign(g) if cfg.autotune_alpha else log_alpha0
    want = min(want, np.log(options.get("max_alpha", np.inf)))
    np.testing.assert_allclose(float(cur.extra["log_alpha"]), want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(metrics["alpha_loss"]), -log_alpha0 * -g, atol=1e-5)

    # Polyak: target <- (1 - tau) target + tau critic, after this step's critic update.
    want_target = jax.tree.map(
        lambda t, c: (1 - tau) * as64(t) + tau * as64(c),
        old.target_critic_params,
        cur.critic_params,
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
        jax.tree.map(as64, cur.target_critic_params),
        want_target,
    )
    assert cur.target_actor_params is None


def test_trains_on_pendulum_in_the_fused_runner():
    env = envs.make("Pendulum", num_envs=2)
    agent = agents.make("sac", env.spec, hidden_sizes=(16,), batch_size=16, learning_starts=100)
    run = RunConfig(steps=300, log_every=20, eval_every=300, eval_episodes=2)
    state, metrics = jax.jit(make_train(agent, env, run))(jax.random.PRNGKey(0))
    learned = np.asarray(metrics["step"]) >= 100
    for name in ("critic_loss", "actor_loss", "alpha", "entropy"):
        assert np.isnan(metrics[name][~learned]).all()
        assert np.isfinite(metrics[name][learned]).all()
    assert int(state.agent_state.learner.updates) == learned.sum()
    assert float(metrics["alpha"][learned][-1]) < 1.0  # entropy above -|A| lowers alpha
    assert np.isfinite(metrics["eval_return"][-1])


def named_leaves(tree, prefix=()):
    """``(name, leaf)`` of every leaf of nested mappings, names joined by ``/``."""
    for key, value in tree.items():
        if hasattr(value, "items"):
            yield from named_leaves(value, (*prefix, key))
        else:
            yield "/".join((*prefix, key)), value


def test_parameter_norms_are_the_new_weights_and_the_steps_gradients():
    """Emote's per-parameter logging: with plain SGD the gradient is ``(old - new) / lr``,
    so each logged gradient norm can be checked from the parameters alone."""
    lr = 1e-2
    opts = dict(TINY, optimizer="sgd", actor_lr=lr, critic_lr=lr, log_parameter_norms=True)
    agent = agents.make("sac", SPEC, **opts)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    new, metrics = jax.jit(agent.update)(state, one_transition(1, False), jax.random.PRNGKey(2))
    norms = {k for k in metrics if k.startswith("norms/")}
    sides = [
        ("actor", state.learner.actor_params, new.learner.actor_params),
        ("critic", state.learner.critic_params, new.learner.critic_params),
    ]
    expected = set()
    for side, old, cur in sides:
        old_leaves = dict(named_leaves(old))
        for name, w in named_leaves(cur):
            key = f"norms/{side}/{name}"
            expected |= {f"{key}/weight", f"{key}/grad"}
            np.testing.assert_allclose(
                float(metrics[f"{key}/weight"]), np.linalg.norm(as64(w)), rtol=1e-5
            )
            grad = (as64(old_leaves[name]) - as64(w)) / lr
            np.testing.assert_allclose(
                float(metrics[f"{key}/grad"]), np.linalg.norm(grad), rtol=2e-3, atol=1e-6
            )
    assert norms == expected and len(expected) >= 8
    quiet = agents.make("sac", SPEC, **dict(opts, log_parameter_norms=False))
    _, metrics = jax.jit(quiet.update)(state, one_transition(1, False), jax.random.PRNGKey(2))
    assert not any(k.startswith("norms/") for k in metrics)
