"""Optimizers and schedules by name (agents/common/optim.py, ops/schedules.py): each optimizer's
first steps against a NumPy reference, each schedule against its formula, and each option
reaching the agents (DQN's parameter change equals the optimizer's step computed from the
gradient, a scheduled learning rate in PPO's metrics and SAC's updates)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.common.optim import OptimizerOptions, lr_factor, scale_transform
from jaxrl.ops import exponential_schedule, piecewise_linear_schedule
from jaxrl.types import ConfigError, Transition


def rmsprop_ref(grads, decay, eps, centered, eps_in_sqrt, initial, momentum):
    """Updates (before the learning rate) of RMSProp over a sequence of gradients."""
    ms, mg, mom, out = np.full_like(grads[0], initial), np.zeros_like(grads[0]), 0.0, []
    for g in grads:
        ms = decay * ms + (1 - decay) * g * g
        mg = decay * mg + (1 - decay) * g
        var = ms - mg * mg if centered else ms
        u = g / np.sqrt(var + eps) if eps_in_sqrt else g / (np.sqrt(var) + eps)
        mom = momentum * mom + u
        out.append(mom if momentum else u)
    return out


def adam_ref(grads, eps, weight_decay=0.0, params=None, b1=0.9, b2=0.999):
    m, v, out = 0.0, 0.0, []
    for t, g in enumerate(grads, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        u = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        out.append(u + weight_decay * params if weight_decay else u)
    return out


def radam_ref(grads, eps, b1=0.9, b2=0.999):
    """Rectified Adam (Liu et al. 2020, Algorithm 2; optax's threshold rho_t > 5)."""
    m, v, out = 0.0, 0.0, []
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        # rho_t in float32 as optax computes it: 1 - b2^t loses digits, which moves rho_t
        # by ~0.04 and the rectified step by ~0.5% against float64.
        b2t = float(jnp.float32(b2) ** jnp.int32(t))
        rho = float(jnp.float32(rho_inf) - jnp.float32(2 * t * b2t) / jnp.float32(1 - b2t))
        if rho > 5:
            r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
            out.append(r * m_hat / (np.sqrt(v_hat) + eps))
        else:
            out.append(m_hat)
    return out


CASES = {
    "radam": (dict(optimizer="radam"), lambda g, p: radam_ref(g, 1e-3)),
    "adam": (dict(optimizer="adam"), lambda g, p: adam_ref(g, 1e-3)),
    "adamw": (dict(optimizer="adamw", weight_decay=0.1), lambda g, p: adam_ref(g, 1e-3, 0.1, p)),
    "sgd": (dict(optimizer="sgd"), lambda g, p: list(g)),
    # grad_clip: each element clipped before the optimizer (RLHive's grad_clip).
    "sgd_grad_clip": (
        dict(optimizer="sgd", grad_clip=0.5), lambda g, p: [np.clip(x, -0.5, 0.5) for x in g],
    ),
    "adam_grad_clip": (
        dict(optimizer="adam", grad_clip=0.3),
        lambda g, p: adam_ref([np.clip(x, -0.3, 0.3) for x in g], 1e-3),
    ),
    "sgd_momentum": (
        dict(optimizer="sgd", momentum=0.9),
        lambda g, p: [sum(0.9 ** (t - k) * g[k] for k in range(t + 1)) for t in range(len(g))],
    ),
    # Dopamine's TF1 centered RMSProp (atari-rmsprop-dqn) and the MinAtar paper's PyTorch one.
    "rmsprop_tf_centered": (
        dict(optimizer="rmsprop", rmsprop_decay=0.95, rmsprop_eps=1e-5, rmsprop_centered=True,
             rmsprop_eps_in_sqrt=True, rmsprop_initial_scale=1.0),
        lambda g, p: rmsprop_ref(g, 0.95, 1e-5, True, True, 1.0, 0.0),
    ),
    "rmsprop_torch_centered": (
        dict(optimizer="rmsprop", rmsprop_decay=0.95, rmsprop_eps=0.01, rmsprop_centered=True,
             rmsprop_eps_in_sqrt=False),
        lambda g, p: rmsprop_ref(g, 0.95, 0.01, True, False, 0.0, 0.0),
    ),
    "rmsprop_momentum": (
        dict(optimizer="rmsprop", momentum=0.5),
        lambda g, p: rmsprop_ref(g, 0.9, 1e-8, False, True, 0.0, 0.5),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_optimizer_updates_match_numpy(case):
    options, reference = CASES[case]
    cfg = OptimizerOptions(**options)
    rng = np.random.default_rng(0)
    params = rng.normal(size=5).astype(np.float32)
    grads = [rng.normal(size=5).astype(np.float32) for _ in range(8)]  # RAdam rectifies at t=6
    transform = scale_transform(cfg, eps=1e-3)
    state = transform.init(jnp.asarray(params))
    got = []
    for g in grads:
        u, state = transform.update(jnp.asarray(g), state, jnp.asarray(params))
        got.append(np.asarray(u))
    for a, b in zip(got, reference(grads, params), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_lr_schedules_match_their_formulas():
    steps = np.array([0, 250, 500, 999, 1000, 1500])
    linear = lr_factor(
        OptimizerOptions(lr_schedule="linear", lr_decay_steps=1000, lr_end_factor=0.2)
    )
    want = [1 - 0.8 * min(t, 1000) / 1000 for t in steps]
    np.testing.assert_allclose([linear(t) for t in steps], want, rtol=1e-6)
    cosine = lr_factor(
        OptimizerOptions(lr_schedule="cosine", lr_decay_steps=1000, lr_end_factor=0.1)
    )
    want = [0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 1000) / 1000)) for t in steps]
    np.testing.assert_allclose([cosine(t) for t in steps], want, rtol=1e-5, atol=1e-7)
    piecewise = lr_factor(
        OptimizerOptions(lr_schedule="piecewise", lr_boundaries=(250, 999), lr_scales=(0.5, 0.1))
    )
    want = [1.0, 0.5, 0.5, 0.05, 0.05, 0.05]  # a scale applies from its boundary on
    np.testing.assert_allclose([piecewise(t) for t in steps], want, rtol=1e-6)
    assert lr_factor(OptimizerOptions()) is None  # constant: no factor at all


def test_epsilon_schedules_match_their_formulas():
    exp = exponential_schedule(1.0, 0.05, 0.99, 8)
    for t in (0, 8, 80, 8000):
        np.testing.assert_allclose(exp(t), max(0.05, 0.99 ** (t / 8)), rtol=1e-5)
    pw = piecewise_linear_schedule((100, 200, 400), (1.0, 0.5, 0.1))
    for t in (0, 100, 150, 200, 300, 400, 900):
        np.testing.assert_allclose(pw(t), np.interp(t, [100, 200, 400], [1.0, 0.5, 0.1]), rtol=1e-6)
    with pytest.raises(ValueError):
        piecewise_linear_schedule((2, 1), (0.1, 0.2))


# ---------------------------------------------------------------- the options reach agents

SPEC = envs.make("CartPole-v1", num_envs=2).spec
TINY = dict(hidden_sizes=(8,), batch_size=4, buffer_size=16, learning_starts=0, max_grad_norm=None)


def rollout(seed):
    rng = np.random.default_rng(seed)
    return Transition(
        obs=jnp.asarray(rng.normal(size=(2, 2, 4)), jnp.float32),
        action=jnp.asarray(rng.integers(0, 2, (2, 2)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(2, 2)), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(2, 2, 4)), jnp.float32),
        terminated=jnp.zeros((2, 2), bool),
        truncated=jnp.zeros((2, 2), bool),
        extras={},
    )


