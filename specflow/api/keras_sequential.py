"""``sf.keras.Sequential``: Keras 3's stack of layers with the training API (api/keras_model.py).

As in Keras, an ``sf.keras.Input`` as the first entry, a first layer given ``input_shape=`` or
``input_dim=``, or ``build(input_shape)`` builds the model at once: each layer is called on the
symbolic input (api/keras_functional.py: built on zeros), so the weights exist and
``output_shape``, ``count_params()`` and ``summary()`` answer. Otherwise the first call builds it
(the layers on the real input). A call runs the layers in turn; each layer reads the mask its input
carries (api/keras_masking.py), so ``Embedding(mask_zero=True)`` masks what follows as in a
functional model, and an input of another dtype than the ``Input``'s is cast to it."""

from __future__ import annotations

import numpy as np

from specflow.api import tf_names
from specflow.api.keras import Layer, _parameters
from specflow.api.keras_functional import Input, InputLayer, KerasTensor
from specflow.api.keras_masking import set_mask
from specflow.api.keras_model import TrainingMixin
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable
from specflow.errors import GraphError


class Sequential(TrainingMixin, Layer):
    def __init__(self, layers=None, name: str | None = None, trainable: bool = True):
        super().__init__(name)
        self.layers: list = []
        self._sf_input = None  # the KerasTensor of its Input, once it has one
        self._sf_shapes: dict = {}  # id(layer) -> its output shape (batch None), once built
        for layer in layers or []:
            self.add(layer)

    # --- structure ---------------------------------------------------------------------------

    def add(self, layer) -> None:
        if isinstance(layer, KerasTensor) and isinstance(layer._node.layer, InputLayer):
            layer = layer._node.layer
        if isinstance(layer, InputLayer):
            if self.layers or self._sf_input is not None:
                raise ValueError(f"Sequential model '{self.name}' has already been configured to use input shape "
                                 f"{self.input_shape}. You cannot add a different Input layer to it.")
            self._sf_input = layer.output
            return
        if not isinstance(layer, Layer):
            raise ValueError(f"Only instances of `keras.Layer` can be added to a Sequential model. Received: {layer!r} "
                             f"(of type {type(layer).__name__})")
        self.layers.append(layer)
        shape = layer.__dict__.get("_sf_input_shape_arg")
        if len(self.layers) == 1 and self._sf_input is None and shape is not None:
            self._sf_input = Input(shape)
        if self._sf_input is not None:
            self._build_symbolic()

    def pop(self):
        layer = self.layers.pop()
        if self._sf_input is not None and self.layers:
            self._build_symbolic()
        return layer

    def build(self, input_shape=None) -> None:
        """Keras's: make every layer's weights for inputs of ``input_shape`` (batch dim included)."""
        if input_shape is None:
            if self._sf_input is None:
                raise ValueError(f"Sequential model '{self.name}' cannot be built without an input shape: give "
                                 "build(input_shape), or start the model with sf.keras.Input(shape)")
        else:
            shape = tuple(None if d is None else int(d) for d in input_shape)
            if self._sf_input is not None:
                if tuple(self._sf_input.shape) != shape:
                    raise ValueError(f"Sequential model '{self.name}' has already been configured to use input shape "
                                     f"{self._sf_input.shape}. You cannot build it with input_shape {shape}")
            else:
                self._sf_input = Input(shape[1:], batch_size=shape[0])
        if not self.layers:
            raise ValueError(f"Sequential model {self.name} cannot be built because it has no layers. Call "
                             "`model.add(layer)`.")
        self._build_symbolic()

    def _build_symbolic(self) -> None:
        if not self.layers:
            return
        x = self._sf_input
        self.__dict__["_sf_input_spec"] = _spec(x)  # what model.export serves
        for layer in self.layers:
            x = layer(x)
            self._sf_shapes[id(layer)] = _first(x).shape
        self.built = True

    @property
    def inputs(self) -> list:
        return [self._sf_input] if self._sf_input is not None else []

    @property
    def input_shape(self):
        if self._sf_input is not None:
            return tuple(self._sf_input.shape)
        spec = self.__dict__.get("_sf_input_spec")
        if spec is None:
            raise AttributeError(f"Sequential model '{self.name}' has no defined input shape yet.")
        return tuple(spec.shape.as_list())

    @property
    def output_shape(self):
        if not self.layers or id(self.layers[-1]) not in self._sf_shapes:
            raise AttributeError(f"Sequential model '{self.name}' has no defined outputs yet (build it, or call it "
                                 "once).")
        return tuple(self._sf_shapes[id(self.layers[-1])])

    def _output_shape_of(self, layer):
        return self._sf_shapes.get(id(layer))

    # --- the call ----------------------------------------------------------------------------

    def __call__(self, inputs, training: bool | None = None, mask=None):
        from specflow.api.keras_export import note_input

        x = self._standardize(inputs)
        note_input(self, x)
        if mask is not None:
            set_mask(x, mask)
        record = not self._sf_shapes
        for layer in self.layers:
            params = _parameters(layer.call if hasattr(layer, "call") else layer)
            kwargs = {"training": training} if training is not None and (params is None or "training" in params) \
                else {}
            x = layer(x, **kwargs)
            if record:
                out = _first(x)
                if isinstance(out, (Tensor, Variable)) and out.shape.rank is not None:
                    self._sf_shapes[id(layer)] = tuple(out.shape.as_list())  # the batch too, as Keras's build
        self.built = True
        return x

    def _standardize(self, x):
        """The input as a tensor of the Input's dtype (its mask kept)."""
        kt = self._sf_input
        if kt is None or isinstance(x, (list, tuple, dict)):
            return x
        if isinstance(x, Variable):
            x = x.read_value()
        if not isinstance(x, Tensor):
            return tf_names._t(np.asarray(x, dtype=np.dtype(kt.dtype) if kt.dtype != "bool" else bool))
        if x.dtype.name != kt.dtype:
            from specflow.api.keras_masking import get_mask

            mask, x = get_mask(x), tf_names.cast(x, kt.dtype)
            set_mask(x, mask)
        return x

    # --- weights -----------------------------------------------------------------------------

    @property
    def weights(self) -> list:
        out, seen = [], set()
        for layer in self.layers:
            for w in layer.weights:
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
        return out

    def set_weights(self, values) -> None:
        values = list(values)
        for layer in self.layers:
            n = len(layer.weights)
            layer.set_weights(values[:n])
            values = values[n:]
        if values:
            raise GraphError(f"Sequential.set_weights: {len(values)} value(s) left over")


def _first(x):
    return x[0] if isinstance(x, (list, tuple)) else x


def _spec(kt):
    from specflow.api.function import TensorSpec

    return TensorSpec([None, *kt.shape[1:]], kt.dtype)
