"""specflow: declarative model specs compiled to TensorFlow-style dataflow graphs."""

from specflow.errors import SpecflowError  # noqa: F401

__version__ = "0.1.0"


def load_spec(path, overrides=None):
    """Load, validate and lower a YAML spec; ``spec.graph_def`` is its GraphDef.

    ``overrides`` is a list of ``"a.b.c=value"`` strings (as ``--set`` takes) or a dict.
    """
    from specflow.schema.loader import load_spec as _load

    return _load(path, overrides=overrides)


def __getattr__(name):
    # Lazy, so `import specflow` stays cheap for the CLI.
    if name in ("Session", "SessionConfig"):
        from specflow.runtime import session

        return getattr(session, name)
    from specflow.api import EXPORTS

    if name in EXPORTS:
        import importlib

        module, attr = EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in ("ops", "train"):  # sf.ops.<op>, sf.train.Checkpoint
        import importlib

        return importlib.import_module(f"specflow.{name}")
    raise AttributeError(f"module 'specflow' has no attribute {name!r}")
