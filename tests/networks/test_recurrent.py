"""The recurrent actor-critic (networks/recurrent.py) against a NumPy LSTM, and ``unroll``'s
carry resets against a Python loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.networks.recurrent import RecurrentActorCritic, initial_carry, unroll

H, N, T, D_OBS, A = 5, 3, 6, 4, 2


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_lstm(p, c, h, x):
    """The module docstring's equations, gate by gate (Flax names: i, f, g, o)."""

    def gate(name):
        return x @ p[f"i{name}"]["kernel"] + h @ p[f"h{name}"]["kernel"] + p[f"h{name}"]["bias"]

    i, f, o = _sigmoid(gate("i")), _sigmoid(gate("f")), _sigmoid(gate("o"))
    c = f * c + i * np.tanh(gate("g"))
    return c, o * np.tanh(c)


def _np_step(params, carry, obs, shared):
    """One step of the network in NumPy: tanh MLP torso (8), LSTM, heads."""
    p = jax.tree.map(np.asarray, params["params"])

    def side(torso, lstm, c, h):
        x = np.tanh(obs @ p[torso]["Dense_0"]["kernel"] + p[torso]["Dense_0"]["bias"])
        return _np_lstm(p[lstm], c, h, x)

    c, h = side("actor_torso", "actor_lstm", *carry["actor"])
    out = {"actor": (c, h)}
    logits = h @ p["policy_head"]["kernel"] + p["policy_head"]["bias"]
    if not shared:
        out["critic"] = side("critic_torso", "critic_lstm", *carry["critic"])
        h = out["critic"][1]
    value = (h @ p["value_head"]["kernel"] + p["value_head"]["bias"])[:, 0]
    return out, logits, value


@pytest.fixture(scope="module", params=[True, False], ids=["shared", "separate"])
def net(request):
    shared = request.param
    network = RecurrentActorCritic(
        action_dim=A, discrete=True, hidden_sizes=(8,), shared=shared, lstm_size=H
    )
    carry0 = initial_carry(N, H, shared)
    params = network.init(jax.random.PRNGKey(0), carry0, jnp.zeros((N, D_OBS)))
    obs = jax.random.normal(jax.random.PRNGKey(1), (T, N, D_OBS))
    starts = np.zeros((T, N), bool)
    starts[2, 0] = starts[4, 1] = starts[3, 2] = True
    got = jax.jit(lambda p, c, o, s: unroll(network, p, c, carry0, o, s))(
        params, carry0, obs, jnp.asarray(starts)
    )
    return shared, network, params, carry0, np.asarray(obs), starts, got


def test_one_step_matches_numpy(net):
    shared, network, params, carry0, obs, _, _ = net
    carry = jax.tree.map(lambda c: c + 0.3, carry0)  # a non-zero carry
    new, logits, value = network.apply(params, carry, obs[0])
    ref_carry, ref_logits, ref_value = _np_step(
        params, jax.tree.map(np.asarray, carry), obs[0], shared
    )
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-6)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), new, ref_carry
    )
    assert set(new) == ({"actor"} if shared else {"actor", "critic"})
    np.testing.assert_allclose(network.apply(params, carry, obs[0], method="value"), value)


def test_unroll_resets_where_an_episode_starts(net):
    """``unroll`` equals a loop that sets an env's carry to zeros where it starts an
    episode; the same loop without the resets gives other values (the reset matters)."""
    shared, _, params, carry0, obs, starts, (logits, value, carries) = net
    np_carry0 = jax.tree.map(np.asarray, carry0)
    for reset in (True, False):
        carry, ref_logits, ref_values = np_carry0, [], []
        for t in range(T):
            if reset:
                carry = jax.tree.map(
                    lambda c, z, t=t: np.where(starts[t][:, None], z, c), carry, np_carry0
                )
            carry, lg, v = _np_step(params, carry, obs[t], shared)
            ref_logits.append(lg)
            ref_values.append(v)
            if reset:
                got = jax.tree.map(lambda c, t=t: np.asarray(c[t]), carries)
                jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5), got, carry)
        close = np.allclose(value, np.stack(ref_values), rtol=1e-5, atol=1e-6)
        assert close == reset
        if reset:
            np.testing.assert_allclose(logits, np.stack(ref_logits), rtol=1e-5, atol=1e-6)
    # before the first reset of each env, the values are the unreset loop's
    np.testing.assert_allclose(value[:2], np.stack(ref_values)[:2], rtol=1e-5, atol=1e-6)
