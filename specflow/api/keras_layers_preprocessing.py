"""Keras 3's preprocessing layers on sf ops, with Keras's arguments and arithmetic:
``Rescaling``, ``Normalization`` (``adapt`` over an array or an iterable of batches, Keras's
running combination of batch moments), ``CategoryEncoding``, ``Discretization`` (``adapt``: Keras's
approximate quantile summaries), ``Resizing`` and ``CenterCrop`` (channels-last or
channels-first images, batched or single). Float inputs are computed in float32 (Keras's compute
dtype); the dense outputs only (Keras's ``sparse=True`` is refused)."""

from __future__ import annotations

import math

import numpy as np

from specflow.api import image, tf_names
from specflow.api.keras import Layer
from specflow.api.op_functions import call
from specflow.api.tensor import Tensor
from specflow.api.variables import Variable

_EPSILON = 1e-7  # Keras's backend epsilon


def _float(x):
    """Keras's input conversion: floats (and ints) in float32, the compute dtype."""
    x = tf_names._t(x)
    return x if x.dtype.name == "float32" else tf_names.cast(x, "float32")


def _no_sparse(sparse, layer: str) -> None:
    if sparse:
        raise ValueError(f"layer '{layer}': sparse=True outputs are not supported by sf.keras (dense outputs only)")


class Rescaling(Layer):
    """float32(x) * scale + offset."""

    supports_masking = True

    def __init__(self, scale, offset=0.0, name: str | None = None):
        super().__init__(name)
        self.scale, self.offset = scale, offset
        self.built = True

    def call(self, x, training=None):
        scale = np.asarray(self.scale, np.float32)
        offset = np.asarray(self.offset, np.float32)
        return _float(x) * scale + offset


