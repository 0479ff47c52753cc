"""V-trace against the paper's sum (eq. 1) written as loops, and its on-policy limit: the
TD(lambda) returns of GAE."""

import numpy as np
import pytest

from jaxrl.ops import gae
from jaxrl.ops.vtrace import vtrace


def reference(log_rhos, r, v, next_v, term, trunc, gamma, lam, rho_bar, c_bar, pg_rho_bar):
    """Espeholt et al. 2018, eq. 1 and section 4.2, per env by explicit sums: ``v_s = V(x_s)
    + sum_{t=s}^{e} gamma^(t-s) (prod_{i=s}^{t-1} c_i) delta_t`` with ``e`` the first
    episode end at or after ``s`` (else the rollout's last step)."""
    steps, envs = r.shape
    rho = np.exp(log_rhos)
    c = lam * np.minimum(c_bar, rho)
    boot = np.where(term, 0.0, next_v)
    delta = np.minimum(rho_bar, rho) * (r + gamma * boot - v)
    vs = np.zeros_like(v)
    adv = np.zeros_like(v)
    for n in range(envs):
        for s in range(steps):
            total, weight = 0.0, 1.0
            for t in range(s, steps):
                total += weight * delta[t, n]
                if term[t, n] or trunc[t, n]:
                    break
                weight *= gamma * c[t, n]
            vs[s, n] = v[s, n] + total
        for s in range(steps):
            ended = term[s, n] or trunc[s, n] or s == steps - 1
            next_target = boot[s, n] if ended else vs[s + 1, n]
            adv[s, n] = min(pg_rho_bar, rho[s, n]) * (r[s, n] + gamma * next_target - v[s, n])
    return vs, adv


def rollout(seed, steps=12, envs=3):
    rng = np.random.default_rng(seed)
    term = rng.random((steps, envs)) < 0.15
    trunc = ~term & (rng.random((steps, envs)) < 0.1)
    return dict(
        log_rhos=rng.normal(size=(steps, envs)) * 0.7,
        rewards=rng.normal(size=(steps, envs)),
        values=rng.normal(size=(steps, envs)),
        next_values=rng.normal(size=(steps, envs)),
        terminated=term,
        truncated=trunc,
    )


@pytest.mark.parametrize(
    "gamma,lam,rho_bar,c_bar,pg_rho_bar",
    [(0.99, 1.0, 1.0, 1.0, 1.0), (0.9, 0.8, 2.0, 0.5, 1.5), (0.97, 0.95, 0.7, 1.0, 0.7)],
)
def test_vtrace_matches_the_papers_sums(gamma, lam, rho_bar, c_bar, pg_rho_bar):
    data = rollout(0)
    out = vtrace(**data, discount=gamma, gae_lambda=lam, rho_bar=rho_bar, c_bar=c_bar,
                 pg_rho_bar=pg_rho_bar)  # fmt: skip
    vs, adv = reference(*data.values(), gamma, lam, rho_bar, c_bar, pg_rho_bar)
    np.testing.assert_allclose(out.vs, vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages, adv, rtol=1e-5, atol=1e-5)


def test_on_policy_vtrace_is_td_lambda():
    data = rollout(1)
    data["log_rhos"] = np.zeros_like(data["log_rhos"])
    # Consistent values: inside an episode the next value is the next step's value.
    done = data["terminated"] | data["truncated"]
    inside = ~done[:-1]
    data["next_values"][:-1][inside] = data["values"][1:][inside]
    out = vtrace(**data, discount=0.95, gae_lambda=0.9)
    args = [data[k] for k in ("rewards", "values", "next_values", "terminated", "truncated")]
    advantages, returns = gae(*args, 0.95, 0.9)
    np.testing.assert_allclose(out.vs, returns, rtol=1e-5, atol=1e-5)
    one = vtrace(**data, discount=0.95, gae_lambda=1.0)
    advantages, _ = gae(*args, 0.95, 1.0)
    np.testing.assert_allclose(one.pg_advantages, advantages, rtol=1e-5, atol=1e-5)
