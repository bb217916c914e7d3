"""``sf.keras.layers.LSTM``, ``GRU`` and ``Bidirectional``: Keras 3's recurrent layers (weight
layouts, gate order, masking and ``go_backwards`` semantics), the time steps unrolled in Python
(the sequence length must be known), so they run eagerly and inside ``sf.function`` alike.

A masked step keeps the state and outputs the previous output (zeros with
``zero_output_for_mask``, which ``Bidirectional`` sets when returning sequences, as Keras does);
``go_backwards`` reads the sequence from the end and returns its outputs in that order."""

from __future__ import annotations

import numpy as np

from specflow.api import keras_initializers as initializers
from specflow.api import keras_random as random
from specflow.api import tf_names
from specflow.api.keras import Layer, _activation, _known
from specflow.errors import GraphError


class _RNN(Layer):
    gates = 4
    _seed_first = False
    supports_masking = True

    def __init__(self, units: int, activation="tanh", recurrent_activation="sigmoid", return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, zero_output_for_mask: bool = False,
                 name: str | None = None):
        super().__init__(name)
        self.units = int(units)
        self.activation, self.recurrent_activation = _activation(activation), _activation(recurrent_activation)
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.zero_output_for_mask = go_backwards, zero_output_for_mask
        self._draw_initializers()

    def _draw_initializers(self) -> None:
        """Keras's cell's default initializers (seeds from Python's ``random`` now) and the draw
        its SeedGenerator (for dropout) takes, in Keras's order (SimpleRNNCell's generator first)."""
        if self._seed_first:
            random.make_default_seed()
        self.kernel_initializer = initializers.GlorotUniform()
        self.recurrent_initializer = initializers.Orthogonal()
        if not self._seed_first:
            random.make_default_seed()

    def build(self, input_shape):
        n, u, g = _known(input_shape, "features", self.name), self.units, self.gates
        self._own_weight("kernel", initializers.make(self.kernel_initializer, (n, g * u)))
        self._own_weight("recurrent_kernel", initializers.make(self.recurrent_initializer, (u, g * u)))
        self._own_weight("bias", self._bias_init())

    def __call__(self, x, mask=None, training=None, initial_state=None):
        x = tf_names._t(x)
        if not self.built:
            self.build(x.shape.as_list() if x.shape.rank is not None else None)
            self.built = True
        steps = x.shape[1] if x.shape.rank == 3 else None
        if steps is None:
            raise GraphError(f"layer '{self.name}' needs a 3-D input with a known number of time steps, got {x.shape}")
        batch = tf_names.shape(x)[0]
        zeros = tf_names.zeros([batch, self.units], x.dtype)
        states = list(initial_state) if initial_state is not None else [zeros] * self._n_states
        output = zeros
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None  # Keras: the sequences' mask (one per input: the first)
        mask = None if mask is None else tf_names.cast(mask, "bool")
        outputs = []
        for t in (range(steps - 1, -1, -1) if self.go_backwards else range(steps)):
            new_output, new_states = self._step(x[:, t], states)
            if mask is None:
                output, states = new_output, new_states
            else:
                keep = mask[:, t:t + 1]
                states = [tf_names.where(keep, n, s) for n, s in zip(new_states, states)]
                output = tf_names.where(keep, new_output, zeros if self.zero_output_for_mask else output)
            outputs.append(output)
        result = tf_names.stack(outputs, axis=1) if self.return_sequences else output
        return [result, *states] if self.return_state else result

    def compute_mask(self, inputs, mask=None):
        """Keras's: the sequence mask stays on returned sequences; states carry none."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        output_mask = mask if self.return_sequences else None
        return [output_mask] + [None] * self._n_states if self.return_state else output_mask


class LSTM(_RNN):
    """Gates i, f, c, o in one kernel; bias initialised with the forget gate's at one."""

    _n_states = 2

    def _bias_init(self):
        u = self.units
        return np.concatenate([np.zeros(u), np.ones(u), np.zeros(2 * u)]).astype(np.float32)

    def _step(self, x, states):
        h, c = states
        z = tf_names.matmul(x, self.kernel) + tf_names.matmul(h, self.recurrent_kernel) + self.bias
        i, f, g, o = tf_names.split(z, 4, axis=1)
        c = self.recurrent_activation(f) * c + self.recurrent_activation(i) * self.activation(g)
        h = self.recurrent_activation(o) * self.activation(c)
        return h, [h, c]


class GRU(_RNN):
    """Keras's default GRU (reset_after=True): gates z, r, h; bias [input bias, recurrent bias]."""

    gates = 3
    _n_states = 1

    def _bias_init(self):
        return np.zeros((2, 3 * self.units), np.float32)

    def _step(self, x, states):
        (h,) = states
        mx = tf_names.matmul(x, self.kernel) + self.bias[0]
        mh = tf_names.matmul(h, self.recurrent_kernel) + self.bias[1]
        xz, xr, xh = tf_names.split(mx, 3, axis=1)
        hz, hr, hh = tf_names.split(mh, 3, axis=1)
        z = self.recurrent_activation(xz + hz)
        r = self.recurrent_activation(xr + hr)
        cand = self.activation(xh + r * hh)
        h = z * h + (1 - z) * cand
        return h, [h]


class Bidirectional(Layer):
    """A layer and its mirror (``go_backwards``), outputs merged (concat, sum, ave, mul)."""

    supports_masking = True

    def __init__(self, layer: _RNN, merge_mode: str = "concat", backward_layer: _RNN | None = None,
                 name: str | None = None):
        super().__init__(name)
        if merge_mode not in ("concat", "sum", "ave", "mul"):
            raise GraphError(f"Bidirectional merge_mode must be concat, sum, ave or mul, got {merge_mode!r}")
        if not layer.built:  # Keras builds its forward layer from the layer's config: new default seeds
            layer._draw_initializers()
        self.forward_layer = layer
        self.backward_layer = backward_layer or type(layer)(
            layer.units, return_sequences=layer.return_sequences, go_backwards=not layer.go_backwards,
            name=f"backward_{layer.name}")
        self.backward_layer.activation, self.backward_layer.recurrent_activation = (
            layer.activation, layer.recurrent_activation)
        for rnn in (self.forward_layer, self.backward_layer):
            rnn.zero_output_for_mask = rnn.return_sequences  # as Keras forces it
        self.merge_mode = merge_mode

    @property
    def return_sequences(self) -> bool:
        return self.forward_layer.return_sequences

    def __call__(self, x, mask=None, training=None):
        y = self.forward_layer(x, mask=mask)
        y_rev = self.backward_layer(x, mask=mask)
        if self.forward_layer.return_sequences:
            y_rev = tf_names.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            return tf_names.concat([y, y_rev], axis=-1)
        if self.merge_mode == "sum":
            return y + y_rev
        if self.merge_mode == "ave":
            return (y + y_rev) / 2
        return y * y_rev

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0] if mask else None
        return mask if self.return_sequences else None

    @property
    def weights(self) -> list:
        return self.forward_layer.weights + self.backward_layer.weights

    def set_weights(self, values) -> None:
        values = list(values)
        n = len(self.forward_layer.weights)
        self.forward_layer.set_weights(values[:n])
        self.backward_layer.set_weights(values[n:])

