"""Keras 3's functional API: ``sf.keras.Input`` gives a symbolic ``KerasTensor``; calling any
sf.keras layer on KerasTensors (one, a list for merge layers, positional/keyword ones for
MultiHeadAttention, Python values for the other arguments) records a ``_Node`` and returns new
KerasTensors without running an op on them; ``sf.keras.Model(inputs, outputs)`` (a
``Functional``) walks back from the outputs to the inputs and replays the nodes in topological
order on real tensors, eagerly or inside an ``sf.function`` trace.

The output shapes/dtypes of a node come from running the layer once on zeros of its input
shapes with batch size 1 (the Input's ``batch_size`` when given), which also builds its weights
as Keras does at construction; the dummy batch dim is reported as None. ``model.layers`` and the
weights follow Keras 3's ``map_graph`` order (by depth from the outputs, then traversal order).
Layers are intercepted by wrapping each ``Layer`` subclass's own ``__call__`` (existing classes
here, later ones through ``Layer.__init_subclass__``): a call with no KerasTensor argument goes
straight to the layer. Masks (``Embedding(mask_zero=True)``, ``Masking``) flow through the
replay as through any layer call (api/keras_masking.py). A subclass of ``sf.keras.Model`` whose
``__init__`` hands ``(inputs, outputs)`` to ``Model.__init__`` becomes a functional model of that
subclass (Keras's ``CustomModel(inputs, outputs)``, its ``train_step`` kept). Not supported: ops
on KerasTensors (``x + y``: use Add/Lambda layers), fit/evaluate on several inputs or outputs."""

from __future__ import annotations

import functools
import inspect
import threading
import warnings

import numpy as np

from specflow.api import keras_masking as masking
from specflow.api import tf_names
from specflow.api.keras import Layer, _parameters, auto_name
from specflow.api.keras_model import Model
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable

_OP_HINT = ("use a layer instead: sf.keras.layers.Add/Subtract/Multiply/Concatenate for tensor arithmetic, or "
            "sf.keras.layers.Lambda(fn) for any other op")


class KerasTensor:
    """A symbolic tensor of a functional graph: ``shape`` (None for the batch dim), ``dtype``,
    ``name``; made by ``Input`` or by calling a layer on KerasTensors. It holds no value."""

    def __init__(self, shape, dtype: str = "float32", name: str | None = None, node=None, index: int = 0):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype, self.name = str(dtype), name
        self._node, self._index = node, index

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def _refuse(self, *_args, **_kwargs):
        raise TypeError(f"A KerasTensor ({self.name}) is symbolic (sf.keras.Input / a layer's output in a functional "
                        f"model) and cannot be fed to an op or converted to a value; {_OP_HINT}.")

    __array__ = numpy = __bool__ = __float__ = __int__ = __index__ = __len__ = __iter__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __pow__ = __neg__ = __getitem__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = object.__hash__


class _Node:
    """One call of ``layer`` on KerasTensors: the call's arguments with KerasTensors in place."""

    def __init__(self, layer, args, kwargs, outputs, is_input: bool = False):
        self.layer, self.args, self.kwargs, self.is_input = layer, args, kwargs, is_input
        self.inputs = [t for t in _flatten((args, kwargs)) if isinstance(t, KerasTensor)]
        self.outputs = outputs  # the structure the layer returned, KerasTensors in place

    @property
    def parents(self) -> list:
        return [t._node for t in self.inputs]


class InputLayer(Layer):
    """The layer ``Input`` makes (listed first in ``model.layers``, as Keras); no weights."""

    def __init__(self, shape, batch_size=None, dtype: str = "float32", name: str | None = None):
        super().__init__(name or auto_name("InputLayer"))
        self.built = True
        kt = KerasTensor((batch_size, *tuple(shape)), dtype, self.name)
        kt._node = _Node(self, (), {}, kt, is_input=True)
        self.output = kt

    def call(self, x, training=None):
        return x


def Input(shape, batch_size=None, dtype="float32", name: str | None = None) -> KerasTensor:  # noqa: N802 (Keras's name)
    """A symbolic input of ``shape`` (without the batch dim) for ``sf.keras.Model(inputs, outputs)``."""
    if shape is None or np.ndim(shape) == 0:
        shape = () if shape is None else (shape,)
    dtype = getattr(dtype, "name", dtype)
    return InputLayer(tuple(shape), batch_size, dtype, name).output


