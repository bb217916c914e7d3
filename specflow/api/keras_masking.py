"""Keras 3's masks: a boolean ``[batch, steps]`` tensor that rides on a layer's output (Keras's
``_keras_mask`` attribute). sf tensors have ``__slots__``, so the masks live here, keyed by the
tensor's identity and dropped when the tensor is (a weak reference's callback).

``call`` is how every ``sf.keras`` layer call runs (keras_functional wraps each Layer class's
``__call__`` with it), as Keras 3's ``Layer.__call__``: with one tensor argument, a ``mask``
parameter the caller left at None is filled with that argument's mask(s); with several, each
``<name>_mask`` parameter with its argument's (MultiHeadAttention's ``query_mask``...). After the
call, a layer that ``supports_masking`` sets ``compute_mask(first_argument, previous_mask)`` on
the outputs that have none yet (the default ``compute_mask`` passes the mask through); any other
layer drops it, with Keras's warning. ``Masking`` is Keras's layer that makes a mask from values."""

from __future__ import annotations

import inspect
import warnings
import weakref

import numpy as np

from specflow.api.tensor import Tensor

_MASKS: dict[int, tuple] = {}  # id(tensor) -> (weak reference to it, its mask)


def get_mask(x):
    """The Keras mask riding on ``x``, or None."""
    entry = _MASKS.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]


def set_mask(x, mask) -> None:
    """Attach ``mask`` to the tensor ``x`` (None: remove it); a non-tensor carries none."""
    key = id(x)
    if mask is None:
        entry = _MASKS.get(key)
        if entry is not None and entry[0]() is x:
            del _MASKS[key]
        return
    if not isinstance(x, Tensor):
        return

    def drop(ref, key=key):
        entry = _MASKS.get(key)
        if entry is not None and entry[0] is ref:
            del _MASKS[key]

    _MASKS[key] = (weakref.ref(x, drop), mask)


# --- structures ------------------------------------------------------------------------------------


def _is_tensor(v) -> bool:
    return isinstance(v, (Tensor, np.ndarray))


def is_tensor_argument(v, leaf=_is_tensor) -> bool:
    """Keras's CallSpec: a tensor, or a non-empty list/tuple/dict of tensors (None allowed)."""
    if leaf(v):
        return True
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)) and v:
        return all(x is None or is_tensor_argument(x, leaf) for x in v)
    return False


def map_masks(s):
    """``tree.map_structure(get_keras_mask, s)``."""
    return map_structure(get_mask, s)


def flatten(s) -> list:
    if isinstance(s, (list, tuple)):
        return [leaf for v in s for leaf in flatten(v)]
    if isinstance(s, dict):
        return [leaf for k in sorted(s, key=str) for leaf in flatten(s[k])]
    return [s]


# --- the call ------------------------------------------------------------------------------------


def _signature(layer, fn):
    """The parameters Keras reads masks from: ``call``'s for a ``__call__`` that forwards to it."""
    cache = type(layer).__dict__.get("_sf_signatures")
    if cache is None:
        cache = {}
        type.__setattr__(type(layer), "_sf_signatures", cache)
    target = layer.call if getattr(fn, "_sf_forwards_to_call", False) else fn
    key = getattr(target, "__func__", target)
    sig = cache.get(key)
    if sig is None:
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            sig = False
        if sig and target is fn:  # an unbound __call__: drop `self`
            params = list(sig.parameters.values())[1:]
            sig = sig.replace(parameters=params)
        cache[key] = sig
    return sig


def supports_masking(layer) -> bool:
    return bool(getattr(layer, "supports_masking", False))


def bind(layer, fn, args, kwargs):
    """(parameter names, bound arguments) of the call, or None when it cannot be bound."""
    sig = _signature(layer, fn)
    if not sig:
        return None
    try:
        arguments = sig.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    return (list(sig.parameters), arguments) if arguments else None


def fill_masks(names, arguments, mask_of, leaf=_is_tensor) -> dict:
    """Keras's step 6: the mask arguments the call left None, from ``mask_of(tensor)``: ``mask``
    with one tensor argument, ``<name>_mask`` for each of several."""
    tensor_args = {k: v for k, v in arguments.items() if k not in ("mask", "training") and is_tensor_argument(v, leaf)}
    if len(tensor_args) == 1:
        wanted = {"mask": next(iter(tensor_args.values()))}
    else:
        wanted = {f"{k}_mask": v for k, v in tensor_args.items()}
    filled = {}
    for name, v in wanted.items():
        if name in names and arguments.get(name) is None:
            masks = map_structure(mask_of, v)
            if any(m is not None for m in flatten(masks)):
                filled[name] = masks
    return filled


def map_structure(fn, s):
    if isinstance(s, (list, tuple)):
        return [map_structure(fn, v) for v in s]
    if isinstance(s, dict):
        return {k: map_structure(fn, v) for k, v in s.items()}
    return fn(s)


def call(layer, fn, args, kwargs):
    """``fn(layer, *args, **kwargs)`` with Keras 3's mask handling around it."""
    simple = len(args) == 1 and (not kwargs or kwargs.keys() == {"training"})
    if simple and not isinstance(args[0], (list, tuple, dict)) and get_mask(args[0]) is None:
        # the common case, quickly: no mask to hand on
        outputs = fn(layer, *args, **kwargs)
        if supports_masking(layer):
            set_mask_metadata(layer, args[0], outputs, None)
        return outputs
    bound = bind(layer, fn, args, kwargs)
    if bound is None:
        return fn(layer, *args, **kwargs)  # no parameters to fill, or its own binding error
    names, arguments = bound
    kwargs = {**kwargs, **fill_masks(names, arguments, get_mask)}
    first = next(iter(arguments.values()))
    previous = kwargs.get("mask")
    if previous is None:  # the first argument's, read before the call (MultiHeadAttention clears it)
        previous = map_masks(first)
    outputs = fn(layer, *args, **kwargs)
    if supports_masking(layer):
        set_mask_metadata(layer, first, outputs, previous)
    elif any(m is not None for m in flatten(previous)):
        warnings.warn(f"Layer '{layer.name}' (of type {type(layer).__name__}) was passed an input with a mask "
                      "attached to it. However, this layer does not support masking and will therefore destroy the "
                      "mask information. Downstream layers will not see the mask.", stacklevel=3)
    return outputs


def set_mask_metadata(layer, inputs, outputs, previous) -> None:
    flat_outputs = flatten(outputs)
    if all(get_mask(t) is not None for t in flat_outputs):
        return
    masks = layer.compute_mask(inputs, previous)
    if masks is None:
        return
    for t, m in zip(flat_outputs, flatten(masks)):
        if m is not None and get_mask(t) is None:
            set_mask(t, m)