class Normalization(Layer):
    """(x - mean) / max(sqrt(variance), 1e-7) per position of ``axis`` (``invert``: the reverse,
    mean + x * max(sqrt(variance), 1e-7)). ``mean``/``variance`` given: constants (no weights);
    otherwise the non-trainable weights mean, variance and count (int64, kept at 0 as Keras's),
    set by ``adapt(data)``: Keras's numpy mean and (biased) variance of an array, or its running
    combination of the batches of an iterable (the first element of tuple batches)."""

    supports_masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert: bool = False, name: str | None = None):
        super().__init__(name)
        self.axis = () if axis is None else (int(axis),) if np.ndim(axis) == 0 else tuple(int(a) for a in axis)
        self.input_mean, self.input_variance, self.invert = mean, variance, invert
        self._build_input_shape = None
        if (mean is not None) != (variance is not None):
            raise ValueError("When setting values directly, both `mean` and `variance` must be set. "
                             f"Received: mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError("When setting values directly, `mean` and `variance` must have the same shape. "
                                 f"Received: mean shape {np.shape(mean)} and variance shape {np.shape(variance)}")
            if np.ndim(mean) > len(self.axis):
                raise ValueError(f"The rank of `mean` must be less than or equal to the number of axes "
                                 f"({len(self.axis)}). Received: mean shape {np.shape(mean)} for axis {self.axis}")

    def build(self, input_shape):
        if input_shape is None:
            raise ValueError(f"layer '{self.name}' needs an input of known rank")
        ndim = len(input_shape)
        self._build_input_shape = tuple(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(f"All `axis` values must be in the range [-ndim, ndim). Received inputs with ndim={ndim}, "
                             f"while axis={self.axis}")
        self._keep_axis = tuple(sorted(a % ndim for a in self.axis))
        for d in self._keep_axis:
            if input_shape[d] is None:
                raise ValueError(f"All `axis` values to be kept must have a known shape. Received axis={self.axis}, "
                                 f"inputs.shape={tuple(input_shape)}, with unknown axis at index {d}")
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = [int(input_shape[d]) if d in self._keep_axis else 1 for d in range(ndim)]
        self._mean_and_var_shape = tuple(int(input_shape[d]) for d in self._keep_axis)
        if self.input_mean is None:
            self._own_weight("adapt_mean", np.zeros(self._mean_and_var_shape, np.float32), trainable=False)
            self._own_weight("adapt_variance", np.ones(self._mean_and_var_shape, np.float32), trainable=False)
            self._own_weight("count", np.zeros((), np.int64), trainable=False)
            return
        mean, variance = (np.asarray(v, np.float32) for v in (self.input_mean, self.input_variance))
        if mean.ndim:  # aligned with the kept axes from the right, as Keras's
            expanded = [1] * ndim
            for i in range(1, mean.ndim + 1):
                expanded[self._keep_axis[-i]] = mean.shape[-i]
            mean, variance = mean.reshape(expanded), variance.reshape(expanded)
        self._mean = np.broadcast_to(mean, self._broadcast_shape).astype(np.float32)
        self._variance = np.broadcast_to(variance, self._broadcast_shape).astype(np.float32)

    def adapt(self, data) -> None:
        batches = None
        if isinstance(data, (np.ndarray, Tensor, Variable)):
            data = np.asarray(data.numpy() if hasattr(data, "numpy") else data)
            shape = data.shape
        elif hasattr(data, "__iter__"):
            batches = [np.asarray(_first(b).numpy() if hasattr(_first(b), "numpy") else _first(b), np.float32)
                       for b in data]
            if not batches:
                raise ValueError("adapt() received an empty iterable (no batches). Expected at least one batch.")
            shape = batches[0].shape
        else:
            raise TypeError(f"Unsupported data type: {type(data)}. `adapt` supports arrays, tensors and iterables of "
                            "batches (e.g. a list, a generator or an sf.data.Dataset).")
        if self.input_mean is not None:
            raise ValueError(f"layer '{self.name}' was given `mean` and `variance`; it has nothing to adapt")
        if not self.built:
            self.build(list(shape))
            self.built = True
        for b in batches if batches is not None else [data]:
            if any(b.shape[d] != self._build_input_shape[d] for d in self._keep_axis):
                raise ValueError(f"The layer was built with input_shape={self._build_input_shape}, but adapt() is being "
                                 f"called with data with an incompatible shape, data.shape={b.shape}")
        if batches is None:
            mean, var = np.mean(data, axis=self._reduce_axis), np.var(data, axis=self._reduce_axis)
        else:  # Keras's lack-of-fit combination, batch by batch
            mean = np.zeros(self._mean_and_var_shape, np.float32)
            var = np.zeros(self._mean_and_var_shape, np.float32)
            total = 0
            for b in batches:
                bm, bv = np.mean(b, axis=self._reduce_axis), np.var(b, axis=self._reduce_axis)
                count = math.prod(b.shape[d] for d in self._reduce_axis) if self._reduce_axis else 1
                total += count
                w = float(count) / total
                new_mean = mean * (1.0 - w) + bm * w
                var = (var + (mean - new_mean) ** 2) * (1.0 - w) + (bv + (bm - new_mean) ** 2) * w
                mean = new_mean
        self.adapt_mean.assign(np.asarray(mean, np.float32).reshape(self._mean_and_var_shape))
        self.adapt_variance.assign(np.asarray(var, np.float32).reshape(self._mean_and_var_shape))

    def call(self, x, training=None):
        x = _float(x)
        if self.input_mean is not None:
            mean, variance = self._mean, self._variance
        else:
            mean = tf_names.reshape(self.adapt_mean, self._broadcast_shape)
            variance = tf_names.reshape(self.adapt_variance, self._broadcast_shape)
        std = tf_names.maximum(tf_names.sqrt(variance), np.float32(_EPSILON))
        return mean + x * std if self.invert else (x - mean) / std


def _first(batch):
    return batch[0] if isinstance(batch, (tuple, list)) else batch


def encode(x, output_mode: str, depth: int, count_weights=None):
    """Keras's encode_categorical_inputs (dense): "int" as is; "one_hot" ([..., 1] squeezed
    first); "multi_hot"/"count" over axis 1 (axis 0 of a 1-D input)."""
    x = tf_names._t(x)
    if output_mode == "int":
        return tf_names.cast(x, "int32")
    if x.dtype.name not in ("int32", "int64"):
        x = tf_names.cast(x, "int32")
    if x.shape.rank == 0:
        x = tf_names.expand_dims(x, -1)
    if output_mode == "one_hot":
        if x.shape.rank > 1 and x.shape[-1] == 1:
            x = tf_names.squeeze(x, [-1])
        return tf_names.one_hot(x, depth, dtype="float32")
    axis = 1 if x.shape.rank > 1 else 0
    hot = tf_names.one_hot(x, depth, dtype="float32")
    if output_mode == "multi_hot":
        return tf_names.reduce_max(hot, axis=axis)
    if count_weights is not None:
        hot = hot * tf_names.expand_dims(_float(count_weights), -1)
    return tf_names.reduce_sum(hot, axis=axis)


class CategoryEncoding(Layer):
    """Integer ids in [0, num_tokens) as "multi_hot" (default), "one_hot" or "count" float32 rows;
    ``count_weights`` (with "count") weighs each id."""

    def __init__(self, num_tokens=None, output_mode: str = "multi_hot", sparse: bool = False,
                 name: str | None = None):
        super().__init__(name)
        output_mode = "multi_hot" if output_mode == "binary" else output_mode
        if output_mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        _no_sparse(sparse, self.name)
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, sparse
        self.built = True

    def call(self, x, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. "
                             f"Received `count_weights={count_weights}`.")
        return encode(x, self.output_mode, self.num_tokens, count_weights)


class Discretization(Layer):
    """The bucket of each value: how many ``bin_boundaries`` are <= it (int32), or its
    one_hot/multi_hot/count encoding over len(bin_boundaries) + 1 buckets. ``num_bins`` with
    ``adapt(data)``: boundaries from Keras's approximate quantile summaries (``epsilon``)."""

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon: float = 0.01, output_mode: str = "int",
                 sparse: bool = False, dtype=None, name: str | None = None):
        super().__init__(name)
        if sparse and output_mode == "int":
            raise ValueError("`sparse=True` may only be used if `output_mode` is `'one_hot'`, `'multi_hot'`, or "
                             f"`'count'`. Received: sparse={sparse} and output_mode={output_mode}")
        _no_sparse(sparse, self.name)
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise ValueError("Invalid value for argument `output_mode`. Expected one of ('int', 'one_hot', "
                             f"'multi_hot', 'count'). Received: output_mode={output_mode}")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError("Both `num_bins` and `bin_boundaries` should not be set. Received: "
                             f"`num_bins={num_bins}` and `bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or `bin_boundaries`.")
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in bin_boundaries]
        self.num_bins, self.epsilon, self.output_mode, self.sparse = num_bins, float(epsilon), output_mode, sparse
        self.summary = None if self.bin_boundaries else np.array([[], []], np.float32)
        self.built = True

    def adapt(self, data, steps=None) -> None:
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, "
                             "use `num_bins` instead.")
        self.summary = np.array([[], []], np.float32)
        if hasattr(data, "__iter__") and not isinstance(data, (np.ndarray, Tensor, Variable)):
            for i, batch in enumerate(data):
                if steps is not None and i >= steps:
                    break
                self._update(batch)
        else:
            self._update(data)
        self.bin_boundaries = _compress(self.summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def _update(self, batch) -> None:
        values = np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch).astype(np.float32)
        merged = np.concatenate((_summarize(values, self.epsilon), self.summary), axis=1)
        self.summary = _compress(np.take(merged, np.argsort(merged[0]), axis=1), self.epsilon)

    def call(self, x, training=None):
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` argument at construction time or call "
                             "`adapt(dataset)` before you can start using the `Discretization` layer.")
        x = tf_names._t(x)
        if x.dtype.is_floating and x.dtype.name != "float32":
            x = tf_names.cast(x, "float32")
        elif not x.dtype.is_floating and x.dtype.name not in ("int32", "int64"):
            x = tf_names.cast(x, "int32")
        indices = call("Bucketize", x, boundaries=list(self.bin_boundaries))
        return encode(indices, self.output_mode, len(self.bin_boundaries) + 1)


def _summarize(values, epsilon):
    """Keras's: every step-th sorted value, each standing for ``step`` values."""
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size / (1.0 / epsilon), 1)
    boundaries = values[int(step - 1)::int(step)]
    return np.stack([boundaries, np.ones_like(boundaries) * step])


def _compress(summary, epsilon):
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum_weights = summary[1].cumsum()
    cum_weight_percents = cum_weights / cum_weights[-1]
    new_bins = np.interp(percents, cum_weight_percents, summary[0])
    cum_weights = np.interp(percents, cum_weight_percents, cum_weights)
    new_weights = cum_weights - np.concatenate((np.array([0]), cum_weights[:-1]))
    return np.stack((new_bins, new_weights)).astype("float32")


# --- images --------------------------------------------------------------------------------------


class _ImageLayer(Layer):
    def _images(self, x):
        """(channels-last batched images, undo) for a rank-3 or -4 input in ``data_format``."""
        x = tf_names._t(x)
        if x.shape.rank not in (3, 4):
            raise ValueError(f"Expected image tensor to have rank 3 (single image) or 4 (batch of images). "
                             f"Received: data.shape={x.shape}")
        single = x.shape.rank == 3
        if single:
            x = tf_names.expand_dims(x, 0)
        first = self.data_format == "channels_first"
        if first:
            x = tf_names.transpose(x, [0, 2, 3, 1])

        def undo(y):
            if first:
                y = tf_names.transpose(y, [0, 3, 1, 2])
            return tf_names.squeeze(y, [0]) if single else y

        return x, undo

    def _hw(self, x):
        h, w = x.shape[1], x.shape[2]
        if h is None or w is None:
            raise ValueError(f"layer '{self.name}' needs the images' height and width known, got {x.shape}")
        return int(h), int(w)


def _data_format(value) -> str:
    fmt = "channels_last" if value is None else str(value).lower()
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {value!r}")
    return fmt


def _crop_box(h: int, w: int, th: int, tw: int):
    """Keras's largest centered crop of the target's aspect ratio: (top, left, height, width)."""
    ch = max(min(h, int(float(w * th) / tw)), 1)
    cw = max(min(w, int(float(h * tw) / th)), 1)
    return int(float(h - ch) / 2), int(float(w - cw) / 2), ch, cw


_INTERPOLATIONS = ("bilinear", "nearest", "lanczos3", "lanczos5", "bicubic", "area")


class Resizing(_ImageLayer):
    """tf.image.resize to (height, width) with ``interpolation``; ``crop_to_aspect_ratio``: the
    largest centered crop of that aspect first; ``pad_to_aspect_ratio``: ``fill_value`` bands
    first (as many rows/columns each side, Keras's). Integer images come back rounded in their
    dtype (clipped to its range)."""

    def __init__(self, height: int, width: int, interpolation: str = "bilinear", crop_to_aspect_ratio: bool = False,
                 pad_to_aspect_ratio: bool = False, fill_mode: str = "constant", fill_value: float = 0.0,
                 antialias: bool = False, data_format=None, name: str | None = None):
        super().__init__(name)
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(f"Invalid value for argument `interpolation`. Expected of one {_INTERPOLATIONS}. "
                             f"Received: interpolation={interpolation}")
        if fill_mode != "constant":
            raise ValueError(f"Invalid value for argument `fill_mode`. Only `'constant'` is supported. "
                             f"Received: fill_mode={fill_mode}")
        if pad_to_aspect_ratio and crop_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.")
        self.height, self.width, self.interpolation = int(height), int(width), interpolation
        self.crop_to_aspect_ratio, self.pad_to_aspect_ratio = crop_to_aspect_ratio, pad_to_aspect_ratio
        self.fill_mode, self.fill_value, self.antialias = fill_mode, fill_value, bool(antialias)
        self.data_format = _data_format(data_format)
        self.built = True

    def call(self, x, training=None):
        x = tf_names._t(x)
        if x.dtype.is_floating and x.dtype.name != "float32":
            x = tf_names.cast(x, "float32")
        dtype = x.dtype
        x, undo = self._images(x)
        th, tw = self.height, self.width
        if self.crop_to_aspect_ratio:
            top, left, ch, cw = _crop_box(*self._hw(x), th, tw)
            x = x[:, top:top + ch, left:left + cw, :]
        elif self.pad_to_aspect_ratio:
            h, w = self._hw(x)
            ph = max(h, int(float(w * th) / tw))
            pw = max(w, int(float(h * tw) / th))
            top, left = int(float(ph - h) / 2), int(float(pw - w) / 2)
            x = tf_names.pad(x, [[0, 0], [top, top], [left, left], [0, 0]],
                             constant_values=np.asarray(self.fill_value, dtype.numpy))
        y = image.resize(x, (th, tw), method=self.interpolation, antialias=self.antialias)
        if y.dtype != dtype:
            if dtype.is_integer:
                info = np.iinfo(dtype.numpy)
                y = tf_names.clip_by_value(tf_names.round(y), np.float32(info.min), np.float32(info.max))
            y = tf_names.cast(y, dtype)
        return undo(y)


class CenterCrop(_ImageLayer):
    """The centered (height, width) crop, in float32; an image smaller than that is instead
    cropped to the target's aspect ratio and resized (bilinear), as Keras's smart_resize."""

    def __init__(self, height: int, width: int, data_format=None, name: str | None = None):
        super().__init__(name)
        self.height, self.width = int(height), int(width)
        self.data_format = _data_format(data_format)
        self.built = True

    def call(self, x, training=None):
        x, undo = self._images(_float(x))
        h, w = self._hw(x)
        th, tw = self.height, self.width
        if h >= th and w >= tw:
            top, left = (h - th) // 2, (w - tw) // 2
            return undo(x[:, top:top + th, left:left + tw, :])
        top, left, ch, cw = _crop_box(h, w, th, tw)
        return undo(image.resize(x[:, top:top + ch, left:left + cw, :], (th, tw), method="bilinear"))


LAYERS = (Rescaling, Normalization, CategoryEncoding, Discretization, Resizing, CenterCrop)
