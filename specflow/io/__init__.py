"""Reading and writing TensorFlow-compatible files.

- ``tf_graph``: our GraphDef <-> TensorFlow's GraphDef protobuf.
- ``summaries``: TensorBoard event files (scalars, histograms, the graph).
- ``sstable``: LevelDB tables (the ``.index`` file of a tensor bundle), with crc32c helpers.
- ``tensor_bundle``: TensorFlow's checkpoint bundle (``PREFIX.index`` + ``PREFIX.data-*``), the
  format of both our checkpoints and a SavedModel's ``variables/``.
- ``checkpoint``: ``CheckpointManager`` (atomic saves, the ``checkpoint`` state file, keep policy).
- ``extra_protos``: TensorFlow protobuf messages that tensorboard's bundled protos lack.

Nothing here unpickles or evaluates file contents: every file is parsed as bytes and protos.
"""

# ``sf.io`` is this package: TensorFlow's tf.io names for users (api/tf_io.py) resolve here lazily.
_TF_IO_NAMES = ("FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example", "decode_raw",
                "TFRecordWriter", "TFRecordOptions")


def __getattr__(name):
    if name in _TF_IO_NAMES:
        from specflow.api import tf_io

        return getattr(tf_io, name)
    raise AttributeError(f"module 'specflow.io' has no attribute {name!r}")
