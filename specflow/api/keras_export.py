"""Keras 3's ``model.export(filepath)``: the model as a TF2 SavedModel for inference. Its
``serve`` method and ``serving_default`` signature run ``model(x, training=False)`` on the input
spec the model was first called with (or ``input_signature=``); TensorFlow loads it
(``tf.saved_model.load(d).serve(x)``), as do ``sf.load`` and ``specflow predict``."""

from __future__ import annotations

import numpy as np

from specflow.api.function import TensorSpec


def note_input(model, x) -> None:
    """Remember the spec of the first input ``model`` is called with (batch dim unknown)."""
    if "_sf_input_spec" in model.__dict__ or isinstance(x, (list, tuple, dict)):
        return
    shape = getattr(x, "shape", None)
    if shape is None:
        return
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    if dims:
        dtype = x.dtype if hasattr(x.dtype, "is_floating") else np.asarray(x).dtype
        if getattr(dtype, "kind", None) == "f" or str(dtype) == "float64":
            dtype = "float32"  # fit and predict feed float32, as Keras does
        model.__dict__["_sf_input_spec"] = TensorSpec([None, *dims[1:]], dtype)


def export_saved_model(model, filepath, format: str = "tf_saved_model", verbose: bool = True,
                       input_signature=None) -> None:
    from specflow.api.function import function
    from specflow.api.module import Module
    from specflow.api.saved import save

    if format != "tf_saved_model":
        raise ValueError(f"model.export: format must be 'tf_saved_model' (the only one specflow writes), got {format!r}")
    specs = list(input_signature) if input_signature is not None else _input_specs(model)
    if len(specs) != 1:
        raise ValueError(f"model.export: the model takes {len(specs)} inputs; export serves one-input models")

    def serve(x):
        return model(x, training=False)

    endpoint = function(serve, input_signature=specs)
    archive = Module(name="export_archive")
    archive.model = model
    archive.serve = endpoint
    save(archive, filepath, signatures={"serving_default": endpoint})
    if verbose:
        spec = specs[0]
        print(f"Saved artifact at '{filepath}'. Endpoint 'serve' (also the 'serving_default' signature) takes "
              f"{spec.dtype.name}{spec.shape}.")


def _input_specs(model) -> list:
    inputs = getattr(model, "_sf_flat_inputs", None)  # a functional model's Inputs
    if inputs:
        return [TensorSpec(list(t.shape), t.dtype) for t in inputs]
    spec = model.__dict__.get("_sf_input_spec")
    if spec is None:
        raise ValueError("model.export: the model has not been called yet, so its input shape is unknown; call it "
                         "(or fit/predict) first, or pass input_signature=[sf.TensorSpec(shape, dtype)]")
    return [spec]
