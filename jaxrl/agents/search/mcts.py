"""The search inside ``act``: mctx's tree search over the game's own rules.

The tree's root is the position of ``obs`` rebuilt as pgx's state (``envs.games.
pgx_state``) and each simulation's new node is pgx's ``step`` of its parent (AlphaZero
knows the rules; Silver et al. 2018). ``recurrent_fn`` returns the mover's reward, a
discount of -1 (the next node's value is the other player's: a two-player zero-sum game;
0 once the game is over, where the value is 0 too) and the network's priors, with the
illegal moves' logits at the lowest float (the root's illegal moves are also mctx's
``invalid_actions``, so no search ever picks one).

Two search policies (``SEARCHES``: ``(options, explore) -> SearchPolicy``, the mctx
policy that ``search`` calls, its options and the action it picks):

* ``"puct"``: AlphaZero's PUCT search (``mctx.muzero_policy``): Dirichlet noise at the
  root while training (fraction 0.25, alpha ``dirichlet_alpha``), an action sampled from
  the visit counts at ``temperature``; greedy: no noise, the most visited action. The
  policy target is the visit distribution.
* ``"gumbel"``: Gumbel MuZero's search (``mctx.gumbel_muzero_policy``, Danihelka et al.
  2022): Gumbel-top-k sampling of ``max_considered`` root actions and sequential
  halving; greedy: Gumbel noise 0. The policy target is the improved policy
  ``softmax(logits + sigma(completed Q))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

Network = Callable[
    [Any, jax.Array], tuple[jax.Array, jax.Array]
]  # (params, obs) -> (logits, value)


class SearchOptions(NamedTuple):
    num_simulations: int
    dirichlet_alpha: float
    dirichlet_fraction: float
    temperature: float
    max_considered: int


def masked_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """``logits [B, A]`` shifted to a maximum of 0, the lowest float where ``mask`` is
    False (a prior of 0 on illegal moves)."""
    logits = logits - logits.max(-1, keepdims=True)
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


def make_recurrent_fn(env: Any, network: Network) -> Callable:
    """mctx's ``recurrent_fn(params, key, action [B], state) -> (RecurrentFnOutput,
    state)`` stepping pgx's ``env`` (module docstring)."""
    import mctx

    step = jax.vmap(env.step)

    def recurrent_fn(params: Any, key: jax.Array, action: jax.Array, state: Any):
        del key
        mover = state.current_player
        state = step(state, action)
        logits, value = network(params, state.observation.astype(jnp.float32))
        over = state.terminated
        reward = jnp.take_along_axis(state.rewards, mover[:, None], 1)[:, 0]
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(over, 0.0, -1.0),
            prior_logits=masked_logits(logits, state.legal_action_mask),
            value=jnp.where(over, 0.0, value),
        )
        return output, state

    return recurrent_fn


class SearchPolicy(NamedTuple):
    """One of mctx's search policies with its options: ``policy(params, key, root,
    recurrent_fn, num_simulations, invalid_actions=..., **options)``, and ``pick(out)
    -> action [B]`` from its output."""

    policy: Callable[..., Any]
    options: dict[str, Any]
    pick: Callable[[Any], jax.Array]


def puct(o: SearchOptions, explore: bool) -> SearchPolicy:
    """AlphaZero's PUCT search (module docstring)."""
    import mctx

    options = dict(
        dirichlet_fraction=o.dirichlet_fraction if explore else 0.0,
        dirichlet_alpha=o.dirichlet_alpha,
        temperature=o.temperature,
    )
    if explore:
        return SearchPolicy(mctx.muzero_policy, options, lambda out: out.action)
    return SearchPolicy(mctx.muzero_policy, options, lambda out: jnp.argmax(out.action_weights, -1))


def gumbel(o: SearchOptions, explore: bool) -> SearchPolicy:
    """Gumbel MuZero's search (module docstring)."""
    import mctx

    options = dict(
        max_num_considered_actions=o.max_considered, gumbel_scale=1.0 if explore else 0.0
    )
    return SearchPolicy(mctx.gumbel_muzero_policy, options, lambda out: out.action)


SEARCHES = {"puct": puct, "gumbel": gumbel}


def search(
    o: SearchOptions,
    kind: str,
    env: Any,
    network: Network,
    params: Any,
    root_state: Any,
    obs: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    explore: bool,
) -> tuple[jax.Array, jax.Array]:
    """``(action [B] int32, policy [B, A] float32)``: the search ``kind`` from the
    positions ``root_state`` (pgx's batched state of ``obs [B, ...]``, legal moves
    ``mask [B, A]``)."""
    import mctx

    logits, value = network(params, obs)
    root = mctx.RootFnOutput(
        prior_logits=masked_logits(logits, mask), value=value, embedding=root_state
    )
    recurrent_fn = make_recurrent_fn(env, network)
    policy, options, pick = SEARCHES[kind](o, explore)
    out = policy(
        params, key, root, recurrent_fn, o.num_simulations, invalid_actions=~mask, **options
    )
    return pick(out).astype(jnp.int32), out.action_weights
