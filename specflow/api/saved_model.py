"""``sf.saved_model``: TensorFlow's spelling of sf.save / sf.load (``sf.saved_model.save(module,
export_dir, signatures=...)``, ``sf.saved_model.load(export_dir)``)."""

from __future__ import annotations


def save(obj, export_dir, signatures=None, overwrite: bool = False) -> None:
    """sf.save: a SavedModel TensorFlow's ``tf.saved_model.load`` and ``specflow predict`` read."""
    from specflow.api.saved import save as _save

    _save(obj, export_dir, signatures=signatures, overwrite=overwrite)


def load(export_dir, tags=None):
    """sf.load of a SavedModel directory: its signatures, variables and ``trainable_variables``."""
    from specflow.api.saved import load as _load

    return _load(export_dir, tags=tuple(tags) if tags else ("serve",))
