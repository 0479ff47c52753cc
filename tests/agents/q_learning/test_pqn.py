"""PQN: the reported loss of one update equals a NumPy computation of Q(lambda) targets
from the network's outputs (bootstrapping only from legal actions); acting picks legal
actions; LayerNorm is in the network when asked; the update changes the params."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents
from jaxrl.agents.q_learning.pqn import PQNConfig, make_network
from jaxrl.types import ArraySpec, ConfigError, Discrete, EnvSpec, Transition
from tests.references import q_lambda_returns

A, T, N = 3, 4, 2
SPEC = EnvSpec(
    "Masked", (5,), "float32", Discrete(A), N, 10, (ArraySpec("action_mask", (A,), "bool"),)
)
OPTIONS = dict(hidden_sizes=(16,), num_minibatches=1, update_epochs=1, gamma=0.9, q_lambda=0.6,
               reward_scale=0.5, lr=1e-2)  # fmt: skip


def test_update_loss_matches_numpy_q_lambda_and_acting_is_legal():
    agent = agents.make("pqn", SPEC, **OPTIONS)
    state = jax.jit(agent.init)(jax.random.PRNGKey(0))
    assert "LayerNorm_0" in state.params["params"]["torso"]
    rng = np.random.default_rng(0)
    legal = rng.integers(0, A, (T, N))
    obs = rng.normal(size=(T, N, 5)).astype(np.float32)
    next_obs = rng.normal(size=(T, N, 5)).astype(np.float32)
    term, trunc = np.zeros((T, N), bool), np.zeros((T, N), bool)
    term[1, 0], trunc[2, 1] = True, True
    data = Transition(
        obs={"obs": jnp.asarray(obs), "action_mask": jnp.ones((T, N, A), bool)},
        action=jnp.asarray(rng.integers(0, A, (T, N)), jnp.int32),
        reward=jnp.asarray(rng.normal(size=(T, N)), jnp.float32),
        next_obs={"obs": jnp.asarray(next_obs), "action_mask": jnp.asarray(np.eye(A, dtype=bool)[legal])},  # noqa: E501
        terminated=jnp.asarray(term),
        truncated=jnp.asarray(trunc),
        extras={},
    )  # fmt: skip
    new, metrics = jax.jit(agent.update)(state, data, jax.random.PRNGKey(1))

    net = make_network(SPEC, PQNConfig(**OPTIONS))
    q = lambda o: np.asarray(net.apply(state.params, jnp.asarray(o)))
    next_value = np.take_along_axis(q(next_obs), legal[..., None], -1)[..., 0]  # legal only
    G = q_lambda_returns(0.5 * np.asarray(data.reward), next_value, term, trunc, 0.9, 0.6)
    q_taken = np.take_along_axis(q(obs), np.asarray(data.action)[..., None], -1)[..., 0]
    np.testing.assert_allclose(metrics["loss"], 0.5 * np.mean((q_taken - G) ** 2), rtol=1e-4)
    assert int(new.step) == T * N and int(new.updates) == 1
    assert not np.allclose(q(obs), np.asarray(net.apply(new.params, jnp.asarray(obs))))

    act = jax.jit(agent.act, static_argnums=4)
    one = {"obs": jnp.asarray(obs[0]), "action_mask": jnp.asarray(np.eye(A, dtype=bool)[legal[0]])}
    for seed in range(4):
        for explore in (True, False):
            action, _, _ = act(new, one, (), jax.random.PRNGKey(seed), explore)
            np.testing.assert_array_equal(action, legal[0])


def test_layer_norm_is_optional():
    params = make_network(SPEC, PQNConfig(hidden_sizes=(4,), layer_norm=False)).init(
        jax.random.PRNGKey(0), jnp.zeros((1, 5))
    )
    assert "LayerNorm_0" not in params["params"]["torso"]


def test_layer_norm_follows_the_conv_torsos():
    image = EnvSpec("Img", (10, 10, 4), "float32", Discrete(A), N, 10)
    obs = jnp.zeros((1, 10, 10, 4))
    for layer_norm, names in ((True, {"LayerNorm_0", "LayerNorm_1"}), (False, set())):
        cfg = PQNConfig(hidden_sizes=(4,), layer_norm=layer_norm)
        torso = make_network(image, cfg).init(jax.random.PRNGKey(0), obs)["params"]["torso"]
        assert {k for k in torso if k.startswith("LayerNorm")} == names
        assert torso["Conv_0"]["kernel"].shape == (3, 3, 4, 16)
    with pytest.raises(ConfigError, match="layer_norm"):
        agents.make("pqn", image, torso="impala")
    agents.make("pqn", image, torso="impala", layer_norm=False)  # the IMPALA CNN without
