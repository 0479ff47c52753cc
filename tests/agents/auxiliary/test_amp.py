"""AMP's discriminator loss with its gradient penalty (Peng et al. 2021, eq. 8) against a
NumPy MLP with finite-difference input gradients; the AMP and action-symmetry learners'
updates and rewards; and, on SAC, that ``style_reward_weight`` 0 leaves SAC bit-identical
and that a mistake in the AMP or demonstration options is one ConfigError line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.auxiliary.amp import (
    Discriminator,
    discriminator_loss,
    make_action_symmetry,
    make_amp,
    transition_features,
)
from jaxrl.buffers.demonstrations import save_npz
from jaxrl.types import ConfigError, Transition
from tests.agents.off_policy.test_td3 import HIGH, LOW, SPEC, one_transition


def numpy_discriminator(params, x):
    """Float64 forward pass of ``Discriminator((H,))``: ``relu(x W0 + b0) W1 + b1``."""
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    h = np.maximum(0.0, x @ p["MLP_0"]["Dense_0"]["kernel"] + p["MLP_0"]["Dense_0"]["bias"])
    return (h @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"])[:, 0]


def numpy_input_gradients(params, x, eps=1e-6):
    grad = np.zeros_like(x)
    for b in range(x.shape[0]):
        for f in range(x.shape[1]):
            up, down = x[b : b + 1].copy(), x[b : b + 1].copy()
            up[0, f] += eps
            down[0, f] -= eps
            d = numpy_discriminator(params, up)[0] - numpy_discriminator(params, down)[0]
            grad[b, f] = d / (2 * eps)
    return grad


def test_discriminator_loss_and_gradient_penalty_match_numpy():
    rng = np.random.default_rng(1)
    net = Discriminator((6,))
    params = jax.jit(net.init)(jax.random.PRNGKey(3), jnp.zeros((1, 4)))
    pos, neg = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    w_gp = 10.0
    loss, parts = discriminator_loss(net, params, jnp.asarray(pos, jnp.float32),
                                     jnp.asarray(neg, jnp.float32), w_gp)  # fmt: skip
    d_pos, d_neg = numpy_discriminator(params, pos), numpy_discriminator(params, neg)
    lsq = np.mean((d_pos - 1) ** 2) + np.mean((d_neg + 1) ** 2)
    grad = numpy_input_gradients(params, pos)
    penalty = np.mean(np.sum(grad**2, axis=1))
    np.testing.assert_allclose(float(parts["lsq_loss"]), lsq, rtol=1e-5)
    np.testing.assert_allclose(float(parts["grad_penalty"]), penalty, rtol=1e-4)
    np.testing.assert_allclose(float(loss), lsq + 0.5 * w_gp * penalty, rtol=1e-4)
    assert penalty > 0  # the penalty term is exercised


def reference(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return Transition(
        obs=rng.normal(size=(n, 3)).astype(np.float32),
        action=rng.uniform(LOW, HIGH, size=(n, 2)).astype(np.float32),
        reward=rng.normal(size=n).astype(np.float32),
        next_obs=rng.normal(size=(n, 3)).astype(np.float32),
        terminated=np.zeros(n, bool),
        truncated=np.zeros(n, bool),
        extras={},
    )


def test_amp_learner_separates_reference_from_policy_data():
    """Reference transitions near +3, policy ones near -3: a few Adam steps push D up on
    the former, down on the latter, and the style reward follows D."""
    ref = reference()
    ref = ref._replace(obs=ref.obs + 3, next_obs=ref.next_obs + 3)
    policy = reference(seed=1)
    policy = policy._replace(obs=policy.obs - 3, next_obs=policy.next_obs - 3)
    amp = make_amp(ref, hidden_sizes=(16,), lr=1e-2)
    h = {k: jnp.float32(v) for k, v in amp.hparams.items()}
    state = jax.jit(amp.init)(jax.random.PRNGKey(0))
    update = jax.jit(amp.update)
    for i in range(30):
        state, metrics = update(state, policy, h, jax.random.PRNGKey(i))
    assert float(metrics["d_positive"]) > 0.5 > -0.5 > float(metrics["d_negative"])
    assert set(metrics) == {"loss", "lsq_loss", "grad_penalty", "d_positive", "d_negative"}
    on_ref, on_policy = amp.reward(state, ref, h), amp.reward(state, policy, h)
    assert float(on_ref.mean()) > 0.5 > float(on_policy.mean()) >= 0.0
    np.testing.assert_array_equal(amp.reward(state, ref, {**h, "style_reward_weight": 0.0}), 0.0)
    assert transition_features(ref.obs, ref.next_obs).shape == (16, 6)


def test_action_symmetry_rewards_symmetric_actions():
    """Right side (dim 0) always +0.8, left side (dim 1) always -0.8: the discriminator
    learns to tell them apart, so an asymmetric action earns a low confusion reward."""
    sym = make_action_symmetry((0,), (1,), hidden_sizes=(16,), lr=1e-2)
    h = {k: jnp.float32(v) for k, v in sym.hparams.items()}
    batch = reference()._replace(action=np.tile(np.float32([0.8, -0.8]), (16, 1)))
    state = jax.jit(sym.init)(jax.random.PRNGKey(0))
    for i in range(30):
        state, metrics = jax.jit(sym.update)(state, batch, h, jax.random.PRNGKey(i))
    assert float(metrics["d_positive"]) > 0.5 and float(metrics["d_negative"]) < -0.5
    assert float(sym.reward(state, batch, h).mean()) < 0.95


def write_demos(path, n=8, **changes):
    demos = reference(n)
    arrays = {f: getattr(demos, f) for f in Transition._fields[:-1]}
    save_npz(path, Transition(**{**arrays, **changes}, extras={}))
    return str(path)


SAC = dict(hidden_sizes=(8,), batch_size=6, buffer_size=64, learning_starts=0)


@pytest.mark.default_codegen  # bit for bit against a differently fused program
def test_style_reward_weight_zero_is_plain_sac_bit_for_bit(tmp_path):
    demo_file = write_demos(tmp_path / "ref.npz")
    plain = agents.make("sac", SPEC, **SAC)
    amp = agents.make("sac", SPEC, **SAC, amp=True, demo_file=demo_file, style_reward_weight=0.0)
    states = [jax.jit(a.init)(jax.random.PRNGKey(0)) for a in (plain, amp)]
    assert states[0].learner.aux is None and set(states[1].learner.aux) == {"amp"}
    assert states[1].hparams["style_reward_weight"] == 0.0
    # The same program with the weight 1 (a sweepable hparam): SAC learns another reward.
    hparams = {**states[1].hparams, "style_reward_weight": jnp.float32(1.0)}
    states.append(states[1].replace(hparams=hparams))
    updates = [jax.jit(a.update) for a in (plain, amp, amp)]
    for i in range(2):
        data = one_transition(i, i == 1)
        for j in range(3):
            states[j], metrics = updates[j](states[j], data, jax.random.PRNGKey(i))
    assert float(metrics["amp/reward"]) > 0.0 and np.isfinite(float(metrics["amp/loss"]))
    learners = [s.learner.replace(aux=None) for s in states]
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, learners[0], learners[1])))
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, learners[0], learners[2])))


def test_bad_options_are_one_line_config_errors(tmp_path):
    good = write_demos(tmp_path / "good.npz")
    cases = {
        "demo_ratio": dict(demo_ratio=1.5),
        "needs reference data": dict(amp=True),
        "demo_ratio 0.5 needs": dict(demo_ratio=0.5),
        "missing ['reward']": dict(demo_file=write_demos(tmp_path / "k.npz", reward=None)),
        "'obs' has shape": dict(
            demo_file=write_demos(tmp_path / "s.npz", obs=np.zeros((8, 4), np.float32)),
            demo_ratio=0.5,
        ),
        "does not exist": dict(demo_file=str(tmp_path / "none.npz"), amp=True),
        "one-step uniform replay": dict(demo_file=good, demo_ratio=0.5, n_step=3),
        "right_action_map": dict(action_symmetry=True, right_action_map=(0,), left_action_map=(2,)),
    }
    for text, options in cases.items():
        with pytest.raises(ConfigError, match=text.replace("[", r"\[").replace("]", r"\]")) as e:
            agents.make("sac", SPEC, **SAC, **options)
        assert "\n" not in str(e.value)


def test_dqn_takes_amp_and_demonstrations(tmp_path):
    """On DQN too: AMP with weight 0 leaves DQN bit-identical; demonstrations (discrete
    actions) mix in and change what it learns; AMP's metrics are reported."""
    spec = envs.make("CartPole-v1", num_envs=1).spec
    rng = np.random.default_rng(0)
    n = 8
    demos = Transition(
        obs=rng.normal(size=(n, 4)).astype(np.float32),
        action=rng.integers(0, 2, n).astype(np.int32),
        reward=np.ones(n, np.float32),
        next_obs=rng.normal(size=(n, 4)).astype(np.float32),
        terminated=np.zeros(n, bool),
        truncated=np.zeros(n, bool),
        extras={},
    )
    save_npz(tmp_path / "cartpole.npz", demos)
    dqn = dict(hidden_sizes=(8,), batch_size=6, buffer_size=64, learning_starts=0)
    file = str(tmp_path / "cartpole.npz")
    made = [
        agents.make("dqn", spec, **dqn),
        agents.make("dqn", spec, **dqn, amp=True, demo_file=file, style_reward_weight=0.0),
        agents.make("dqn", spec, **dqn, demo_file=file, demo_ratio=0.5),
    ]
    states = [jax.jit(a.init)(jax.random.PRNGKey(0)) for a in made]
    data = Transition(
        obs=jnp.asarray(rng.normal(size=(1, 1, 4)), jnp.float32),
        action=jnp.zeros((1, 1), jnp.int32),
        reward=jnp.zeros((1, 1), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(1, 1, 4)), jnp.float32),
        terminated=jnp.zeros((1, 1), bool),
        truncated=jnp.zeros((1, 1), bool),
        extras={},
    )
    out = [
        jax.jit(a.update)(s, data, jax.random.PRNGKey(1)) for a, s in zip(made, states, strict=True)
    ]
    same = jax.tree.map(np.array_equal, out[0][0].params, out[1][0].params)
    assert all(jax.tree.leaves(same))
    assert np.isfinite(float(out[1][1]["amp/loss"])) and float(out[1][1]["amp/reward"]) == 0.0
    assert not all(
        jax.tree.leaves(jax.tree.map(np.array_equal, out[0][0].params, out[2][0].params))
    )