def dqn_step(**options):
    agent = agents.make("dqn", SPEC, **TINY | options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    new, _ = jax.jit(agent.update)(state, rollout(0), jax.random.PRNGKey(1))
    flat = lambda t: np.concatenate([np.ravel(x) for x in jax.tree.leaves(t)])
    return flat(state.params), flat(new.params)


def test_dqn_takes_the_optimizers_and_schedules_step():
    # SGD with lr 1 moves the params by minus the gradient: that gives the gradient g.
    params, moved = dqn_step(optimizer="sgd", lr=1.0)
    g = params - moved
    assert np.abs(g).max() > 0
    lr = 1e-2  # (the other optimizers share this path: their steps are tested above)
    rms = dict(
        rmsprop_decay=0.95, rmsprop_eps=1e-5, rmsprop_centered=True, rmsprop_initial_scale=1.0
    )
    _, rmsprop = dqn_step(optimizer="rmsprop", lr=lr, **rms)
    want = params - lr * rmsprop_ref([g], 0.95, 1e-5, True, True, 1.0, 0.0)[0]
    np.testing.assert_allclose(rmsprop, want, rtol=1e-4, atol=1e-6)
    # A piecewise schedule halving the lr from step 0 on moves by half the gradient.
    _, scheduled = dqn_step(optimizer="sgd", lr=1.0, lr_schedule="piecewise",
                            lr_boundaries=(0,), lr_scales=(0.5,))  # fmt: skip
    np.testing.assert_allclose(scheduled, params - 0.5 * g, rtol=1e-5, atol=1e-7)
    # grad_clip: the same step with each gradient element clipped (RLHive's grad_clip).
    _, clipped = dqn_step(optimizer="sgd", lr=1.0, grad_clip=0.01)
    np.testing.assert_allclose(clipped, params - np.clip(g, -0.01, 0.01), rtol=1e-5, atol=1e-7)
    assert np.abs(g).max() > 0.01  # the clip changed the step


def test_exponential_epsilon_reaches_dqn():
    options = dict(epsilon_schedule="exponential", epsilon_decay=0.5, epsilon_end=0.01)
    agent = agents.make("dqn", SPEC, **TINY | options)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    _, metrics = jax.jit(agent.update)(state, rollout(0), jax.random.PRNGKey(1))
    np.testing.assert_allclose(metrics["epsilon"], 0.5 ** (4 / 2), rtol=1e-6)  # 4 steps, 2 envs


def test_ppo_reports_its_scheduled_lr():
    agent = agents.make("ppo", SPEC, hidden_sizes=(8,), num_minibatches=1,
                        update_epochs=1, anneal_lr=False, lr=1e-3, lr_schedule="cosine",
                        lr_decay_steps=8)  # fmt: skip
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.zeros((2, 4))
    extras = jax.vmap(lambda k: agent.act(state, obs, (), k, True)[2])(
        jax.random.split(jax.random.PRNGKey(1), 2)
    )
    data = rollout(0)._replace(extras=extras)
    update = jax.jit(agent.update)
    state, metrics = update(state, data, jax.random.PRNGKey(2))
    np.testing.assert_allclose(metrics["lr"], 1e-3, rtol=1e-6)  # the schedule at step 0
    _, metrics = update(state, data, jax.random.PRNGKey(3))  # at step 4 of 8: half way
    np.testing.assert_allclose(
        metrics["lr"], 1e-3 * 0.5 * (1 + math.cos(math.pi * 4 / 8)), rtol=1e-5
    )


def test_bad_optimizer_options_are_one_line_config_errors():
    for name, options, words in [
        ("dqn", dict(optimizer="adagrad"), "'adagrad' is not one of"),
        ("sac", dict(lr_schedule="linear"), "needs lr_decay_steps"),
        ("ppo", dict(lr_schedule="linear", lr_decay_steps=10), "set anneal_lr false"),
        ("td3", dict(lr_schedule="piecewise", lr_boundaries=(10, 5), lr_scales=(1.0, 1.0)),
         "strictly increasing"),
        ("dqn", dict(lr_schedule="piecewise", lr_boundaries=(10,), lr_scales=()), "one length"),
        ("rainbow", dict(epsilon_schedule="piecewise", epsilon_boundaries=(5,),
                         epsilon_values=(0.5, 0.1)), "one length"),
    ]:  # fmt: skip
        spec = envs.make("Pendulum-v1" if name in ("sac", "td3") else "CartPole-v1").spec
        with pytest.raises(ConfigError) as e:
            agents.make(name, spec, **options)
        assert words in str(e.value) and "\n" not in str(e.value), (name, str(e.value))


def test_schedules_of_q_learning_and_actor_critic_configs():
    from jaxrl.agents.common.optim import epsilon_schedule, scheduled_lrs
    from jaxrl.agents.q_learning.dqn import DQNConfig

    cfg = DQNConfig(
        epsilon_schedule="piecewise", epsilon_boundaries=(0, 100), epsilon_values=(1.0, 0.2)
    )
    schedule = epsilon_schedule(cfg, jnp.float32(1.0), jnp.float32(0.05), num_envs=4)
    np.testing.assert_allclose(
        [schedule(t) for t in (0, 50, 100, 500)], [1.0, 0.6, 0.2, 0.2], rtol=1e-6
    )
    linear = epsilon_schedule(DQNConfig(epsilon_decay_steps=100), 1.0, 0.0, num_envs=4)
    np.testing.assert_allclose(linear(25), 0.75, rtol=1e-6)
    # Every learning rate of an actor-critic's hparams follows the schedule, nothing else.
    h = {"actor_lr": jnp.float32(1.0), "critic_lr": jnp.float32(2.0), "alpha_lr": jnp.float32(3.0),
         "gamma": jnp.float32(0.99)}  # fmt: skip
    cfg = OptimizerOptions(lr_schedule="linear", lr_decay_steps=100)
    got = scheduled_lrs(cfg, h, jnp.int32(25))
    np.testing.assert_allclose(
        [got[k] for k in ("actor_lr", "critic_lr", "alpha_lr")], [0.75, 1.5, 2.25]
    )
    assert float(got["gamma"]) == np.float32(0.99)
    assert scheduled_lrs(OptimizerOptions(), h, jnp.int32(25)) is h  # constant: untouched


def test_parameter_norms_against_numpy():
    from jaxrl.agents.common.optim import parameter_norms

    rng = np.random.default_rng(0)
    dense = {"kernel": rng.normal(size=(3, 4)), "bias": rng.normal(size=4)}
    params = {"params": {"Dense_0": dense}}
    grads = jax.tree.map(lambda x: 2.0 * x + 1.0, params)
    params, grads = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), (params, grads))
    got = parameter_norms("critic", params, grads)
    for leaf in ("kernel", "bias"):
        w = np.asarray(params["params"]["Dense_0"][leaf], np.float64)
        g = np.asarray(grads["params"]["Dense_0"][leaf], np.float64)
        key = f"norms/critic/params/Dense_0/{leaf}"
        np.testing.assert_allclose(float(got[f"{key}/weight"]), np.sqrt((w**2).sum()), rtol=1e-6)
        np.testing.assert_allclose(float(got[f"{key}/grad"]), np.sqrt((g**2).sum()), rtol=1e-6)
    assert len(got) == 4
