"""Write tests/api/data/keras_layers_extra.npz: Keras 3's results for the cases of
tests/api/test_keras_layers_extra.py (run with Keras installed:
PYTHONPATH=. python -m scripts.make_keras_layers_extra_fixture). Per layer case: the (perturbed)
weights set into the layer, its outputs, the gradients of sum(output * probe) with respect to
the float inputs and trainable weights, the activity penalty, adapted bin boundaries and supports_masking; per
model: the initial weights, the first epoch's loss, the weights and predictions after it."""

import keras
import numpy as np
import tensorflow as tf

from tests.api.test_keras_layers_extra import DATA, cases, masked_input, masked_model, models, perturb, probe


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def layer_results(out: dict) -> None:
    for name, (make, x, kwargs) in cases(keras.layers).items():
        layer = make()
        xs = x if isinstance(x, list) else None
        args = [tf.constant(a) for a in xs] if xs is not None else tf.constant(x)
        layer(args, **kwargs)
        weights = perturb(name, layer.get_weights(), [w.trainable for w in layer.weights])
        layer.set_weights(weights)
        for i, w in enumerate(weights):
            out[f"{name}/w{i}"] = w
        out[f"{name}/masking"] = np.bool_(layer.supports_masking)
        if getattr(layer, "num_bins", None):
            out[f"{name}/bins"] = np.asarray(layer.bin_boundaries, np.float32)
        watched = [a for a in (args if xs is not None else [args]) if a.dtype.is_floating]
        trainable = list(layer.trainable_weights)
        with tf.GradientTape() as tape:
            tape.watch(watched)
            outs = _flat(layer(args, **kwargs))
            loss = None
            for j, o in enumerate(outs):
                if o.dtype.is_floating:
                    term = tf.reduce_sum(o * probe(f"{name}/{j}", o.shape))
                    loss = term if loss is None else loss + term
        for j, o in enumerate(outs):
            out[f"{name}/out{j}"] = np.asarray(o)
        if layer.losses:
            out[f"{name}/loss"] = np.float32(sum(float(p) for p in layer.losses))
        if loss is not None and (watched or trainable) and "area" not in name:  # (TF: ResizeArea has no gradient)
            grads = tape.gradient(loss, watched + trainable)
            for j, (g, v) in enumerate(zip(grads, watched + trainable)):
                out[f"{name}/g{j}"] = np.zeros(v.shape, np.float32) if g is None else np.asarray(g)


def model_results(out: dict) -> None:
    for name, (make, x, y) in models(keras).items():
        keras.utils.set_random_seed(0)
        model = make()
        for i, w in enumerate(model.get_weights()):
            out[f"{name}/init{i}"] = w
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        history = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
        out[f"{name}/loss"] = np.float32(history.history["loss"][0])
        for i, w in enumerate(model.get_weights()):
            out[f"{name}/final{i}"] = w
        out[f"{name}/pred"] = model.predict(x, verbose=0)
    keras.utils.set_random_seed(0)
    model = masked_model(keras)
    weights = perturb("masked", model.get_weights(), [True] * len(model.weights))
    model.set_weights(weights)
    for i, w in enumerate(weights):
        out[f"masked/w{i}"] = w
    out["masked/out"] = np.asarray(model(masked_input()))


if __name__ == "__main__":
    results: dict = {}
    layer_results(results)
    model_results(results)
    np.savez_compressed(DATA, **results)
    print("wrote", DATA, len(results), "arrays")
