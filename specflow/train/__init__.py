"""Training: gradients, optimizers, learning-rate schedules, clipping, input pipelines, hooks and
the training loop, all built as graph ops on top of :mod:`specflow.graph` and run by a Session."""


def __getattr__(name):
    # sf.train.Checkpoint: the Python face's object-based checkpoints (specflow/api/checkpoint.py).
    if name in ("Checkpoint", "latest_checkpoint"):
        from specflow.api import checkpoint

        return getattr(checkpoint, name)
    if name == "CheckpointManager":
        from specflow.api.checkpoint_manager import CheckpointManager

        return CheckpointManager
    if name in ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List"):  # tf.train's protos
        from specflow.io.extra_protos import message_class

        return message_class(f"tensorflow.{name}")
    raise AttributeError(f"module 'specflow.train' has no attribute {name!r}")
