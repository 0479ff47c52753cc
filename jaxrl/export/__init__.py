"""A trained agent's greedy policy as a file that runs without jaxrl: StableHLO or ONNX.

``python -m jaxrl.export RUN --format stablehlo|onnx`` (see :mod:`jaxrl.export.__main__`)
restores a run and writes :func:`greedy_policy`, the function

    ``(obs, *carry) -> (action, *carry)`` = ``agent.act(state, obs, carry, key, explore=False)``

with the agent's parameters inside it and its evaluation epsilon set to 0 (the greedy
action: argmax of the Q-values, the mode of a categorical policy, the mean of a Gaussian
one, squashed as the agent squashes it). Preprocessing that belongs to the agent (the
``/255`` of image torsos, observation normalization statistics) is inside; the
environment's own (frame stacking, resizing) is not.

Inputs and outputs are flat and named: ``obs`` (or, for a dict observation, one input per
key: ``obs``, ``action_mask``, ...), then ``carry_0, carry_1, ...`` for an agent that keeps
a per-env carry (a recurrent state; DDPG's exploration noise, which greedy acting leaves
as it is); outputs ``action``, then ``carry_0_out, ...``.

* :func:`to_stablehlo`: ``jax.export`` with a symbolic batch size; the bytes reload with
  ``jax.export.deserialize(data).call(*inputs)`` in any program that has jax.
* :func:`to_onnx`: :mod:`jaxrl.export.onnx_graph`, for a fixed batch size; runs in
  onnxruntime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from jaxrl.evaluate import with_epsilon
from jaxrl.types import Agent, EnvSpec

FORMATS = ("stablehlo", "onnx")


def input_names(spec: EnvSpec, carry: Any) -> list[str]:
    """The exported function's input names: observation keys, then ``carry_i``."""
    obs_names = ["obs"] if not spec.obs_extras else ["obs", *(e.name for e in spec.obs_extras)]
    return obs_names + [f"carry_{i}" for i in range(len(jax.tree.leaves(carry)))]


def greedy_policy(
    agent: Agent, agent_state: Any, spec: EnvSpec, batch_size: int
) -> tuple[Callable[..., tuple[jax.Array, ...]], dict[str, jax.ShapeDtypeStruct]]:
    """``(fn, inputs)``: ``fn(**inputs) -> (action, *carry)``, the greedy act with the
    state inside, and ``{name: ShapeDtypeStruct}`` of its inputs for ``batch_size`` envs.
    """
    if hasattr(getattr(agent_state, "hparams", None), "eval_epsilon"):
        agent_state = with_epsilon(agent_state, 0.0)
    carry0 = agent.init_carry(batch_size)
    carry_leaves, carry_tree = jax.tree.flatten(carry0)
    names = input_names(spec, carry0)
    obs_names = names[: len(names) - len(carry_leaves)]
    key = jax.random.PRNGKey(0)

    def fn(**inputs: jax.Array) -> tuple[jax.Array, ...]:
        obs = inputs["obs"] if len(obs_names) == 1 else {k: inputs[k] for k in obs_names}
        carry_in = [inputs[f"carry_{i}"] for i in range(len(carry_leaves))]
        carry = jax.tree.unflatten(carry_tree, carry_in)
        action, carry, _ = agent.act(agent_state, obs, carry, key, False)
        return (action, *jax.tree.leaves(carry))

    obs_spec = spec.obs_spec
    obs_leaves = [obs_spec] if len(obs_names) == 1 else [obs_spec[k] for k in obs_names]
    inputs = {
        name: jax.ShapeDtypeStruct((batch_size, *leaf.shape), leaf.dtype)
        for name, leaf in zip(obs_names, obs_leaves, strict=True)
    }
    for i, leaf in enumerate(carry_leaves):
        inputs[f"carry_{i}"] = jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)
    return fn, inputs


def output_names(inputs: dict[str, Any]) -> list[str]:
    """``action``, then ``carry_i_out`` for each carry input."""
    return ["action", *(f"{n}_out" for n in inputs if n.startswith("carry_"))]


def to_stablehlo(fn: Callable[..., Any], inputs: dict[str, jax.ShapeDtypeStruct]) -> bytes:
    """``jax.export`` of ``fn`` (positional inputs in the order of ``inputs``) with the
    leading batch axis symbolic: serialized bytes for ``jax.export.deserialize``."""
    names = list(inputs)
    (batch,) = jax.export.symbolic_shape("batch")
    specs = [jax.ShapeDtypeStruct((batch, *s.shape[1:]), s.dtype) for s in inputs.values()]
    flat = jax.jit(lambda *a: fn(**dict(zip(names, a, strict=True))))
    return bytes(jax.export.export(flat)(*specs).serialize())


def to_onnx(fn: Callable[..., Any], inputs: dict[str, jax.ShapeDtypeStruct]) -> Any:
    """An ``onnx.ModelProto`` of ``fn`` for the batch size of ``inputs``."""
    from jaxrl.export.onnx_graph import to_onnx as graph_to_onnx

    return graph_to_onnx(fn, inputs, output_names(inputs))


def policy_file(agent: Any, agent_state: Any, spec: EnvSpec, format: str, batch: int) -> bytes:
    """The bytes of the greedy policy of ``agent_state`` in ``format`` (``FORMATS``): a
    serialized StableHLO module or ONNX model (batch size ``batch``)."""
    fn, inputs = greedy_policy(agent, agent_state, spec, batch)
    if format == "onnx":
        return to_onnx(fn, inputs).SerializeToString()
    return to_stablehlo(fn, inputs)
