"""CURL as a loss learner (``agents/auxiliary/curl.py``): its momentum-encoder (EMA) update and own
Adam step against NumPy; on the Q-learning skeleton (DQN, Rainbow), that its gradient
reaches the torso and nothing else, that it is off by default (no ``aux`` state: the plain
program) and that weight 0 leaves the agent's update equal to the plain one up to
rounding; on SAC from pixels, the shared critic encoder that the InfoNCE term trains (and
nothing else of the critics), the actor's detached copy of it, the momentum encoder's EMA
and pixel SAC without CURL as before; and its ConfigErrors."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.agents.auxiliary import base as aux_lib
from jaxrl.agents.auxiliary.base import Encoder
from jaxrl.agents.auxiliary.curl import make_curl
from jaxrl.types import Box, ConfigError, Discrete, EnvSpec, Transition
from tests.helpers import TINY_CONV

SMALL = {"curl_hidden": 16, "curl_dim": 8, "curl_pad": 1}


def test_momentum_encoder_is_an_ema_and_w_takes_adam_steps():
    net = nn.Dense(3)
    encoder = Encoder(
        params=lambda p: p["enc"],
        apply=lambda e, obs: net.apply(e, obs.reshape(obs.shape[0], -1)),
        obs_shape=(4, 4, 1),
        obs_dtype=jnp.float32,
    )
    tau, lr = 0.25, 0.1
    learner = make_curl(encoder, hidden=5, dim=4, tau=tau, lr=lr)
    h = {k: jnp.float32(v) for k, v in learner.hparams.items()}
    params = {"enc": net.init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))}
    state = jax.jit(learner.init)(jax.random.PRNGKey(1), params)
    leaves = lambda t: [np.asarray(x, np.float64) for x in jax.tree.leaves(t)]
    pairs = zip(leaves(state["target"]["encoder"]), leaves(params["enc"]), strict=True)
    assert all(np.array_equal(a, b) for a, b in pairs)
    new = {"enc": jax.tree.map(lambda x: x + 1.0, params["enc"])}
    grads = jax.tree.map(jnp.zeros_like, state["params"])
    grads["W"] = jnp.ones_like(grads["W"])
    out = jax.jit(learner.after_step)(state, grads, new, h)
    # Adam's first step (bias-corrected) moves W by -lr g / (|g| + eps), eps 1.5e-4 (the
    # reference's); zero grads move nothing.
    want = np.asarray(state["params"]["W"], np.float64) - lr / (1 + 1.5e-4)
    np.testing.assert_allclose(out["params"]["W"], want, rtol=0, atol=2e-6)  # f32 Adam
    for a, b in zip(leaves(out["params"]["proj"]), leaves(state["params"]["proj"]), strict=True):
        np.testing.assert_array_equal(a, b)
    online = {"encoder": new["enc"], "proj": out["params"]["proj"]}
    for t, o, got in zip(
        leaves(state["target"]), leaves(online), leaves(out["target"]), strict=True
    ):
        np.testing.assert_allclose(got, (1 - tau) * t + tau * o, rtol=1e-6, atol=1e-7)


@pytest.fixture(scope="module")
def trained():
    """plain DQN, CURL with weight 0 and CURL with weight 1 (the Q-learning skeleton that
    Rainbow shares) on 6x6x2 images, three updates each on the same random image
    rollouts."""
    spec = EnvSpec("images", (6, 6, 2), "float32", Discrete(3), 2, 100)
    kw = dict(learning_starts=4, batch_size=8, buffer_size=64, hidden_sizes=(32,))
    made = [
        agents.make("dqn", spec, **kw),
        agents.make("dqn", spec, **kw, **SMALL, curl=True, curl_weight=0.0),
        agents.make("dqn", spec, **kw, **SMALL, curl=True),
    ]
    states = [jax.jit(a.init)(jax.random.PRNGKey(0)) for a in made]
    first = states[2]
    rng = np.random.default_rng(0)
    image = lambda: jnp.asarray(rng.random((2, 2, *spec.obs_shape)) < 0.3, jnp.float32)
    updates = [jax.jit(a.update) for a in made]
    for i in range(3):
        rollout = Transition(
            obs=image(),
            action=jnp.asarray(rng.integers(0, 3, (2, 2)), jnp.int32),
            reward=jnp.asarray(rng.random((2, 2)), jnp.float32),
            next_obs=image(),
            terminated=jnp.zeros((2, 2), bool),
            truncated=jnp.zeros((2, 2), bool),
            extras={},
        )
        out = [u(s, rollout, jax.random.PRNGKey(i)) for u, s in zip(updates, states, strict=True)]
        states, metrics = [o[0] for o in out], [o[1] for o in out]
    return made, first, states, metrics


def test_curl_is_off_by_default_and_weight_zero_is_the_plain_update(trained):
    made, _, (plain, zero, curl), metrics = trained
    assert plain.aux is None and set(zero.aux) == {"curl"}
    assert zero.aux["curl"]["params"]["W"].shape == (8, 8)
    assert np.isfinite(float(metrics[1]["curl/loss"])) and "curl/loss" not in metrics[0]
    # Weight 0 adds an exact zero to the agent's gradient: equal up to XLA's rounding
    # (another program, fused differently), and the agent's own keys are unchanged.
    for a, b in zip(jax.tree.leaves(plain.params), jax.tree.leaves(zero.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    torso = lambda s: jax.tree.leaves(s.params["params"]["torso"])
    moved = [float(jnp.abs(a - b).max()) for a, b in zip(torso(plain), torso(curl), strict=True)]
    assert max(moved) > 1e-4


def test_contrastive_gradient_reaches_the_torso_only_and_the_momentum_encoder_follows(trained):
    made, first, (_, _, curl), metrics = trained
    parts = made[2].update.args[0]
    state = curl.aux
    batch = parts.buffer.sample(curl.buffer, jax.random.PRNGKey(5)).experience
    batch = jax.tree.map(lambda x: x[:, 0], batch)
    h = {k: jnp.float32(v) for k, v in aux_lib.hparams(parts.aux).items()}

    def loss(params, own):
        return aux_lib.loss_terms(parts.aux, own, state, params, batch, h, jax.random.PRNGKey(0))[0]

    own = aux_lib.trainable(parts.aux, state)
    g_params, g_own = jax.jit(jax.grad(loss, argnums=(0, 1)))(curl.params, own)
    norm = lambda t: sum(float(jnp.abs(x).sum()) for x in jax.tree.leaves(t))
    assert norm(g_params["params"]["torso"]) > 0 and norm(g_params["params"]["head"]) == 0
    assert norm(g_own["curl"]["W"]) > 0 and norm(g_own["curl"]["proj"]) > 0
    assert 0.0 <= float(metrics[2]["curl/accuracy"]) <= 1.0
    # The momentum encoder moved from its start (the initial torso) towards the torso.
    start = first.aux["curl"]["target"]["encoder"]["params"]
    target = state["curl"]["target"]["encoder"]["params"]
    online = curl.params["params"]["torso"]
    for s, t, o in zip(*(jax.tree.leaves(x) for x in (start, target, online)), strict=True):
        assert np.abs(np.asarray(o) - np.asarray(t)).max() <= np.abs(np.asarray(o) - s).max()
    assert norm(jax.tree.map(jnp.subtract, target, start)) > 0


def test_curl_mistakes_are_one_line_config_errors():
    cartpole = envs.make("CartPole-v1", num_envs=1).spec
    with pytest.raises(ConfigError, match="image observations") as e:
        agents.make("dqn", cartpole, curl=True)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="image observations") as e:
        agents.make("sac", envs.make("Pendulum-v1", num_envs=1).spec, curl=True)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="does not take option 'curl': it is fixed at False"):
        agents.make("td3", envs.make("Pendulum-v1", num_envs=1).spec, curl=True)
    with pytest.raises(ConfigError, match="curl_tau"):
        agents.make("dqn", cartpole, curl=True, curl_tau=1.5)


PIXELS = EnvSpec("pixels", (8, 8, 2), "uint8", Box((1,), (-2.0,), (2.0,)), 1, 200)
SAC_KW = dict(TINY_CONV, learning_starts=4, buffer_size=32)


@pytest.fixture(scope="module")
def sac_runs():
    """Pixel SAC with CURL (tau 0.05, the paper's SAC value) on 8x8x2 uint8 frames: the
    states after the 4th, 5th and 6th update (one gradient step each, the first at the
    4th, ``learning_starts``) on random rollouts, and their metrics."""
    agent = agents.make("sac", PIXELS, **SAC_KW, **SMALL, curl=True, curl_tau=0.05)
    rng = np.random.default_rng(0)
    frames = lambda: jnp.asarray(rng.integers(0, 256, (1, 1, 8, 8, 2)), jnp.uint8)
    update = jax.jit(agent.update)
    states, metrics = [jax.jit(agent.init)(jax.random.PRNGKey(0))], []
    for i in range(6):
        rollout = Transition(
            obs=frames(),
            action=jnp.asarray(rng.uniform(-2, 2, (1, 1, 1)), jnp.float32),
            reward=jnp.asarray(rng.random((1, 1)), jnp.float32),
            next_obs=frames(),
            terminated=jnp.zeros((1, 1), bool),
            truncated=jnp.zeros((1, 1), bool),
            extras={},
        )
        state, m = update(states[-1], rollout, jax.random.PRNGKey(i))
        states, metrics = [*states, state], [*metrics, m]
    return states[4:], metrics[4:]


def test_sac_without_curl_keeps_its_per_critic_encoders_and_no_aux(sac_runs):
    curl, curl_metrics = sac_runs
    plain = jax.eval_shape(agents.make("sac", PIXELS, **SAC_KW).init, jax.random.PRNGKey(0))
    assert plain.learner.aux is None
    # Each critic owns its encoder (stacked inside "critics"), the actor its own.
    assert set(plain.learner.critic_params["params"]) == {"critics"}
    assert "SpecTorso_0" in plain.learner.critic_params["params"]["critics"]
    # With CURL one encoder outside "critics" feeds both critics' heads.
    assert set(curl[-1].learner.critic_params["params"]) == {"critics", "SpecTorso_0"}
    assert "SpecTorso_0" not in curl[-1].learner.critic_params["params"]["critics"]
    assert np.isfinite(float(curl_metrics[-1]["curl/loss"]))
    assert 0.0 <= float(curl_metrics[-1]["curl/accuracy"]) <= 1.0


def test_sac_infonce_gradient_reaches_the_critic_encoder_only(sac_runs):
    state = sac_runs[0][-1]
    aux = aux_lib.Auxiliary((("curl", _sac_curl_learner()),))
    batch = Transition(
        obs=jnp.asarray(np.random.default_rng(1).integers(0, 256, (4, 8, 8, 2)), jnp.uint8),
        action=jnp.zeros((4, 1)),
        reward=jnp.zeros((4,)),
        next_obs=jnp.zeros((4, 8, 8, 2), jnp.uint8),
        terminated=jnp.zeros((4,), bool),
        truncated=jnp.zeros((4,), bool),
        extras={},
    )
    grads, aux_grads, metrics = jax.jit(
        lambda p, s: aux_lib.loss_grads(aux, p, s, batch, jax.random.PRNGKey(0), windows=False)
    )(state.learner.critic_params, state.learner.aux)
    norm = lambda t: sum(float(jnp.abs(x).sum()) for x in jax.tree.leaves(t))
    assert norm(grads["params"]["SpecTorso_0"]) > 0  # the shared encoder
    assert norm(grads["params"]["critics"]) == 0  # not the critics' heads
    assert norm(aux_grads["curl"]["W"]) > 0 and norm(aux_grads["curl"]["proj"]) > 0
    assert np.isfinite(float(metrics["curl/loss"]))


def _sac_curl_learner():
    """The CURL learner ``agents.make("sac", PIXELS, curl=True, ...)`` attaches (same
    options), on the critic's shared encoder."""
    from jaxrl.agents.off_policy.sac import SACConfig, sac_algorithm
    from jaxrl.validation import build_config

    cfg = build_config(SACConfig, {**SAC_KW, **SMALL, "curl": True, "curl_tau": 0.05}, "sac")
    return make_curl(sac_algorithm(PIXELS, cfg).encoder, pad=1, hidden=16, dim=8, tau=0.05)


def test_sac_actor_reads_the_critic_encoder_and_the_momentum_encoder_is_its_ema(sac_runs):
    curl = sac_runs[0]
    before, after = curl[1], curl[2]  # one gradient step between them
    enc = lambda s: s.learner.critic_params["params"]["SpecTorso_0"]
    actor_enc = lambda s: s.learner.actor_params["params"]["SpecTorso_0"]
    for s in (before, after):  # the actor's encoder is the critic's, bit for bit
        for a, b in zip(jax.tree.leaves(actor_enc(s)), jax.tree.leaves(enc(s)), strict=True):
            np.testing.assert_array_equal(a, b)
    pairs = zip(jax.tree.leaves(enc(curl[0])), jax.tree.leaves(enc(after)), strict=True)
    moved = [float(jnp.abs(a - b).max()) for a, b in pairs]
    assert max(moved) > 0  # the critic's encoder trains
    tau = 0.05
    old = before.learner.aux["curl"]["target"]["encoder"]["params"]
    new = after.learner.aux["curl"]["target"]["encoder"]["params"]
    for t0, o, t1 in zip(*map(jax.tree.leaves, (old, enc(after), new)), strict=True):
        want = (1 - tau) * np.asarray(t0, np.float64) + tau * np.asarray(o, np.float64)
        np.testing.assert_allclose(t1, want, rtol=1e-5, atol=1e-7)