# --- nested structures ---------------------------------------------------------------------------


def _flatten(s) -> list:
    if isinstance(s, (list, tuple)):
        return [leaf for v in s for leaf in _flatten(v)]
    if isinstance(s, dict):
        return [leaf for k in sorted(s, key=str) for leaf in _flatten(s[k])]
    return [s]


def _map(fn, s):
    if isinstance(s, (list, tuple)):
        return type(s)(_map(fn, v) for v in s)
    if isinstance(s, dict):
        return {k: _map(fn, v) for k, v in s.items()}
    return fn(s)


def _has_keras_tensor(s) -> bool:
    if isinstance(s, KerasTensor):
        return True
    if isinstance(s, (list, tuple)):
        return any(_has_keras_tensor(v) for v in s)
    if isinstance(s, dict):
        return any(_has_keras_tensor(v) for v in s.values())
    return False


# --- recording calls on KerasTensors ------------------------------------------------------------


def _dummy(kt: KerasTensor) -> Tensor:
    batch = 1 if kt.shape and kt.shape[0] is None else None
    shape = [batch if (i == 0 and d is None) else d for i, d in enumerate(kt.shape)]
    if None in shape:
        raise ValueError(f"functional API: {kt.name} has an unknown dimension besides the batch dim ({kt.shape}); "
                         "give every dimension of sf.keras.Input(shape=...)")
    return tf_names._t(np.zeros(shape, np.dtype(kt.dtype) if kt.dtype != "bool" else bool))


def _symbolic_call(layer, call_fn, args, kwargs):
    """Run ``layer`` once on zeros of its inputs' shapes (builds it), record the node and return
    KerasTensors of its outputs' shapes (the dummy batch dim as None)."""
    real_args, real_kwargs = _map(lambda v: _dummy(v) if isinstance(v, KerasTensor) else v, (args, kwargs))
    if "training" in real_kwargs:
        real_kwargs["training"] = False  # shapes only: no dropout draws, no moving-statistics updates
    out = call_fn(layer, *real_args, **real_kwargs)
    unknown_batch = any(t.shape[:1] == (None,) for t in _flatten((args, kwargs)) if isinstance(t, KerasTensor))
    node = _Node(layer, args, kwargs, None)
    counter = [0]

    def to_symbolic(t):
        if not isinstance(t, (Tensor, Variable)):
            raise TypeError(f"functional API: layer '{layer.name}' returned a {type(t).__name__}, not a tensor")
        shape = t.shape.as_list() if t.shape.rank is not None else []
        if unknown_batch and shape:
            shape[0] = None
        kt = KerasTensor(shape, t.dtype.name, f"{layer.name}_output_{counter[0]}", node, counter[0])
        counter[0] += 1
        return kt

    node.outputs = _map(to_symbolic, out)
    layer.__dict__.setdefault("_sf_inbound_nodes", []).append(node)
    return node.outputs


# Keras 3's call context: a layer called without ``training`` inside another layer's call takes
# the outer call's value (a Dropout inside a custom layer of a model called with training=True).
_CONTEXT = threading.local()


def _takes_training(layer, fn) -> bool:
    target = layer.call if getattr(fn, "_sf_forwards_to_call", False) and hasattr(layer, "call") else fn
    params = _parameters(target)
    return params is None or "training" in params


def _wrap_call(fn):
    if getattr(fn, "_sf_functional", False):
        return fn

    @functools.wraps(fn)
    def __call__(self, *args, **kwargs):
        if _has_keras_tensor(args) or _has_keras_tensor(kwargs):
            return _symbolic_call(self, fn, args, kwargs)
        outer = getattr(_CONTEXT, "training", None)
        training = kwargs.get("training")
        if training is None and outer is not None and _takes_training(self, fn):
            kwargs["training"] = training = outer
        _CONTEXT.training = outer if training is None else training
        try:
            return masking.call(self, fn, args, kwargs)
        finally:
            _CONTEXT.training = outer

    __call__._sf_functional = True
    return __call__


