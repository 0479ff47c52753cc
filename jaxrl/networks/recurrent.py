r"""A recurrent actor-critic: torso -> LSTM -> policy and value heads.

IMPALA's network (Espeholt et al. 2018, Figure 3, both the shallow and the deep model):
the torso's features go through an LSTM of 256 units whose output feeds the policy and
the value heads. The paper also feeds the previous action and reward into the LSTM;
this network takes the observation alone. ``RecurrentActorCritic`` is
``policies.ActorCritic`` (the same torsos, heads and initialization) with one LSTM after
each torso: ``shared=True`` (the paper's network) has one torso and one LSTM, ``shared=False``
gives the actor and the critic a torso and an LSTM each.

The LSTM (Hochreiter & Schmidhuber 1997, with forget gates; Flax's ``LSTMCell``) maps
``(c, h)`` and an input ``x`` to

.. math::
    i, f, o = \sigma(W_{i,f,o} x + U_{i,f,o} h + b_{i,f,o}),\quad
    g = \tanh(W_g x + U_g h + b_g),\quad c' = f c + i g,\quad h' = o \tanh(c'),

and outputs ``h'``. Input kernels use Flax's LeCun normal, recurrent kernels an
orthogonal matrix (``initializers.orthogonal``, safe under ``vmap`` on XLA:CPU), biases 0.

The carry is a dict ``{"actor": (c, h)}`` (plus ``"critic"`` when not shared), each leaf
``[N, lstm_size]`` float32, zeros at an episode's start (``initial_carry``).

``MemoryActorCritic`` is the same network with any memory cell of ``networks/memory.py``
(LSTM, GRU, minGRU) after each torso, and ``unroll`` as a method that runs the torsos
and heads on a whole sequence at once and the cell's own ``scan`` between them (recurrent
PPO, ``agents/on_policy/sequence.py``).
"""

from __future__ import annotations

from typing import Any, cast

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.networks.initializers import orthogonal
from jaxrl.networks.memory import Memory, MemoryCell
from jaxrl.networks.policies import ActorCritic
from jaxrl.types import reset_carry

Array = jax.Array


def initial_carry(num_envs: int, lstm_size: int, shared: bool) -> dict[str, tuple[Array, Array]]:
    """The carry at an episode's start: ``(c, h)`` zeros ``[num_envs, lstm_size]`` float32
    for the actor's LSTM and, when not ``shared``, the critic's."""
    zeros = lambda: (jnp.zeros((num_envs, lstm_size)), jnp.zeros((num_envs, lstm_size)))
    return {"actor": zeros()} if shared else {"actor": zeros(), "critic": zeros()}


