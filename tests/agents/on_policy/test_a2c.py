"""A2C: its own defaults and loss on the on-policy skeleton (masks: test_on_policy.py)."""

import dataclasses

import jax
import numpy as np

from jaxrl import agents, envs
from jaxrl.agents.on_policy.a2c import A2CConfig
from jaxrl.agents.on_policy.ppo import PPOConfig
from tests.helpers import assert_refused
from tests.helpers import collect_rollout as rollout


def test_a2c_takes_one_unclipped_step_per_rollout():
    env = envs.make("CartPole-v1", num_envs=2)
    agent = agents.make("a2c", env.spec, hidden_sizes=(8,))
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    ro = rollout(agent, state, env, jax.random.PRNGKey(1), T=5)
    new, metrics = jax.jit(agent.update)(state, ro, jax.random.PRNGKey(2))
    assert int(new.updates) == 1 and int(new.step) == 10
    assert float(metrics["clip_fraction"]) == 0.0 and float(metrics["approx_kl"]) == 0.0
    assert float(metrics["value_loss"]) > 0 and float(metrics["policy_loss"]) != 0.0
    # PPO's clips are not A2C's hyperparameters (nothing to sweep that does nothing).
    assert not hasattr(state.hparams, "surrogate_loss_clip")
    np.testing.assert_allclose(metrics["lr"], 7e-4)


def test_a2c_config_declares_only_what_it_changes():
    a2c, ppo = A2CConfig(), PPOConfig()
    changed = {
        f.name
        for f in dataclasses.fields(a2c)
        if getattr(a2c, f.name) != getattr(ppo, f.name, None)
    }
    assert changed == {"lr", "anneal_lr", "gae_lambda", "entropy_weight", "normalize_advantage"}
    assert a2c.lr == 7e-4 and a2c.gae_lambda == 1.0 and a2c.max_grad_norm == 0.5
    names = {f.name for f in dataclasses.fields(a2c)}
    assert not names & {"update_epochs", "num_minibatches", "surrogate_loss_clip"}


def test_a2c_user_mistakes_are_config_errors():
    spec = envs.make("CartPole-v1", num_envs=2).spec
    assert_refused("a2c", spec, "surrogate_loss_clip", surrogate_loss_clip=0.1)
    assert_refused("a2c", spec, "update_epochs", update_epochs=2)
    assert_refused("a2c", spec, r"gae_lambda must be in \[0, 1\]", gae_lambda=1.5)
