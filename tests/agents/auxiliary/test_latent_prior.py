"""The VAE action prior (agents/auxiliary/latent_prior.py): pre-training in ``init`` learns the
demonstrations' conditional action and the decoder stays in the action box; SAC with
``prior_weight`` 0 is plain SAC bit for bit while weight 1 acts through the decoder and
stores latents; DDPG (TD3's code) takes it; mistakes are one ConfigError line (exit 2
from the CLI, nothing written)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.auxiliary.latent_prior import ActionVAE
from jaxrl.buffers.demonstrations import replay_transitions, save_npz
from jaxrl.train import main as train_main
from jaxrl.types import Box, ConfigError, EnvSpec, Transition
from tests.helpers import one_line_error

# A box with centre 0 and half-widths 2 and 1 (powers of two), so that plain SAC's
# stored action (env action - centre) / half is its normalized action exactly.
LOW, HIGH = np.float32([-2.0, -1.0]), np.float32([2.0, 1.0])
SPEC = EnvSpec("Box2", (3,), "float32", Box((2,), tuple(LOW), tuple(HIGH)), 1, 10)
SAC = dict(hidden_sizes=(8,), batch_size=6, buffer_size=64, learning_starts=0)
VAE = dict(vae_hidden_sizes=(32,), vae_steps=400, vae_batch_size=32, vae_lr=3e-3)


def expert(obs):
    """The demonstrations' action in normalized units: a smooth function of the obs."""
    return np.stack([np.tanh(obs[:, 0]), 0.5 * np.sin(obs[:, 1])], axis=1).astype(np.float32)


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 256
    obs = rng.normal(size=(n, 3)).astype(np.float32)
    demos = Transition(
        obs=obs,
        action=expert(obs) * HIGH,  # env units
        reward=np.zeros(n, np.float32),
        next_obs=obs,
        terminated=np.zeros(n, bool),
        truncated=np.zeros(n, bool),
        extras={},
    )
    path = tmp_path_factory.mktemp("prior") / "demos.npz"
    save_npz(path, demos)
    return str(path)


@pytest.fixture(scope="module")
def prior_sac(demo_file):
    """(agent with prior_weight 0, its init state); the VAE pre-trained in init."""
    agent = agents.make("sac", SPEC, **SAC, **VAE, latent_prior=True, demo_file=demo_file,
                        prior_weight=0.0)  # fmt: skip
    return agent, jax.jit(agent.init)(jax.random.PRNGKey(0))


def test_pretrained_decoder_reproduces_demonstrations_within_the_box(prior_sac):
    agent, state = prior_sac
    prior = state.learner.aux["vae_prior"]
    vae = ActionVAE(2, 2, (32,))
    obs = np.random.default_rng(1).normal(size=(64, 3)).astype(np.float32)
    decode = lambda z: vae.apply(prior["params"], z, jnp.asarray(obs), method=ActionVAE.decode)
    error = np.abs(np.asarray(decode(jnp.zeros((64, 2)))) - expert(obs))
    assert error.mean() < 0.1, error.mean()  # the prior's mode is the expert's action
    assert float(prior["restore_loss"]) < 0.02 and float(prior["kl_loss"]) > 0
    far = np.asarray(decode(jnp.full((64, 2), 100.0)))
    assert np.all(np.abs(far) <= 1.0)  # the decoder's bounds (tanh)
    # Acting through the decoder (weight 1): env actions in the box, near the expert's.
    state1 = state.replace(hparams={**state.hparams, "prior_weight": jnp.float32(1.0)})
    act = jax.jit(agent.act, static_argnums=4)
    action, _, extras = act(state1, jnp.asarray(obs[:1]), (), jax.random.PRNGKey(2), False)
    assert extras["latent"].shape == (1, 2)
    assert np.all((LOW <= action) & (action <= HIGH))