class _MemoryAfterTorso(ActorCritic):
    """``ActorCritic`` with a memory layer ``(carry, x) -> (carry, features)`` after each
    torso, the layers given by ``memories()``: ``(actor's, critic's or None if shared)``.

    ``__call__(carry, obs [N, *obs_shape]) -> (carry, dist, value [N])`` takes one step;
    ``value(carry, obs) -> value [N]`` runs the critic's side only (the carry it would
    produce is dropped). Any leading batch shape works as long as ``carry``'s matches.
    """

    def memories(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _dist(self, features: Array):
        out = self.policy_head(features)
        return out if self.discrete else (out, self.log_std)

    # The carry comes first: a recurrent network is never called where an ActorCritic is.
    def __call__(self, carry: dict, obs: Array):  # type: ignore[override]
        actor_memory, critic_memory = self.memories()
        actor, features = actor_memory(carry["actor"], self.actor_torso(obs))
        if self.shared:
            return {"actor": actor}, self._dist(features), self.value_head(features)[..., 0]
        critic, critic_features = critic_memory(carry["critic"], self.critic_torso(obs))
        value = self.value_head(critic_features)[..., 0]
        return {"actor": actor, "critic": critic}, self._dist(features), value

    def value(self, carry: dict, obs: Array) -> Array:
        actor_memory, critic_memory = self.memories()
        if self.shared:
            _, features = actor_memory(carry["actor"], self.actor_torso(obs))
        else:
            _, features = critic_memory(carry["critic"], self.critic_torso(obs))
        return self.value_head(features)[..., 0]


class RecurrentActorCritic(_MemoryAfterTorso):
    """``ActorCritic`` with an LSTM of ``lstm_size`` units after each torso (``__call__``
    and ``value`` as ``_MemoryAfterTorso``'s)."""

    lstm_size: int = 256

    def setup(self):
        super().setup()
        cell = lambda: nn.LSTMCell(self.lstm_size, recurrent_kernel_init=orthogonal())
        self.actor_lstm = cell()
        if not self.shared:
            self.critic_lstm = cell()

    def memories(self) -> tuple[Any, Any]:
        return self.actor_lstm, None if self.shared else self.critic_lstm


def unroll(
    network: RecurrentActorCritic, params: Any, carry: Any, initial: Any, obs: Array, starts: Array
) -> tuple[Any, Array, Any]:
    """The network over a rollout, as acting ran it: ``(dist [T, N, ...], value [T, N],
    carries)``, ``carries`` the carry after each step (leaves ``[T, N, lstm_size]``).

    ``carry``: the carry before step 0; ``obs`` ``[T, N, *obs_shape]`` (the main array);
    ``starts`` ``[T, N]`` bool: an episode starts at step ``t`` (the previous step ended
    one), where the carry is reset to ``initial`` (``[N, ...]``) before the step, as the
    runners reset it after an episode's last step (``types.reset_carry``)."""

    def step(carry: Any, inputs: tuple[Array, Array]):
        o, start = inputs
        out = network.apply(params, reset_carry(carry, initial, start), o)
        carry, dist, value = cast(tuple[Any, Any, Array], out)
        return carry, (dist, value, carry)

    _, (dist, value, carries) = jax.lax.scan(step, carry, (obs, starts))
    return dist, value, carries


def memory_carry(cell: MemoryCell, num_envs: int, shared: bool) -> dict[str, Any]:
    """The carry of a ``MemoryActorCritic`` at an episode's start: ``cell.init_carry``
    ``[num_envs, ...]`` for the actor's cell and, when not ``shared``, the critic's."""
    zeros = lambda: cell.init_carry((num_envs,))
    return {"actor": zeros()} if shared else {"actor": zeros(), "critic": zeros()}


class MemoryActorCritic(_MemoryAfterTorso):
    """``ActorCritic`` with the memory cell ``cell`` after each torso (``Memory`` layers
    ``actor_memory`` and, when not shared, ``critic_memory``).

    ``__call__(carry, obs [N, *obs_shape]) -> (carry, dist, value [N])`` takes one step;
    ``value(carry, obs) -> value [N]`` the critic's side only; ``unroll(carry [N], obs
    [T, N, *obs_shape], starts [T, N]) -> (carries, dist [T, N, ...], value [T, N])`` a
    sequence, the carry reset to zeros before step ``t`` where ``starts[t]``
    (``MemoryCell.scan``); ``carries`` the carry after each step (leaves ``[T, N, ...]``).
    """

    cell: MemoryCell | None = None

    def setup(self):
        super().setup()
        if self.cell is None:
            raise ValueError("MemoryActorCritic needs a cell (networks.memory.make_cell)")
        self.actor_memory = Memory(self.cell)
        if not self.shared:
            self.critic_memory = Memory(self.cell)

    def memories(self) -> tuple[Any, Any]:
        return self.actor_memory, None if self.shared else self.critic_memory

    def unroll(self, carry: dict, obs: Array, starts: Array):
        T, N = starts.shape

        def encode(torso) -> Array:  # the torso on [T * N] samples, back to [T, N, F]
            features = torso(obs.reshape(T * N, *obs.shape[2:]))
            return features.reshape(T, N, *features.shape[1:])

        actor, features = self.actor_memory(carry["actor"], encode(self.actor_torso), starts)
        carries = {"actor": actor}
        if not self.shared:
            critic, critic_features = self.critic_memory(
                carry["critic"], encode(self.critic_torso), starts
            )
            carries["critic"] = critic
        else:
            critic_features = features
        return carries, self._dist(features), self.value_head(critic_features)[..., 0]


class MemoryQNetwork(nn.Module):
    """A torso, the memory cell ``cell`` (a ``Memory`` layer, ``"memory"``) and a Q
    head: R2D2's network (Kapturowski et al. 2019, with the cell of one's choice).

    ``__call__(carry, obs [N, *obs_shape]) -> (carry, q [N, A])`` takes one step;
    ``unroll(carry [N], obs [T, N, *obs_shape], starts [T, N]) -> (carries, q [T, N, A])``
    a sequence, the carry reset to zeros before step ``t`` where ``starts[t]``
    (``MemoryCell.scan``)."""

    torso: nn.Module
    cell: MemoryCell
    head: nn.Module

    def setup(self):
        self.memory = Memory(self.cell)

    def __call__(self, carry: Any, obs: Array):
        carry, features = self.memory(carry, self.torso(obs))
        return carry, self.head(features)

    def unroll(self, carry: Any, obs: Array, starts: Array):
        T, N = starts.shape
        features = self.torso(obs.reshape(T * N, *obs.shape[2:]))
        carries, outputs = self.memory(carry, features.reshape(T, N, -1), starts)
        return carries, self.head(outputs)