def _wrap_init(fn):
    """Keras's base-layer keywords ``input_shape=``/``input_dim=``, for any layer (a Sequential's
    first layer builds the model from them)."""
    if getattr(fn, "_sf_functional", False):
        return fn

    try:
        own = {"input_shape", "input_dim"} & set(inspect.signature(fn).parameters)  # the layer's own arguments
    except (TypeError, ValueError):
        own = set()

    @functools.wraps(fn)
    def __init__(self, *args, **kwargs):
        given = {k: kwargs.pop(k) for k in ("input_shape", "input_dim") if k in kwargs and k not in own}
        fn(self, *args, **kwargs)
        shape = given.get("input_shape") if given.get("input_dim") is None else (given["input_dim"],)
        if shape is not None:
            warnings.warn("Do not pass an `input_shape`/`input_dim` argument to a layer. When using Sequential models, "
                          "prefer using an `Input(shape)` object as the first layer in the model instead.",
                          stacklevel=2)
            dims = shape if isinstance(shape, (list, tuple)) else (shape,)
            self.__dict__["_sf_input_shape_arg"] = tuple(None if d is None else int(d) for d in dims)

    __init__._sf_functional = True
    return __init__


def _wrap_class(cls) -> None:
    fn = cls.__dict__.get("__call__")
    if fn is not None:
        cls.__call__ = _wrap_call(fn)
    init = cls.__dict__.get("__init__")
    if init is not None:
        cls.__init__ = _wrap_init(init)
    if "compute_mask" in cls.__dict__ and "supports_masking" not in cls.__dict__:
        cls.supports_masking = True  # Keras: overriding compute_mask means the layer supports masking


def _install() -> None:
    todo = [Layer]
    while todo:
        cls = todo.pop()
        _wrap_class(cls)
        todo.extend(cls.__subclasses__())

    def __init_subclass__(cls, **kw):
        super(Layer, cls).__init_subclass__(**kw)
        _wrap_class(cls)

    Layer.__init_subclass__ = classmethod(__init_subclass__)


# --- the functional model ------------------------------------------------------------------------


