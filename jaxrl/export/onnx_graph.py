"""A JAX function as an ONNX graph: the jaxpr, partially evaluated, written as ONNX nodes.

:func:`to_onnx` traces ``fn`` with ``jax.make_jaxpr`` and walks its equations once:

* **inlined**: nested jaxprs (``jit``, ``custom_jvp_call``, ``custom_vjp_call``,
  ``custom_vmap_call``) are walked in place of their call;
* **folded**: an equation whose inputs are all known at export time (parameters, keys,
  hyperparameters, ``iota``) is evaluated with JAX there and becomes a constant, so a
  greedy policy's random branch (``uniform(key) < eval_epsilon`` with ``eval_epsilon = 0``)
  folds into a constant predicate, and a ``select_n`` on a constant predicate that is the
  same everywhere becomes the case it selects;
* **written**: every other equation becomes one or a few ONNX nodes (opset 18, table
  ``_ELEMENTWISE`` and the ``_lower_*`` functions); constants it reads become
  initializers. An equation that no output depends on is dropped, and one that has no
  ONNX form raises ``ConfigError`` only if an output depends on it.

This is jaxrl's own writer, for the primitives its policies use (dense and conv torsos,
argmax and masking, Gaussian means, tanh squashing); jax2onnx covers more of JAX but pins
an older orbax-checkpoint than jaxrl's checkpoints use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from jaxrl.types import ConfigError

OPSET = 18

# jax primitive -> ONNX op of the same meaning, applied to the inputs as they are.
_ELEMENTWISE = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "max": "Max",
    "min": "Min",
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "tanh": "Tanh",
    "logistic": "Sigmoid",
    "sqrt": "Sqrt",
    "abs": "Abs",
    "sign": "Sign",
    "floor": "Floor",
    "ceil": "Ceil",
    "erf": "Erf",
    "pow": "Pow",
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "eq": "Equal",
    "and": "And",
    "or": "Or",
    "not": "Not",
    "xor": "Xor",
    "stop_gradient": "Identity",
    "copy": "Identity",
    "copy_p": "Identity",
}
_INLINED = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vmap_call": "call",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
}


class _Bad(str):
    """A value with no ONNX form: the name of the primitive that made it."""


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ConfigError("ONNX export needs onnx: pip install 'jaxrl[onnx]'") from None
    return onnx


class _Graph:
    """The nodes, initializers and fresh names of the graph being written."""

    def __init__(self) -> None:
        self.onnx = _onnx()
        self.nodes: list[Any] = []
        self.initializers: dict[str, Any] = {}
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op: str, inputs: Sequence[str], hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op.lower())
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def const(self, value: Any, hint: str = "const") -> str:
        array = np.asarray(value)
        if array.dtype == np.dtype(bool) or array.dtype.kind in "iuf":
            name = self.name(hint)
            self.initializers[name] = self.onnx.numpy_helper.from_array(array, name)
            return name
        raise ConfigError(f"ONNX export: a constant of dtype {array.dtype} has no ONNX form")

    def dtype(self, dtype: Any) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _inner(params: dict[str, Any], key: str) -> Any:
    inner = params[key]
    return inner if hasattr(inner, "consts") else jax.extend.core.ClosedJaxpr(inner, ())


def _is_const(value: Any) -> bool:
    return not isinstance(value, str)


def _walk(graph: _Graph, closed: Any, inputs: Sequence[Any]) -> list[Any]:
    """The values of ``closed``'s outputs: constants (arrays) or ONNX value names."""
    env: dict[Any, Any] = {}
    for var, const in zip(closed.jaxpr.constvars, closed.consts, strict=True):
        env[var] = const
    for var, value in zip(closed.jaxpr.invars, inputs, strict=True):
        env[var] = value

    def read(atom: Any) -> Any:
        return atom.val if isinstance(atom, jax.extend.core.Literal) else env[atom]

    for eqn in closed.jaxpr.eqns:
        args = [read(a) for a in eqn.invars]
        name = eqn.primitive.name
        if name in _INLINED:
            outs = _walk(graph, _inner(eqn.params, _INLINED[name]), args)
        elif all(_is_const(a) for a in args):
            outs = eqn.primitive.bind(*args, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        elif any(isinstance(a, _Bad) for a in args):
            outs = [next(a for a in args if isinstance(a, _Bad))] * len(eqn.outvars)
        else:
            outs = [_lower(graph, eqn, args)]
        for var, value in zip(eqn.outvars, outs, strict=True):
            env[var] = value
    return [read(a) for a in closed.jaxpr.outvars]


def _name(graph: _Graph, value: Any) -> str:
    return value if isinstance(value, str) else graph.const(value)


def _lower(graph: _Graph, eqn: Any, args: list[Any]) -> Any:
    """The ONNX value of one equation with at least one non-constant input."""
    name, params = eqn.primitive.name, eqn.params
    out_aval = eqn.outvars[0].aval
    if name == "select_n" and _is_const(args[0]):
        pred = np.asarray(args[0])
        if pred.size and (pred == pred.flat[0]).all():  # the same case everywhere
            case = 1 + int(pred.flat[0])
            if eqn.invars[case].aval.shape == out_aval.shape:
                return args[case]
    if name in _ELEMENTWISE:
        return graph.node(_ELEMENTWISE[name], [_name(graph, a) for a in args])
    lowering = _LOWERINGS.get(name)
    if lowering is None:
        return _Bad(name)
    return lowering(graph, [_name(graph, a) for a in args], params, eqn)


def _shape_const(graph: _Graph, shape: Sequence[int]) -> str:
    return graph.const(np.asarray(shape, np.int64), "shape")


def _reshape_to_out(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Reshape", [x[0], _shape_const(graph, eqn.outvars[0].aval.shape)])


def _broadcast_in_dim(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    shape, dims = params["shape"], params["broadcast_dimensions"]
    in_shape = eqn.invars[0].aval.shape
    expanded = [1] * len(shape)
    for axis, size in zip(dims, in_shape, strict=True):
        expanded[axis] = size
    reshaped = graph.node("Reshape", [x[0], _shape_const(graph, expanded)])
    return graph.node("Expand", [reshaped, _shape_const(graph, shape)])


def _convert(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Cast", x, to=graph.dtype(params["new_dtype"]))


def _transpose(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Transpose", x, perm=list(params["permutation"]))


def _reduce(op: str) -> Callable[..., str]:
    def lower(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
        axes = graph.const(np.asarray(params["axes"], np.int64), "axes")
        return graph.node(op, [x[0], axes], keepdims=0)

    return lower


def _argmax(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    (axis,) = params["axes"]
    index = graph.node("ArgMax", x, axis=int(axis), keepdims=0, select_last_index=0)
    return graph.node("Cast", [index], to=graph.dtype(params["index_dtype"]))


def _integer_pow(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    exponent = np.asarray(params["y"], eqn.invars[0].aval.dtype)
    return graph.node("Pow", [x[0], graph.const(exponent, "exponent")])


def _square(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Mul", [x[0], x[0]])


def _rsqrt(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Reciprocal", [graph.node("Sqrt", x)])


def _select_n(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    if len(x) != 3:
        return _Bad("select_n with more than two cases")
    pred = x[0]
    if eqn.invars[0].aval.dtype != np.dtype(bool):
        pred = graph.node("Cast", [pred], to=graph.dtype(bool))
    return graph.node("Where", [pred, x[2], x[1]])


def _clamp(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    low, value, high = x
    return graph.node("Max", [graph.node("Min", [value, high]), low])


def _concatenate(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    return graph.node("Concat", x, axis=int(params["dimension"]))


def _slice(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    starts, limits = params["start_indices"], params["limit_indices"]
    strides = params["strides"] or (1,) * len(starts)
    axes = np.arange(len(starts), dtype=np.int64)
    consts = [np.asarray(v, np.int64) for v in (starts, limits)]
    inputs = [x[0], *(graph.const(c) for c in consts), graph.const(axes)]
    return graph.node("Slice", [*inputs, graph.const(np.asarray(strides, np.int64))])


def _dot_general(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    """``dot_general`` as one ``Einsum``: batch dims, then lhs free, then rhs free dims."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    lhs_rank, rhs_rank = (len(v.aval.shape) for v in eqn.invars)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lhs, rhs = [""] * lhs_rank, [""] * rhs_rank
    for lb, rb in zip(lhs_batch, rhs_batch, strict=True):
        lhs[lb] = rhs[rb] = next(letters)
    for lc, rc in zip(lhs_contract, rhs_contract, strict=True):
        lhs[lc] = rhs[rc] = next(letters)
    for axes in (lhs, rhs):
        for i, letter in enumerate(axes):
            axes[i] = letter or next(letters)
    out = [lhs[b] for b in lhs_batch]
    out += [lhs[i] for i in range(lhs_rank) if i not in lhs_batch and i not in lhs_contract]
    out += [rhs[i] for i in range(rhs_rank) if i not in rhs_batch and i not in rhs_contract]
    equation = f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}"
    result = graph.node("Einsum", x, equation=equation)
    in_dtype, out_dtype = eqn.invars[0].aval.dtype, eqn.outvars[0].aval.dtype
    if in_dtype == out_dtype:
        return result
    return graph.node("Cast", [result], to=graph.dtype(out_dtype))


def _conv(graph: _Graph, x: list[str], params: dict, eqn: Any) -> str:
    """``conv_general_dilated`` as ``Conv`` in ONNX's ``[N, C, *spatial]`` layout."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    if any(d != 1 for d in params["lhs_dilation"]) or params["batch_group_count"] != 1:
        return _Bad("conv_general_dilated with lhs_dilation or batch_group_count")
    lhs = graph.node("Transpose", [x[0]], perm=list(lhs_spec))
    rhs = graph.node("Transpose", [x[1]], perm=list(rhs_spec))
    padding = params["padding"]
    conv = graph.node(
        "Conv",
        [lhs, rhs],
        strides=list(params["window_strides"]),
        dilations=list(params["rhs_dilation"]),
        pads=[lo for lo, _ in padding] + [hi for _, hi in padding],
        group=int(params["feature_group_count"]),
    )
    return graph.node("Transpose", [conv], perm=[int(i) for i in np.argsort(out_spec)])


_LOWERINGS: dict[str, Callable[..., Any]] = {
    "reshape": _reshape_to_out,
    "squeeze": _reshape_to_out,
    "expand_dims": _reshape_to_out,
    "broadcast_in_dim": _broadcast_in_dim,
    "convert_element_type": _convert,
    "transpose": _transpose,
    "reduce_max": _reduce("ReduceMax"),
    "reduce_min": _reduce("ReduceMin"),
    "reduce_sum": _reduce("ReduceSum"),
    "argmax": _argmax,
    "integer_pow": _integer_pow,
    "square": _square,
    "rsqrt": _rsqrt,
    "select_n": _select_n,
    "clamp": _clamp,
    "concatenate": _concatenate,
    "slice": _slice,
    "dot_general": _dot_general,
    "conv_general_dilated": _conv,
}


def _prune(graph: _Graph, outputs: Sequence[str]) -> None:
    """Drops the nodes and initializers that no output depends on."""
    needed, kept = set(outputs), []
    for node in reversed(graph.nodes):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(node.input)
    graph.nodes = kept[::-1]
    graph.initializers = {k: v for k, v in graph.initializers.items() if k in needed}


def to_onnx(fn: Callable[..., Any], examples: dict[str, Any], output_names: Sequence[str]) -> Any:
    """``fn(**examples)``'s graph as an ``onnx.ModelProto`` (opset 18).

    Args:
      fn: a function of keyword array arguments returning an array or a tuple of arrays;
        what it closes over (parameters) becomes initializers.
      examples: ``{input name: array or ShapeDtypeStruct}``, fixing each input's shape and
        dtype (the graph has these shapes, batch size included).
      output_names: a name per output of ``fn``.

    Raises:
      ConfigError: when onnx is not installed, or an output depends on a primitive that
        has no ONNX form here (naming it).
    """
    onnx = _onnx()
    names = list(examples)
    closed = jax.make_jaxpr(lambda *a: fn(**dict(zip(names, a, strict=True))))(*examples.values())
    graph = _Graph()
    outs = _walk(graph, closed, names)
    graph_outputs = []
    for out_name, value, aval in zip(output_names, outs, closed.out_avals, strict=True):
        if isinstance(value, _Bad):
            raise ConfigError(f"ONNX export: primitive '{value}' has no ONNX form in jaxrl")
        graph.nodes.append(onnx.helper.make_node("Identity", [_name(graph, value)], [out_name]))
        graph_outputs.append(
            onnx.helper.make_tensor_value_info(out_name, graph.dtype(aval.dtype), aval.shape)
        )
    _prune(graph, output_names)
    graph_inputs = [
        onnx.helper.make_tensor_value_info(n, graph.dtype(v.dtype), v.shape)
        for n, v in examples.items()
    ]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(
            graph.nodes, "policy", graph_inputs, graph_outputs, list(graph.initializers.values())
        ),
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="jaxrl",
    )
    onnx.checker.check_model(model, full_check=True)
    return model