@pytest.mark.default_codegen  # bit for bit against a differently fused program
def test_prior_weight_zero_is_plain_sac_and_the_buffer_holds_latents(prior_sac):
    prior, state = prior_sac
    plain = agents.make("sac", SPEC, **SAC)
    states = [jax.jit(plain.init)(jax.random.PRNGKey(0)), state]
    states.append(state.replace(hparams={**state.hparams, "prior_weight": jnp.float32(1.0)}))
    acts = [jax.jit(a.act, static_argnums=4) for a in (plain, prior, prior)]
    updates = [jax.jit(a.update) for a in (plain, prior, prior)]
    rng = np.random.default_rng(3)
    actions, latents = [[], [], []], []
    for i in range(3):
        obs = jnp.asarray(rng.normal(size=(1, 3)), jnp.float32)
        for j in range(3):
            action, _, extras = acts[j](states[j], obs, (), jax.random.PRNGKey(i), True)
            actions[j].append(np.asarray(action[0]))
            rollout = Transition(
                obs=obs[None], action=action[None], reward=jnp.ones((1, 1)), next_obs=obs[None],
                terminated=jnp.zeros((1, 1), bool), truncated=jnp.zeros((1, 1), bool),
                extras=jax.tree.map(lambda x: x[None], extras),
            )  # fmt: skip
            states[j], metrics = updates[j](states[j], rollout, jax.random.PRNGKey(10 + i))
        latents.append(np.asarray(extras["latent"][0]))
    assert np.isfinite(float(metrics["vae_prior/restore_loss"]))
    np.testing.assert_array_equal(actions[0], actions[1])  # weight 0: the latent is the action
    assert not np.allclose(actions[2], actions[1], atol=1e-3)  # weight 1: decoded actions
    learners = [s.learner.replace(aux=None) for s in states]
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, learners[0], learners[1])))
    # Weight 1: the buffer holds the latents the actor chose, not the decoded actions (the
    # same latents as weight 0, which is plain SAC's normalized actions).
    b = states[2].buffer
    stored = replay_transitions(b.data, b.position, b.size).action
    np.testing.assert_array_equal(stored, np.stack(latents))
    np.testing.assert_array_equal(stored, np.stack(actions[0]) / HIGH)


def test_ddpg_acts_through_a_smaller_latent(demo_file):
    """DDPG (TD3's skeleton with OU noise, a carry): latent size 1 for a 2-D action."""
    agent = agents.make("ddpg", SPEC, **SAC, **{**VAE, "vae_steps": 5}, latent_prior=True,
                        demo_file=demo_file, latent_size=1)  # fmt: skip
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    obs = jnp.zeros((1, 3), jnp.float32)
    act = jax.jit(agent.act, static_argnums=4)
    action, _, extras = act(state, obs, agent.init_carry(1), jax.random.PRNGKey(1), True)
    assert action.shape == (1, 2) and extras["latent"].shape == (1, 1)
    assert np.all((LOW <= action) & (action <= HIGH))
    rollout = Transition(
        obs=obs[None], action=action[None], reward=jnp.ones((1, 1)), next_obs=obs[None],
        terminated=jnp.zeros((1, 1), bool), truncated=jnp.zeros((1, 1), bool),
        extras=jax.tree.map(lambda x: x[None], extras),
    )  # fmt: skip
    state, metrics = jax.jit(agent.update)(state, rollout, jax.random.PRNGKey(2))
    assert state.buffer.data.action.shape[-1] == 1 and np.isfinite(float(metrics["critic_loss"]))


def test_bad_options_are_one_line_errors(demo_file, tmp_path, capsys):
    cases = {
        "latent_prior needs demonstrations": dict(latent_prior=True),
        "latent_size": dict(latent_prior=True, demo_file=demo_file, latent_size=0),
        "for its VAE only": dict(latent_prior=True, demo_file=demo_file, demo_ratio=0.5),
        "latent_size must be the action size 2": dict(
            latent_prior=True, demo_file=demo_file, latent_size=1, prior_weight=0.5
        ),
        "does not exist": dict(latent_prior=True, demo_file=str(tmp_path / "none.npz")),
    }
    for text, options in cases.items():
        with pytest.raises(ConfigError, match=text) as e:
            agents.make("sac", SPEC, **SAC, **options)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="does not take option .latent_prior."):
        agents.make("mbpo", SPEC, latent_prior=True, demo_file=demo_file)
    runs = tmp_path / "runs"
    base = ["--agent", "sac", "--env", "Pendulum", "--logdir", str(runs)]
    for extra, message in [
        (["--agent.latent_prior", "true"], "latent_prior needs demonstrations"),
        (["--agent.latent_size", "0"], "latent_size"),
    ]:
        assert train_main([*base, *extra]) == 2
        one_line_error(capsys, message)
    assert not runs.exists() or not list(runs.iterdir())
