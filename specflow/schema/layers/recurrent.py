"""Recurrent layers (Keras SimpleRNN, LSTM, GRU) on the graph's while loop, and Bidirectional.

Weights as Keras lays them out, so Keras weights load unchanged: ``kernel`` [in, G * units],
``recurrent_kernel`` [units, G * units] and ``bias`` (LSTM: G = 4, gates i, f, c, o; GRU: G = 3,
gates z, r, h, bias [2, 3 units] with ``reset_after``; SimpleRNN: G = 1). The input projection
``x W + b`` is one MatMul over every step before the loop; the loop (``<name>/while``) runs
the cell once per step of a sequence of any length, reading step t with a Gather, and collects
the outputs with a ConcatV2 when ``return_sequences``. Inputs: ``sequence`` [batch, steps, in],
``mask`` ([batch, steps], true/1 = a real step; or sequence lengths [batch]), ``initial_h``
(and ``initial_c`` for an LSTM). A masked step keeps the previous state, and its output is the
previous output (Keras's default). Outputs: the last output (or every step's with
``return_sequences``), then with ``return_state`` the final states in Keras's order (h, c).
Dropout masks (training only) are drawn once per sequence, as Keras's: ``dropout`` on the
inputs, ``recurrent_dropout`` on the state entering the recurrent product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specflow.errors import SpecError
from specflow.graph import dtypes
from specflow.graph.control_flow import while_loop
from specflow.schema.initializers import parse_initializer
from specflow.schema.layers.common import Emitter, LayerContext
from specflow.schema.layers.core import apply_dropout
from specflow.schema.layers.variables import create_variable


@dataclass
class _Cell:
    gates: int
    states: tuple[str, ...]  # loop-carried state names, Keras's return_state order
    step: Callable  # (e, cfg, xt, states, weights) -> (output, new states)


def _split(e: Emitter, t: str, n: int, name: str) -> list[str]:
    node = e.op("Split", [e.i32(1, f"{name}/axis"), t], {"num_split": n}, name=name)
    return [node if i == 0 else f"{node}:{i}" for i in range(n)]


def _lstm_step(e: Emitter, cfg, xt: str, states: list[str], w: dict) -> tuple[str, list[str]]:
    h, c = states
    z = e.op("AddV2", [xt, e.op("MatMul", [w["h_in"], w["recurrent_kernel"]])], name="z")
    i, f, g, o = _split(e, z, 4, "gates")
    i = e.activation(i, cfg.recurrent_activation, final=False)
    f = e.activation(f, cfg.recurrent_activation, final=False)
    g = e.activation(g, cfg.activation, final=False)
    o = e.activation(o, cfg.recurrent_activation, final=False)
    c_new = e.op("AddV2", [e.op("Mul", [f, c], name="forget"), e.op("Mul", [i, g], name="write")], name="c")
    h_new = e.op("Mul", [o, e.activation(c_new, cfg.activation, final=False)], name="h")
    return h_new, [h_new, c_new]


def _gru_step(e: Emitter, cfg, xt: str, states: list[str], w: dict) -> tuple[str, list[str]]:
    (h,) = states
    xz, xr, xh = _split(e, xt, 3, "x_gates")
    if cfg.reset_after:
        rec = e.op("MatMul", [w["h_in"], w["recurrent_kernel"]])
        if "recurrent_bias" in w:
            rec = e.op("BiasAdd", [rec, w["recurrent_bias"]])
        rz, rr, rh = _split(e, rec, 3, "h_gates")
    else:
        rec = e.op("MatMul", [w["h_in"], w["recurrent_zr"]])
        rz, rr = _split(e, rec, 2, "h_gates")
    z = e.activation(e.op("AddV2", [xz, rz], name="z_in"), cfg.recurrent_activation, final=False)
    r = e.activation(e.op("AddV2", [xr, rr], name="r_in"), cfg.recurrent_activation, final=False)
    if cfg.reset_after:
        hh_in = e.op("AddV2", [xh, e.op("Mul", [r, rh], name="reset")], name="hh_in")
    else:
        reset_h = e.op("Mul", [r, w["h_in"]], name="reset")
        hh_in = e.op("AddV2", [xh, e.op("MatMul", [reset_h, w["recurrent_h"]], name="MatMul_h")], name="hh_in")
    hh = e.activation(hh_in, cfg.activation, final=False)
    # h = z * h + (1 - z) * hh  ==  hh + z * (h - hh)
    h_new = e.op("AddV2", [hh, e.op("Mul", [z, e.op("Sub", [h, hh], name="h_minus_hh")], name="keep")], name="h")
    return h_new, [h_new]


def _simple_step(e: Emitter, cfg, xt: str, states: list[str], w: dict) -> tuple[str, list[str]]:
    pre = e.op("AddV2", [xt, e.op("MatMul", [w["h_in"], w["recurrent_kernel"]])], name="pre")
    h_new = e.activation(pre, cfg.activation, final=False)
    if h_new == pre:  # linear: give the state its own node
        h_new = e.op("Identity", [pre], name="h")
    return h_new, [h_new]


CELLS = {
    "lstm": _Cell(4, ("h", "c"), _lstm_step),
    "gru": _Cell(3, ("h",), _gru_step),
    "simple_rnn": _Cell(1, ("h",), _simple_step),
}


def _bias_initializer(kind: str, cfg, units: int):
    """Keras's unit_forget_bias: the forget gate's quarter of an LSTM bias starts at 1."""
    init = parse_initializer(cfg.bias_initializer)
    if kind != "lstm" or not cfg.unit_forget_bias:
        return init
    if init.kind not in ("zeros", "constant") or np.ndim(init.params.get("value", 0)) != 0:
        raise SpecError("lstm: unit_forget_bias needs a zeros or scalar constant bias_initializer "
                        "(or unit_forget_bias: false)")
    b = float(init.params.get("value", 0.0) or 0.0)
    return parse_initializer({"constant": [b] * units + [1.0] * units + [b] * (2 * units)})


def run_rnn(e: Emitter, kind: str, inputs: dict[str, str], cfg, reverse_output: bool = False) -> list[str]:
    """Build the layer; return [output, *final states]. ``reverse_output`` (Bidirectional's
    backward copy) stores the outputs in input time order instead of processing order."""
    cell, name = CELLS[kind], e.ctx.name
    x = inputs["sequence"]
    shape, dt = e.shape(x), e.dtype(x)
    if shape.rank != 3 or shape.dims[2] is None:
        raise SpecError(f"{kind} needs a [batch, steps, features] input with features known, got shape {shape}",
                        node=name)
    if not dt.is_floating:
        raise SpecError(f"{kind} needs a floating input, got {dt.name}", node=name)
    n_in, u, g, seed = int(shape.dims[2]), cfg.units, cell.gates, e.ctx.graph_seed
    kernel = create_variable(e.b, "kernel", [n_in, g * u], dt, cfg.kernel_initializer, True, seed)
    rec = create_variable(e.b, "recurrent_kernel", [u, g * u], dt, cfg.recurrent_initializer, True, seed)
    two_biases = kind == "gru" and cfg.reset_after
    bias = None
    if cfg.use_bias:
        bshape = [2, g * u] if two_biases else [g * u]
        bias = create_variable(e.b, "bias", bshape, dt, _bias_initializer(kind, cfg, u), True, seed)

    if cfg.dropout > 0:
        x = e.op("Mul", [x, e.op("ExpandDims", [_dropout_mask(e, x, n_in, cfg.dropout, cfg.seed, "input_dropout/"),
                                                e.i32(1, "input_dropout/axis")], name="input_dropout/mask_b")],
                 name="input_dropout/x")  # fmt: skip
    # x W + b for every step at once, time-major: [steps, batch, G units].
    flat = e.op("Reshape", [x, e.i32([-1, n_in], "inputs_flat/shape")], name="inputs_flat")
    xw = e.op("MatMul", [flat, kernel.read], name="input_projection")
    weights: dict[str, str] = {"recurrent_kernel": rec.read}
    if bias is not None:
        b_in = bias.read
        if two_biases:
            b_in, b_rec = _unstack(e, bias.read, 2, "bias_split")
            weights["recurrent_bias"] = b_rec
        xw = e.op("BiasAdd", [xw, b_in], name="input_bias")
    if kind == "gru" and not cfg.reset_after:
        node = e.op("SplitV", [rec.read, e.i32([2 * u, u], "recurrent_split/sizes"), e.i32(1, "recurrent_split/axis")],
                    {"num_split": 2}, name="recurrent_split")  # fmt: skip
        weights["recurrent_zr"], weights["recurrent_h"] = node, f"{node}:1"
    xw = e.op("Reshape", [xw, e.lead_shape(x, 2, [g * u], "steps/shape")], name="steps")
    xw_tm = e.op("Transpose", [xw, e.i32([1, 0, 2], "time_major/perm")], name="time_major")
    n_steps = e.op("StridedSlice", [e.dims(x, 1, 2, "n_steps_1d"), e.i32([0], "n_steps/b"), e.i32([1], "n_steps/e"),
                                    e.i32([1], "n_steps/s")], {"shrink_axis_mask": 1}, name="n_steps")  # fmt: skip

    mask_tm = _time_major_mask(e, inputs.get("mask"), x, n_steps)
    zeros = e.op("Fill", [e.concat([e.dims(x, 0, 1, "batch"), e.i32([u], "units")], 0, "state_shape"),
                          e.scalar(0.0, x, "zero")], name="zero_state")  # fmt: skip
    initial = []
    for s in cell.states:
        given = inputs.get(f"initial_{s}")
        if given is not None and (e.shape(given).rank not in (None, 2) or e.dtype(given) != dt):
            raise SpecError(f"{kind}: initial_{s} must be a {dt.name} [batch, {u}] tensor, got "
                            f"{e.dtype(given).name} {e.shape(given)}", node=name)
        initial.append(given if given is not None else zeros)
    rec_mask = None
    if cfg.recurrent_dropout > 0:
        rec_mask = _dropout_mask(e, zeros, u, cfg.recurrent_dropout, cfg.seed, "recurrent_dropout/")

    collect = cfg.return_sequences
    seq0 = []
    if collect:
        empty = e.concat([e.i32([0], "outputs/none"), e.dims(x, 0, 1, "outputs/batch"), e.i32([u], "outputs/units")],
                         0, "outputs/shape")  # fmt: skip
        seq0 = [e.op("Fill", [empty, e.scalar(0.0, x, "outputs/zero")], name="outputs/empty")]
    n_steps_minus_one = None
    if cfg.go_backwards:
        n_steps_minus_one = e.op("Sub", [n_steps, e.i32(1, "one")], name="last_step")

    def cond(b, t, *rest):
        return e.op("Less", [t, n_steps], name="Less")

    def body(b, t, *carried):
        states, seq = list(carried[: len(cell.states)]), carried[len(cell.states):]
        idx = e.op("Sub", [n_steps_minus_one, t], name="index") if cfg.go_backwards else t
        xt = e.op("GatherV2", [xw_tm, idx, e.i32(0, "gather_axis")], name="x_t")
        h_in = states[0] if rec_mask is None else e.op("Mul", [states[0], rec_mask], name="h_dropped")
        out, new = cell.step(e, cfg, xt, states, {**weights, "h_in": h_in})
        if mask_tm is not None:
            m = e.op("GatherV2", [mask_tm, idx, e.i32(0, "mask_axis")], name="mask_t")
            new = [e.op("SelectV2", [m, n, s], name=f"{sn}_masked") for n, s, sn in zip(new, states, cell.states)]
            out = new[0]
        nxt = [e.op("AddV2", [t, e.i32(1, "step")], name="next_t"), *new]
        if collect:
            row = e.op("ExpandDims", [out, e.i32(0, "row_axis")], name="row")
            pair = [row, seq[0]] if reverse_output else [seq[0], row]
            nxt.append(e.concat(pair, 0, "outputs"))
        return nxt

    batch = shape.dims[0]
    invariants = [[], *([[batch, u]] * len(cell.states)), *([[None, batch, u]] if collect else [])]
    loop = while_loop(e.b, cond, body, [e.i32(0, "t0"), *initial, *seq0], name="while",
                      var_names=["t", *cell.states, *(["outputs"] if collect else [])], shape_invariants=invariants)
    finals = loop.outputs[1: 1 + len(cell.states)]
    if collect:
        seq = e.op("Transpose", [loop.outputs[-1], e.i32([1, 0, 2], "outputs/perm")], name="outputs/batch_major")
        # The loop grows the outputs, so their length is unknown to shape inference; the input's is not.
        last = e.op("Reshape", [seq, e.lead_shape(x, 2, [u], "outputs/shape")],
                    name=None if cfg.return_state else "outputs", final=not cfg.return_state)  # fmt: skip
    else:
        last = e.op("Identity", [finals[0]], name="output", final=not cfg.return_state)
    if not cfg.return_state:
        return [last]
    out = e.op("Identity", [last], final=True)
    return [out, *finals]


def _unstack(e: Emitter, t: str, n: int, name: str) -> list[str]:
    node = e.op("Unpack", [t], {"num": n, "axis": 0}, name=name)
    return [node if i == 0 else f"{node}:{i}" for i in range(n)]


def _dropout_mask(e: Emitter, like: str, width: int, rate: float, seed, scope: str) -> str:
    """A [batch, width] mask of 0 and 1/keep (training), or ones (inference): one per sequence."""
    shape = e.concat([e.dims(like, 0, 1, f"{scope}batch"), e.i32([width], f"{scope}width")], 0, f"{scope}shape")
    ones = e.op("Fill", [shape, e.scalar(1.0, like, f"{scope}one")], name=f"{scope}ones")
    return apply_dropout(e, ones, rate, seed, scope=scope)


def _time_major_mask(e: Emitter, mask: str | None, x: str, n_steps: str) -> str | None:
    """The mask as bool [steps, batch, 1]; sequence lengths [batch] become a mask first."""
    if mask is None:
        return None
    shape, dt = e.shape(mask), e.dtype(mask)
    if shape.rank == 1:
        if not dt.is_integer:
            raise SpecError(f"sequence lengths must be integers, got {dt.name}", node=e.ctx.name)
        lengths = e.op("Cast", [mask], {"DstT": dtypes.int32}, name="mask/lengths") if dt != dtypes.int32 else mask
        steps = e.op("Range", [e.i32(0, "mask/start"), n_steps, e.i32(1, "mask/delta")], name="mask/steps")
        col = e.op("ExpandDims", [lengths, e.i32(1, "mask/axis")], name="mask/lengths_col")
        mask = e.op("Less", [steps, col], name="mask/from_lengths")
    elif shape.rank != 2:
        raise SpecError(f"mask must be [batch, steps] (or sequence lengths [batch]), got shape {shape}",
                        node=e.ctx.name)
    elif dt != dtypes.bool_:
        mask = e.op("NotEqual", [mask, e.const(np.zeros((), dt.numpy), dt, name="mask/zero")], name="mask/bool")
    tm = e.op("Transpose", [mask, e.i32([1, 0], "mask/perm")], name="mask/time_major")
    return e.op("ExpandDims", [tm, e.i32(2, "mask/axis2")], name="mask/column")


def _layer(kind: str):
    def layer(e: Emitter, inputs: dict[str, str], cfg):
        outs = run_rnn(e, kind, inputs, cfg)
        return outs if cfg.return_state else outs[0]

    layer.__doc__ = f"Keras {kind} over a [batch, steps, features] sequence."
    return layer


lstm, gru, simple_rnn = _layer("lstm"), _layer("gru"), _layer("simple_rnn")


_MERGE_OPS = {"sum": "AddV2", "mul": "Mul"}


def bidirectional(e: Emitter, inputs: dict[str, str], cfg):
    """Keras Bidirectional: ``forward_<kind>`` and ``backward_<kind>`` (go_backwards), the
    backward outputs put back in time order, merged by ``merge_mode`` (None: both, as a list).
    With ``return_state`` the states follow: forward's, then backward's. Initial states come by
    role, ``forward_initial_h`` ... ``backward_initial_c`` (Keras's ``initial_state`` list)."""
    kind, inner = cfg.inner
    fw_name, bw_name = f"forward_{kind}", f"backward_{kind}"
    states = CELLS[kind].states
    for role in inputs:
        if "_initial_" in role and role.rsplit("_", 1)[1] not in states:
            raise SpecError(f"bidirectional {kind} has no state '{role.rsplit('_', 1)[1]}'; its initial states are "
                            + ", ".join(f"{d}_initial_{s}" for d in ("forward", "backward") for s in states),
                            node=e.ctx.name)  # fmt: skip
    outs = {}
    for sub, direction, backwards in ((fw_name, "forward", False), (bw_name, "backward", True)):
        sub_cfg = inner.model_copy(update={"go_backwards": backwards})
        ctx = LayerContext(name=e.b.scoped(sub), graph_seed=e.ctx.graph_seed, training=e.ctx.training)
        sub_inputs = {k: v for k, v in inputs.items() if "_initial_" not in k}
        sub_inputs.update({f"initial_{s}": inputs[f"{direction}_initial_{s}"] for s in states
                           if f"{direction}_initial_{s}" in inputs})  # fmt: skip
        with e.b.name_scope(sub):
            outs[sub] = run_rnn(Emitter(e.b, ctx), kind, sub_inputs, sub_cfg, reverse_output=backwards)
    fw, bw = outs[fw_name], outs[bw_name]
    y_f, y_b = fw[0], bw[0]
    if inner.return_sequences and inputs.get("mask") is not None:
        # Keras zeroes a bidirectional layer's outputs at masked steps (zero_output_for_mask).
        y_f, y_b = (_zero_masked(e, y, inputs["mask"], tag) for y, tag in ((y_f, "forward"), (y_b, "backward")))
    mode = cfg.merge_mode
    if mode is None:
        return [y_f, y_b, *fw[1:], *bw[1:]]
    if mode == "concat":
        y = e.op("ConcatV2", [y_f, y_b, e.i32(-1, "concat/axis")], final=True)
    elif mode == "ave":
        s = e.op("AddV2", [y_f, y_b], name="sum")
        y = e.op("Mul", [s, e.scalar(0.5, s, "half")], final=True)
    else:
        y = e.op(_MERGE_OPS[mode], [y_f, y_b], final=True)
    return [y, *fw[1:], *bw[1:]] if inner.return_state else y


def _zero_masked(e: Emitter, y: str, mask: str, tag: str) -> str:
    if e.shape(mask).rank == 1:  # lengths
        n = e.op("StridedSlice", [e.dims(y, 1, 2, f"{tag}/zm/steps1d"), e.i32([0], f"{tag}/zm/b"),
                                  e.i32([1], f"{tag}/zm/e"), e.i32([1], f"{tag}/zm/s")], {"shrink_axis_mask": 1},
                 name=f"{tag}/zm/steps")  # fmt: skip
        steps = e.op("Range", [e.i32(0, f"{tag}/zm/start"), n, e.i32(1, f"{tag}/zm/delta")], name=f"{tag}/zm/range")
        lengths = e.op("Cast", [mask], {"DstT": dtypes.int32}, name=f"{tag}/zm/lengths")
        mask = e.op("Less", [steps, e.op("ExpandDims", [lengths, e.i32(1, f"{tag}/zm/ax")], name=f"{tag}/zm/col")],
                    name=f"{tag}/zm/mask")  # fmt: skip
    elif e.dtype(mask) != dtypes.bool_:  # a numeric mask: nonzero = a real step (Keras casts to bool)
        dt = e.dtype(mask)
        mask = e.op("NotEqual", [mask, e.const(np.zeros((), dt.numpy), dt, name=f"{tag}/zm/zero")], name=f"{tag}/zm/bool")
    m = e.op("Cast", [mask], {"DstT": e.dtype(y)}, name=f"{tag}/zm/Cast")
    m = e.op("ExpandDims", [m, e.i32(2, f"{tag}/zm/axis")], name=f"{tag}/zm/mask3")
    return e.op("Mul", [y, m], name=f"{tag}/zero_masked")
