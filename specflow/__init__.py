"""specflow: declarative model specs compiled to TensorFlow-style dataflow graphs."""

from specflow.errors import SpecflowError  # noqa: F401

__version__ = "0.1.0"


def load_spec(path, overrides=None):
    """Load, validate and lower a YAML spec; ``spec.graph_def`` is its GraphDef.

    ``overrides`` is a list of ``"a.b.c=value"`` strings (as ``--set`` takes) or a dict.
    """
    from specflow.schema.loader import load_spec as _load

    return _load(path, overrides=overrides)


newaxis = None  # TensorFlow's tf.newaxis: x[:, sf.newaxis]

_DTYPE_NAMES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "string",
                          "half", "double"})


def __getattr__(name):
    # Lazy, so `import specflow` stays cheap for the CLI.
    if name in ("Session", "SessionConfig"):
        from specflow.runtime import session

        return getattr(session, name)
    from specflow.api import EXPORTS

    if name in EXPORTS:
        import importlib

        module, attr = EXPORTS[name]
        value = importlib.import_module(module) if attr is None else getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in _DTYPE_NAMES:  # sf.float32, sf.int64, sf.bool, ... (TensorFlow's tf.float32)
        from specflow.graph import dtypes

        value = dtypes.as_dtype(name)
        globals()[name] = value
        return value
    if name in ("ops", "train"):  # sf.ops.<op>, sf.train.Checkpoint
        import importlib

        return importlib.import_module(f"specflow.{name}")
    raise AttributeError(f"module 'specflow' has no attribute {name!r}")
