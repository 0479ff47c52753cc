"""jaxrl's ops against small PyTorch reference implementations, as a user moving from
RLHive, machin or Emote (all PyTorch) would write them: C51's projection and loss, the
(double) Q-learning TD error and Huber loss, GAE, PPO's clipped surrogate, SAC's
squashed-Gaussian log-density (``torch.distributions`` with ``TanhTransform``), and the
sum tree's sampling (``torch.searchsorted`` over cumulative priorities).

Runs where PyTorch is installed (the dev extra pins its CPU build; ``pip install
'jaxrl[torch]'`` otherwise); skipped where it is not. PyTorch is imported by the module
fixture ``torch``, not at collection (4 s that the pytest-xdist worker which does not run
this file would spend).
"""

from importlib.util import find_spec

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.buffers import sum_tree
from jaxrl.ops import huber_loss
from jaxrl.ops.distributional import categorical_projection, categorical_td_loss
from jaxrl.ops.policy_gradient import ppo_clip_loss
from jaxrl.ops.q_learning import q_learning_td_error
from jaxrl.ops.returns import gae
from jaxrl.ops.squashed_gaussian import squashed_gaussian_log_prob

pytestmark = pytest.mark.skipif(find_spec("torch") is None, reason="torch not installed")
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def torch():
    """PyTorch, with float64 its default dtype while this module's tests run."""
    import torch

    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield torch
    torch.set_default_dtype(default)


def t(x):
    import torch

    return torch.as_tensor(np.asarray(x, np.float64))


def test_c51_projection_and_loss(torch):
    """Bellemare et al. 2017, Algorithm 1, as PyTorch C51 code writes it (index_add_ of
    the lower and upper shares; all mass to l where l == u)."""
    b, k, v_min, v_max = 6, 11, -5.0, 5.0
    support = np.linspace(v_min, v_max, k)
    rewards = RNG.normal(size=(b, 1)) * 3
    target_support = rewards + 0.9 * support[None]
    target_support[0] = support  # atoms exactly on the support: l == u
    probs = RNG.dirichlet(np.ones(k), size=b)
    logits = RNG.normal(size=(b, k))

    tz = t(target_support).clamp(v_min, v_max)
    pos = (tz - v_min) / ((v_max - v_min) / (k - 1))
    low, up = pos.floor().long(), pos.ceil().long()
    p = t(probs)
    projected = torch.zeros(b, k)
    offset = (torch.arange(b) * k)[:, None]
    projected.view(-1).index_add_(0, (low + offset).view(-1), (p * (up - pos)).view(-1))
    projected.view(-1).index_add_(0, (up + offset).view(-1), (p * (pos - low)).view(-1))
    projected.view(-1).index_add_(0, (low + offset).view(-1), (p * (up == low)).view(-1))
    loss = -(projected * torch.log_softmax(t(logits), -1)).sum(-1)

    ours = categorical_projection(jnp.asarray(support), target_support, probs)
    np.testing.assert_allclose(ours, projected.numpy(), rtol=1e-5, atol=1e-6)
    ours_loss = categorical_td_loss(logits, projected.numpy())
    np.testing.assert_allclose(ours_loss, loss.numpy(), rtol=1e-5)


@pytest.mark.parametrize("double", [False, True])
def test_q_learning_td_error_and_huber(double, torch):
    b, a = 8, 4
    q_taken, reward, disc = RNG.normal(size=b), RNG.normal(size=b), RNG.uniform(0, 1, b)
    next_target, next_online = RNG.normal(size=(b, a)), RNG.normal(size=(b, a))
    selector = t(next_online) if double else t(next_target)
    next_value = t(next_target).gather(1, selector.argmax(1, keepdim=True)).squeeze(1)
    delta = t(q_taken) - (t(reward) + t(disc) * next_value)
    ours = q_learning_td_error(q_taken, next_target, reward, disc, next_online if double else None)
    np.testing.assert_allclose(ours, delta.numpy(), rtol=1e-5, atol=1e-6)
    x = 3 * RNG.normal(size=50)
    want = torch.nn.functional.huber_loss(t(x), torch.zeros(50), reduction="none", delta=1.5)
    np.testing.assert_allclose(huber_loss(x, 1.5), want.numpy(), rtol=1e-6)


