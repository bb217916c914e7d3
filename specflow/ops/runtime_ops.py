"""Runtime ops the passes insert: ``_Arg``/``_Retval`` (feeds and fetches through the step's call
frame) and ``_Send``/``_Recv`` (cross-device edges through the step's rendezvous).

They are stateful (never folded, never deduplicated) and their kernels reach the step through
``ctx.extras``: ``"frame"`` (get_arg/set_retval), ``"rendezvous"`` and ``"device"`` (the
executor's Device, which copies values between CPU and GPU).

``_Recv`` is asynchronous: its kernel takes a ``done(outputs=None, error=None)`` callback and
returns at once; the executor keeps no thread waiting for the value.
"""

from __future__ import annotations

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, as_shape
from specflow.ops.inference import InferenceContext, no_outputs, unchanged_shape
from specflow.ops.registry import bfloat16_native, kernel, register_op
from specflow.runtime.rendezvous import DEAD, rendezvous_key

# Runtime ops move any value, resource handles included.
_ANY = frozenset(dtypes.ALL_DTYPES)


def async_kernel(op_name: str, **kw):
    """Register ``fn(ctx, done, *inputs)``; the executor calls ``done`` style kernels async."""

    def deco(fn):
        fn.is_async = True
        return kernel(op_name, **kw)(fn)

    return deco


def _declared_shape(ic: InferenceContext) -> list[Shape]:
    # TF's "_output_shapes" convention: a pass that knows the fed shape may record it.
    shapes = ic.attrs.get("_output_shapes")
    return [as_shape(shapes[0]) if shapes else Shape.unknown()]


# --- _Arg / _Retval: the call frame ----------------------------------------------------------

register_op(
    "_Arg",
    outputs=["output: T"],
    attrs=["T: type", "index: int >= 0"],
    stateful=True,
    shape=_declared_shape,
    doc="Feed `index` of the step (the call frame's argument), on this node's device.",
)


@kernel("_Arg", T=_ANY)
def _arg(ctx):
    extras = ctx.extras
    args, index = extras["frame"].args, ctx.attrs["index"]
    value = args[index] if index < len(args) else extras["frame"].get_arg(index)  # (which fails)
    if type(value) is np.ndarray and extras["device"].device_type == "CPU":  # nothing to copy
        return value
    return extras["device"].import_value(value)


register_op(
    "_Retval",
    inputs=["input: T"],
    attrs=["T: type", "index: int >= 0"],
    stateful=True,
    shape=no_outputs,
    doc="Fetch `index` of the step: stores its input in the call frame.",
)


# _Retval and _Send have no outputs: run as float32 kernels (bfloat16's default), a bfloat16
# value would leave widened to float32 with nothing to round it back
@kernel("_Retval", T=_ANY)
@bfloat16_native
def _retval(ctx, x):
    ctx.extras["frame"].set_retval(ctx.attrs["index"], x)
    return ()


# --- _Send / _Recv: cross-device edges ---------------------------------------------------------

_TRANSFER_ATTRS = [
    "tensor_name: string",
    "send_device: string",
    "send_device_incarnation: int",
    "recv_device: string",
    "client_terminated: bool = false",
]


def _key(ctx) -> str:
    a = ctx.attrs
    frame_id, iter_id = ctx.extras.get("frame_iter", ("0", 0))
    return rendezvous_key(
        a["send_device"], a["send_device_incarnation"], a["recv_device"], a["tensor_name"], frame_id, iter_id
    )


register_op(
    "_Send",
    inputs=["tensor: T"],
    attrs=["T: type", *_TRANSFER_ATTRS],
    stateful=True,
    shape=no_outputs,
    doc="Sends `tensor` from send_device to recv_device under `tensor_name` (via the rendezvous).",
)


@kernel("_Send", T=_ANY)
@bfloat16_native
def _send(ctx, x):
    # The executor runs _Send even on a dead input, so the receiver learns it is dead.
    ctx.extras["rendezvous"].send(_key(ctx), x, is_dead=x is DEAD)
    return ()