def _map_graph(inputs: list, outputs: list):
    """Keras 3's ``map_graph``: the nodes in topological order and the layers by decreasing depth
    (ties in traversal order from the outputs)."""
    input_ids = {id(t) for t in inputs}
    finished, in_progress, order, layer_index = set(), set(), [], {}

    def visit(t):
        node = t._node
        if id(node) in finished:
            return
        if id(node) in in_progress:
            raise ValueError(f"functional API: the graph has a cycle at layer '{node.layer.name}'")
        layer_index.setdefault(id(node.layer), (len(layer_index), node.layer))
        in_progress.add(id(node))
        if id(t) not in input_ids:
            if node.is_input:
                raise ValueError(f"Graph disconnected: cannot obtain the value of {t.name} (an sf.keras.Input): it is "
                                 f"not among the model's inputs {[i.name for i in inputs]}")
            for parent in node.inputs:
                visit(parent)
        finished.add(id(node))
        in_progress.discard(id(node))
        order.append((node, t))

    for t in outputs:
        visit(t)
    node_depth, layer_depth = {}, {}
    for node, _ in reversed(order):
        depth = max(node_depth.setdefault(id(node), 0), layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = node_depth[id(node)] = depth
        for parent in node.parents:
            node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for t in inputs:  # inputs not connected to the outputs
        if id(t._node.layer) not in layer_depth:
            layer_depth[id(t._node.layer)] = 0
            layer_index[id(t._node.layer)] = (-1, t._node.layer)
    layers = sorted(layer_index.values(), key=lambda p: (-layer_depth[id(p[1])], p[0]))
    nodes, seen = [], set()
    for node, t in order:  # the nodes to replay (an input tensor's own node is fed, not run)
        if id(t) in input_ids or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
    return nodes, [layer for _, layer in layers]


def _takes(layer, arg: str) -> bool:
    try:
        params = inspect.signature(layer.__call__).parameters
    except (TypeError, ValueError):
        return False
    return arg in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _call_node(node, args, kwargs, graph_masks, real):
    """Run one node. Keras records a layer's ``mask``/``<name>_mask`` arguments in its node when
    the graph is built, so on replay they are the masks propagated through the graph (each
    ``compute_mask`` on them), not what the tensors carry then: a MultiHeadAttention clears its
    inputs' masks as it runs, yet a later GlobalAveragePooling1D still gets the mask. The other
    layers read the masks the tensors carry (api/keras_masking.py), as Keras's do."""
    layer = node.layer
    if not graph_masks and not masking.supports_masking(layer):
        return layer(*args, **kwargs)  # no graph mask yet, none made here
    fn = type(layer).__call__
    symbolic = masking.bind(layer, fn, node.args, node.kwargs)
    if symbolic is not None:
        names, arguments = symbolic
        kwargs.update(masking.fill_masks(names, arguments, lambda kt: graph_masks.get(id(kt)),
                                         leaf=lambda v: isinstance(v, KerasTensor)))
    out = layer(*args, **kwargs)
    outputs = _flatten(node.outputs)
    if symbolic is None or not masking.supports_masking(layer):
        return out
    first_kt = next(iter(arguments.values()))
    previous = kwargs.get("mask")
    if previous is None:
        previous = masking.map_structure(lambda kt: graph_masks.get(id(kt)), first_kt)
    first = _map(real, first_kt)
    carried = masking.map_masks(first)
    flat_out = _flatten(out)
    if all(p is c for p, c in zip(_flatten(previous), _flatten(carried))):
        masks = [masking.get_mask(t) for t in flat_out]  # the same as the tensors carry
    else:
        masks = _flatten(layer.compute_mask(first, previous))
    for kt, m in zip(outputs, masks):
        if m is not None:
            graph_masks[id(kt)] = m
    return out


class Functional(Model):
    """``sf.keras.Model(inputs, outputs)``: a graph of layer calls replayed on real tensors."""

    def __init__(self, inputs, outputs, name: str | None = None):
        super().__init__(name=name or (auto_name("Functional") if type(self) is Functional else None))
        for what, s in (("inputs", inputs), ("outputs", outputs)):
            bad = [type(t).__name__ for t in _flatten(s) if not isinstance(t, KerasTensor)]
            if bad or not _flatten(s):
                raise ValueError(f"functional Model(inputs, outputs): {what} must be KerasTensors (from sf.keras.Input "
                                 f"and layers called on them), a list or a dict of them; got {bad or 'nothing'}")
        if isinstance(outputs, tuple):
            outputs = list(outputs)
        self._sf_inputs, self._sf_outputs = inputs, outputs
        self._sf_flat_inputs, self._sf_flat_outputs = _flatten(inputs), _flatten(outputs)
        self._sf_nodes, self._sf_layers = _map_graph(self._sf_flat_inputs, self._sf_flat_outputs)
        self._sf_training = {id(n): _takes(n.layer, "training") for n in self._sf_nodes}
        self.built = True

    # --- structure ---------------------------------------------------------------------------

    @property
    def inputs(self) -> list:
        return list(self._sf_flat_inputs)

    @property
    def outputs(self) -> list:
        return list(self._sf_flat_outputs)

    @property
    def layers(self) -> list:
        return list(self._sf_layers)

    def _layer_list(self) -> list:
        return self.layers

    @property
    def weights(self) -> list:
        out, seen = [], set()
        for layer in self._sf_layers:
            for w in layer.weights:
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
        return out

    @property
    def losses(self) -> list:
        """Its layers' regularization penalties (the layers are not attributes Layer.losses walks)."""
        return [p for layer in self._sf_layers for p in layer.losses]

    @property
    def input_shape(self):
        shapes = [tuple(t.shape) for t in self._sf_flat_inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [tuple(t.shape) for t in self._sf_flat_outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _output_shape_of(self, layer):
        """The output shape(s) of ``layer``'s node in this graph (its first one), for summary()."""
        if isinstance(layer, InputLayer):
            return tuple(layer.output.shape)
        for node in self._sf_nodes:
            if node.layer is layer:
                shapes = [tuple(t.shape) for t in _flatten(node.outputs)]
                return shapes[0] if len(shapes) == 1 else shapes
        return None

    def get_layer(self, name: str):
        for layer in self._sf_layers:
            if layer.name == name:
                return layer
        raise ValueError(f"no layer named '{name}' in model '{self.name}'")

    # --- the call ----------------------------------------------------------------------------

    def _feed(self, inputs) -> list:
        spec, flat = self._sf_inputs, self._sf_flat_inputs
        if isinstance(spec, dict):
            if not isinstance(inputs, dict):
                raise ValueError(f"model '{self.name}' takes a dict of inputs with keys {sorted(spec)}, got "
                                 f"{type(inputs).__name__}")
            missing = sorted(set(spec) - set(inputs))
            if missing:
                raise ValueError(f"model '{self.name}': missing input(s) {missing}; it takes {sorted(spec)}")
            given = [inputs[k] for k in sorted(spec, key=str)]
        elif isinstance(inputs, dict):
            names = [t.name for t in flat]
            if sorted(inputs) != sorted(names):
                raise ValueError(f"model '{self.name}' takes inputs named {names}, got keys {sorted(inputs)}")
            given = [inputs[n] for n in names]
        else:
            given = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(given) != len(flat):
            raise ValueError(f"model '{self.name}' expects {len(flat)} input(s), but it received {len(given)} input "
                             "tensor(s)")
        fed = []
        for kt, v in zip(flat, given):
            mask = masking.get_mask(v)  # kept through the conversions, as Keras's _standardize_inputs
            if isinstance(v, Variable):
                v = v.read_value()
            v = v if isinstance(v, Tensor) else tf_names._t(np.asarray(v, dtype=np.dtype(kt.dtype)))
            if v.dtype.name != kt.dtype:
                v = tf_names.cast(v, kt.dtype)
            masking.set_mask(v, mask)
            if v.shape.rank is not None and v.shape.rank != len(kt.shape):
                raise ValueError(f"model '{self.name}': input {kt.name} expects rank {len(kt.shape)} {kt.shape}, got "
                                 f"shape {v.shape}")
            fed.append(v)
        return fed

    def call(self, inputs, training=None, mask=None):
        fed = self._feed(inputs)
        if mask is not None:  # Keras's: the given masks ride on the inputs, and flow from there
            for v, m in zip(fed, _flatten(mask)):
                if m is not None:
                    masking.set_mask(v, m)
        values = {id(kt): v for kt, v in zip(self._sf_flat_inputs, fed)}
        graph_masks: dict = {}  # id(KerasTensor) -> its mask as the graph was built (see _call_node)

        def real(v):
            return values[id(v)] if isinstance(v, KerasTensor) else v

        for node in self._sf_nodes:
            args, kwargs = _map(real, (node.args, node.kwargs))
            if self._sf_training[id(node)] and kwargs.get("training") is None:
                kwargs["training"] = training
            out = _call_node(node, args, kwargs, graph_masks, real)
            for kt, v in zip(_flatten(node.outputs), _flatten(out)):
                values[id(kt)] = v
        result = _map(real, self._sf_outputs)
        return result
    def __call__(self, inputs, training=None, mask=None):
        return self.call(inputs, training=training, mask=mask)

    # --- training: one input, one output -----------------------------------------------------

    def _one_to_one(self, what: str) -> None:
        if len(self._sf_flat_inputs) != 1 or len(self._sf_flat_outputs) != 1:
            raise ValueError(f"{what}: functional models with several inputs or outputs are not supported by "
                             f"sf.keras's {what} ({len(self._sf_flat_inputs)} input(s), {len(self._sf_flat_outputs)} "
                             "output(s)); call the model in a custom training loop with sf.GradientTape")

    @staticmethod
    def _unwrap(x):
        if isinstance(x, dict) and len(x) == 1:
            return next(iter(x.values()))
        if isinstance(x, (list, tuple)) and len(x) == 1 and not isinstance(x[0], tuple):
            return x[0]
        return x

    def fit(self, x=None, y=None, *args, **kwargs):
        self._one_to_one("fit")
        return super().fit(self._unwrap(x), self._unwrap(y), *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        self._one_to_one("evaluate")
        return super().evaluate(self._unwrap(x), self._unwrap(y), *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        if len(self._sf_flat_inputs) != 1:
            raise ValueError(f"predict: functional models with several inputs are not supported by sf.keras's predict "
                             f"({len(self._sf_flat_inputs)} inputs); call the model on the inputs instead")
        return super().predict(self._unwrap(x), *args, **kwargs)

    def train_on_batch(self, x, y=None, *args, **kwargs):
        self._one_to_one("train_on_batch")
        return super().train_on_batch(self._unwrap(x), self._unwrap(y), *args, **kwargs)

    def test_on_batch(self, x, y=None, *args, **kwargs):
        self._one_to_one("test_on_batch")
        return super().test_on_batch(self._unwrap(x), self._unwrap(y), *args, **kwargs)


_FUNCTIONAL_SUBCLASSES: dict = {}


def functional_subclass(cls):
    """``cls`` (a subclass of sf.keras.Model) as a functional model: a class deriving from both,
    so ``cls``'s methods (train_step, a custom compile...) come before Functional's."""
    made = _FUNCTIONAL_SUBCLASSES.get(cls)
    if made is None:
        made = type(cls.__name__, (cls, Functional), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _FUNCTIONAL_SUBCLASSES[cls] = made
    return made


_install()