def test_gae_with_terminations_and_truncations(torch):
    """CleanRL's backward loop, with the true next value of every step (so a truncated
    step bootstraps and a terminated one does not)."""
    steps, envs, gamma, lam = 9, 3, 0.97, 0.9
    rewards, values = RNG.normal(size=(steps, envs)), RNG.normal(size=(steps, envs))
    next_values = RNG.normal(size=(steps, envs))
    terminated = RNG.random((steps, envs)) < 0.2
    truncated = ~terminated & (RNG.random((steps, envs)) < 0.2)
    advantages = torch.zeros(steps, envs)
    last = torch.zeros(envs)
    for i in reversed(range(steps)):
        not_term = 1.0 - t(terminated[i])
        not_done = 1.0 - t(terminated[i] | truncated[i])
        delta = t(rewards[i]) + gamma * t(next_values[i]) * not_term - t(values[i])
        last = delta + gamma * lam * not_done * last
        advantages[i] = last
    ours_adv, ours_ret = gae(rewards, values, next_values, terminated, truncated, gamma, lam)
    np.testing.assert_allclose(ours_adv, advantages.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours_ret, (advantages + t(values)).numpy(), rtol=1e-5, atol=1e-5)


def test_ppo_clip_loss_as_cleanrl(torch):
    n, clip = 64, 0.2
    new, old = RNG.normal(size=n) * 0.3, RNG.normal(size=n) * 0.3
    adv = RNG.normal(size=n)
    logratio = t(new) - t(old)
    ratio = logratio.exp()
    pg_loss = torch.max(-t(adv) * ratio, -t(adv) * ratio.clamp(1 - clip, 1 + clip)).mean()
    approx_kl = ((ratio - 1) - logratio).mean()
    clipfrac = ((ratio - 1).abs() > clip).double().mean()
    loss, kl, frac = ppo_clip_loss(jnp.asarray(new), jnp.asarray(old), jnp.asarray(adv), clip)
    np.testing.assert_allclose(loss, pg_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(kl, approx_kl.item(), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(frac, clipfrac.item())


def test_squashed_gaussian_log_prob_as_torch_distributions(torch):
    from torch.distributions import Independent, Normal, TransformedDistribution
    from torch.distributions.transforms import AffineTransform, TanhTransform

    b, a = 16, 3
    mean, log_std = RNG.normal(size=(b, a)), RNG.normal(size=(b, a)) * 0.5 - 0.5
    u = mean + np.exp(log_std) * RNG.normal(size=(b, a))
    low, high = np.array([-2.0, -1.0, 0.0]), np.array([2.0, 1.0, 3.0])
    dist = TransformedDistribution(
        Independent(Normal(t(mean), t(log_std).exp()), 1),
        [TanhTransform(), AffineTransform(t((high + low) / 2), t((high - low) / 2))],
    )
    action = (high + low) / 2 + (high - low) / 2 * np.tanh(u)
    want = dist.log_prob(t(action)).numpy()
    ours = squashed_gaussian_log_prob(u, mean, log_std, low, high)
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4)


def test_sum_tree_draws_what_searchsorted_draws(torch):
    """Stratified targets ``u_b = (b + U_b) / B * T``; leaf ``i`` with ``cumsum_{<i} <= u <
    cumsum_{<=i}``: ``torch.searchsorted(cumsum, u, right=True)``."""
    capacity, batch = 100, 64
    priorities = RNG.gamma(0.5, size=capacity).astype(np.float32)
    priorities[RNG.random(capacity) < 0.2] = 0.0
    tree = sum_tree.update(sum_tree.init(capacity), jnp.arange(capacity), priorities)
    key = jax.random.PRNGKey(3)
    indices, drawn = sum_tree.sample(tree, key, batch)
    uniform = np.asarray(jax.random.uniform(key, (batch,), jnp.float32), np.float64)
    cumsum = torch.cumsum(t(priorities), 0)
    targets = (torch.arange(batch) + t(uniform)) / batch * cumsum[-1]
    want = torch.searchsorted(cumsum, targets, right=True).numpy()
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(drawn, priorities[want])
    assert (priorities[np.asarray(indices)] > 0).all()
