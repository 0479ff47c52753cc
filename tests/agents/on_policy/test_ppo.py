"""PPO: acting, the update's bookkeeping, options, and learning on CartPole."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.on_policy.ppo import make_network
from jaxrl.experiment.config import resolve, rounded_steps
from jaxrl.runners import RunConfig, make_train
from jaxrl.types import ConfigError
from tests.helpers import collect_rollout as rollout

TINY = dict(hidden_sizes=(8,), update_epochs=2, num_minibatches=2)


def test_discrete_act_samples_and_greedy_takes_the_argmax():
    env = envs.make("CartPole-v1", num_envs=3)
    agent = agents.make("ppo", env.spec, **TINY)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (3, 4))
    action, _, extras = agent.act(state, obs, (), jax.random.PRNGKey(2), True)
    logits, value = make_network(env.spec, agents.on_policy.ppo.PPOConfig(**TINY)).apply(
        state.params, obs
    )
    logp = jax.nn.log_softmax(logits)
    np.testing.assert_allclose(extras["log_prob"], logp[jnp.arange(3), action], rtol=1e-6)
    np.testing.assert_allclose(extras["value"], value, rtol=1e-6)
    greedy, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(2), False)
    np.testing.assert_array_equal(greedy, jnp.argmax(logits, -1))


def test_continuous_actions_are_clipped_to_the_box_and_log_prob_uses_the_raw_sample():
    env = envs.make("Pendulum-v1", num_envs=64)
    agent = agents.make("ppo", env.spec, **TINY, log_std_init=1.0)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jax.random.normal(jax.random.PRNGKey(1), (64, 3))
    action, _, extras = agent.act(state, obs, (), jax.random.PRNGKey(2), True)
    raw = np.asarray(extras["raw_action"])
    assert np.abs(raw).max() > 2.0  # std e^1: some samples leave the box
    np.testing.assert_allclose(action, np.clip(raw, -2.0, 2.0))
    (mean, log_std), _ = make_network(env.spec, agents.on_policy.ppo.PPOConfig(**TINY)).apply(
        state.params, obs
    )
    std = np.exp(np.asarray(log_std))
    ref = np.sum(-((raw - mean) ** 2) / (2 * std**2) - np.log(std * np.sqrt(2 * np.pi)), -1)
    np.testing.assert_allclose(extras["log_prob"], ref, rtol=1e-5)
    greedy, _, _ = agent.act(state, obs, (), jax.random.PRNGKey(2), False)
    np.testing.assert_allclose(greedy, np.clip(mean, -2.0, 2.0))


def test_update_counts_steps_anneals_lr_and_updates_running_stats():
    env = envs.make("Pendulum-v1", num_envs=2)
    agent = agents.make(
        "ppo", env.spec, **TINY, total_steps=32, normalize_obs=True, normalize_reward=True
    )
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    ro = rollout(agent, state, env, jax.random.PRNGKey(1))
    update = jax.jit(agent.update)
    new, metrics = update(state, ro, jax.random.PRNGKey(2))
    assert int(new.step) == 16 and int(new.updates) == 4
    np.testing.assert_allclose(metrics["lr"], 2.5e-4)
    np.testing.assert_allclose(new.obs_stats.mean, np.asarray(ro.obs).reshape(-1, 3).mean(0), 1e-3)
    assert float(new.return_stats.count) > 16
    assert all(np.isfinite(float(v)) for v in metrics.values())
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), state.params, new.params)
    assert all(jax.tree.leaves(changed))
    _, metrics = update(new, ro, jax.random.PRNGKey(3))
    np.testing.assert_allclose(metrics["lr"], 2.5e-4 * 0.5)


def test_hparams_can_be_vmapped():
    env = envs.make("CartPole-v1", num_envs=2)
    agent = agents.make("ppo", env.spec, **TINY)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    ro = rollout(agent, state, env, jax.random.PRNGKey(1))
    hparams = jax.tree.map(lambda x: jnp.stack([x, x]), state.hparams)
    hparams = hparams.replace(lr=jnp.array([0.0, 1e-3]))
    update = lambda h: agent.update(state.replace(hparams=h), ro, jax.random.PRNGKey(2))  # noqa: E731
    new, _ = jax.jit(jax.vmap(update))(hparams)
    leaf = lambda p: jax.tree.leaves(p)[0]
    np.testing.assert_array_equal(leaf(new.params)[0], leaf(state.params))
    assert jnp.any(leaf(new.params)[1] != leaf(state.params))


def test_user_mistakes_are_config_errors():
    env = envs.make("CartPole-v1", num_envs=3)
    agent = agents.make("ppo", env.spec, hidden_sizes=(8,), num_minibatches=4)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    ro = rollout(agent, state, env, jax.random.PRNGKey(1), T=3)
    with pytest.raises(ConfigError, match="not divisible by num_minibatches"):
        agent.update(state, ro, jax.random.PRNGKey(2))
    with pytest.raises(ConfigError, match="surrogate"):
        agents.make("ppo", env.spec, surrogate=0.1)
    with pytest.raises(ConfigError, match=r"update_epochs must be in \[1, inf\), got 0"):
        agents.make("ppo", env.spec, update_epochs=0)
    with pytest.raises(ConfigError, match="surrogate_loss_clip must be in"):
        agents.make("ppo", env.spec, surrogate_loss_clip=-0.1)


def test_cli_fills_total_steps_from_the_run():
    exp = resolve(agent="ppo", env="CartPole", steps=12_345)
    cfg = exp.to_dict()  # the schedule ends at the steps run: 12,345 up to whole chunks
    assert cfg["agent"]["total_steps"] == rounded_steps(exp.run, exp.env.num_envs) > 12_345
    assert cfg["preset"] == "cartpole-ppo" and cfg["run"]["rollout_len"] == 128
    cfg = resolve(agent="ppo", env="CartPole", overrides={"agent.total_steps": 99}).to_dict()
    assert cfg["agent"]["total_steps"] == 99


def test_a_few_ppo_updates_on_cartpole_raise_the_return():
    env = envs.make("CartPole-v1", num_envs=4)
    agent = agents.make("ppo", env.spec, hidden_sizes=(32, 32), lr=1e-3, anneal_lr=False)
    run = RunConfig(steps=20 * 512, rollout_len=128, log_every=20 * 512, eval_every=0)
    _, m = jax.jit(make_train(agent, env, run))(jax.random.PRNGKey(0))
    mean_return = np.asarray(m["episode_return_sum"]) / np.maximum(1, np.asarray(m["episodes"]))
    # A uniformly random policy averages about 22 on CartPole.
    assert mean_return[:2].mean() < 30
    assert mean_return[-3:].mean() > 3 * mean_return[:2].mean()


@pytest.mark.parametrize(
    "shape, torso, layers",
    [
        ((10, 10, 4), "auto", {"Conv_0", "Dense_0"}),  # MinAtar's CNN for small images
        ((36, 36, 4), "auto", {"Conv_0", "Conv_1", "Conv_2", "Dense_0"}),  # Nature CNN
        ((36, 36, 4), "impala", {f"ResidualBlock_{i}" for i in range(6)}),
    ],
)
def test_torso_option_picks_the_cnn(shape, torso, layers):
    from jaxrl.types import Discrete, EnvSpec

    spec = EnvSpec("images", shape, "uint8", Discrete(3), 2, 100)
    state = jax.eval_shape(agents.make("ppo", spec, torso=torso).init, jax.random.PRNGKey(0))
    assert layers <= set(state.params["params"]["actor_torso"])
    with pytest.raises(ConfigError, match="torso 'impala' needs image observations"):
        agents.make("ppo", envs.make("CartPole").spec, torso="impala")


def test_integer_observations_are_divided_by_255_in_the_mlp_torso_too():
    from jaxrl.types import Discrete, EnvSpec

    spec = lambda dtype: EnvSpec("bytes", (6,), dtype, Discrete(3), 2, 100)
    cfg = agents.on_policy.ppo.PPOConfig(hidden_sizes=(8,), torso="mlp")
    obs = jax.random.randint(jax.random.PRNGKey(1), (4, 6), 0, 256).astype(jnp.uint8)
    params = agents.make("ppo", spec("uint8"), **TINY).init(jax.random.PRNGKey(0)).params
    as_bytes = make_network(spec("uint8"), cfg).apply(params, obs)
    as_floats = make_network(spec("float32"), cfg).apply(params, obs / 255.0)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), as_bytes, as_floats)
    unscaled = make_network(spec("float32"), cfg).apply(params, obs.astype(jnp.float32))
    assert not np.allclose(unscaled[1], as_bytes[1])


@pytest.mark.parametrize("agent_name", ["ppo", "a2c"])
def test_critic_lr_scales_the_critics_step_only(agent_name):
    """machin's separate learning rates: with ``critic_lr`` three times ``lr``, one step of
    Adam (whose direction does not depend on the rate) moves the critic's parameters three
    times as far and the actor's exactly as far as without it."""
    env = envs.make("CartPole-v1", num_envs=2)
    opts = dict(TINY, update_epochs=1, num_minibatches=1, anneal_lr=False, lr=1e-3)
    if agent_name == "a2c":
        opts = {k: v for k, v in opts.items() if k not in ("update_epochs", "num_minibatches")}
    moves = []
    for critic_lr in (None, 3e-3):
        agent = agents.make(agent_name, env.spec, **opts, critic_lr=critic_lr)
        state = jax.jit(agent.init)(jax.random.PRNGKey(0))
        ro = rollout(agent, state, env, jax.random.PRNGKey(1))
        new, _ = jax.jit(agent.update)(state, ro, jax.random.PRNGKey(2))
        moves.append(
            jax.tree.map(lambda a, b: np.asarray(b) - np.asarray(a), state.params, new.params)
        )
    base, scaled = moves[0]["params"], moves[1]["params"]
    for name in base:
        factor = 3.0 if name.startswith(("critic", "value")) else 1.0
        for b, s in zip(jax.tree.leaves(base[name]), jax.tree.leaves(scaled[name]), strict=True):
            np.testing.assert_allclose(s, factor * b, rtol=1e-4, atol=1e-9)
    assert {"critic_torso", "value_head", "actor_torso", "policy_head"} <= set(base)
    with pytest.raises(ConfigError, match="critic_lr is the critic's own rate"):
        agents.make(agent_name, env.spec, critic_lr=1e-3, shared_torso=True)