register_op(
    "_Recv",
    outputs=["tensor: tensor_type"],
    attrs=["tensor_type: type", *_TRANSFER_ATTRS],
    stateful=True,
    shape=lambda ic: [Shape.unknown()],
    doc="Receives `tensor_name` sent from send_device; copies it to this device if needed.",
)


@async_kernel("_Recv", tensor_type=_ANY)
def _recv(ctx, done):
    device = ctx.extras["device"]

    def on_value(value, is_dead, error):
        if error is not None:
            done(error=error)
        elif is_dead:
            done((DEAD,))
        else:
            try:
                value = device.import_value(value)
            except Exception as e:  # a failed copy fails this node, like any kernel
                done(error=ctx.fail(f"cannot receive '{ctx.attrs['tensor_name']}' on {device.name}: {e}"))
                return
            done((value,))

    ctx.extras["rendezvous"].recv_async(_key(ctx), on_value)


# --- _HostConst: what a control edge across devices carries ---------------------------------
# The partitioner carries ``^a`` to another device as a _Send of a _HostConst made after ``a``.
# Its value is one shared host scalar on every device: a receiving device passes it through
# (Device.import_value) and executors accept it as any device's output, so a control edge from a
# GPU op never waits for the GPU (it means "after a was launched", as in TF) and one to a GPU
# copies nothing.

CONTROL_TOKEN = np.zeros((), np.float32)
CONTROL_TOKEN.flags.writeable = False

register_op(
    "_HostConst",
    outputs=["output: dtype"],
    attrs=["value: tensor", "dtype: type"],
    shape=lambda ic: [Shape.scalar()],
    doc="The control token (a float32 scalar 0 in host memory) that a cross-device control edge sends.",
)


@kernel("_HostConst", dtype=[dtypes.float32])
def _host_const(ctx):
    return CONTROL_TOKEN


# --- 16-bit transfers (whitepaper 5.5): float32 across devices as its top 16 bits ---------------
# The partitioner puts _TruncateToBfloat16 before a _Send and _ExpandFromBfloat16 after its
# _Recv on edges that opted in (runtime/lossy_transfers.py). The wire value is the bfloat16 bit
# pattern as uint16 (specflow has no bfloat16 dtype): sign, 8 exponent bits, 7 mantissa bits.

register_op(
    "_TruncateToBfloat16",
    inputs=["x: float32"],
    outputs=["y: uint16"],
    shape=unchanged_shape,
    doc="The top 16 bits of each float32 (bfloat16 by truncation, not rounding): relative error "
    "below 2^-7. A NaN stays a NaN (its quiet bit is set if only low mantissa bits were set).",
)


@kernel("_TruncateToBfloat16")
def _truncate_to_bfloat16(ctx, x):
    xp = ctx.xp
    bits = xp.asarray(x, order="C").view(xp.uint32)  # (ascontiguousarray would make a scalar 1-D)
    y = xp.empty(x.shape, xp.uint16)
    xp.right_shift(bits, 16, out=y, casting="unsafe")  # out=: a 0-d result stays an array
    # A NaN whose payload sits only in the low 16 bits would truncate to an infinity.
    if not xp.isfinite(x).all():
        nan = xp.isnan(x)
        y[nan] |= xp.uint16(0x0040)
    return y


register_op(
    "_ExpandFromBfloat16",
    inputs=["x: uint16"],
    outputs=["y: float32"],
    shape=unchanged_shape,
    doc="The float32 whose top 16 bits are `x` and whose low 16 bits are zero.",
)


@kernel("_ExpandFromBfloat16")
def _expand_from_bfloat16(ctx, x):
    xp = ctx.xp
    y = x.astype(xp.uint32)
    y <<= 16  # in place: one temporary, and a 0-d result stays an array
    return y.view(xp.float32)
