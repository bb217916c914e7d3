"""TensorFlow protobuf messages that ``tensorboard.compat.proto`` does not vendor.

They are declared as data (a table of messages and fields, same names and field numbers as
TensorFlow's ``.proto`` files) and compiled into one ``FileDescriptorProto`` in package
``tensorflow`` that depends on tensorboard's copies of ``tensor_shape``/``types``/``versions``.
The wire format is what TensorFlow reads and writes; the serialisation is protobuf's own.

The file lives in a private descriptor pool, holding copies of its dependencies taken from the
default pool: registering ``tensorflow.BundleEntryProto`` in the default pool would make a
later ``import tensorflow`` in the same process fail with "duplicate symbol" (and vice versa).
Messages of this pool, tensorboard's included (``message_class("tensorboard.TensorShapeProto")``),
mix freely; to move a message between pools, serialise and parse it.

To add a message: add its fields to ``_MESSAGES`` (its enums to ``_ENUMS``, the proto files it
references to ``_DEPENDENCIES``); then ``message_class("tensorflow.Name")`` returns the class.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# Importing these registers the proto files we depend on in the default pool.
from tensorboard.compat.proto import meta_graph_pb2, tensor_shape_pb2, types_pb2, versions_pb2  # noqa: F401

_FILE_NAME = "specflow/io/extra_protos.proto"
_PACKAGE = "tensorflow"

# Proto files (by the names tensorboard registered them under) that our messages reference.
_DEPENDENCIES = (
    "tensorboard/compat/proto/tensor_shape.proto",
    "tensorboard/compat/proto/types.proto",
    "tensorboard/compat/proto/versions.proto",
    "tensorboard/compat/proto/meta_graph.proto",
)

# Message name -> fields (name, number, type[, "repeated" | "oneof:NAME"]). A type is a scalar
# name ("int64"), ".package.Message" for a message, or "enum .package.Enum" for an enum. Nested
# messages are written "Outer.Inner".
_MESSAGES: dict[str, list[tuple]] = {
    # tensorflow/core/protobuf/tensor_bundle.proto
    "BundleHeaderProto": [
        ("num_shards", 1, "int32"),
        ("endianness", 2, "enum .tensorflow.BundleHeaderProto.Endianness"),
        ("version", 3, ".tensorboard.VersionDef"),
    ],
    "BundleEntryProto": [
        ("dtype", 1, "enum .tensorboard.DataType"),
        ("shape", 2, ".tensorboard.TensorShapeProto"),
        ("shard_id", 3, "int32"),
        ("offset", 4, "int64"),
        ("size", 5, "int64"),
        ("crc32c", 6, "fixed32"),
        ("slices", 7, ".tensorflow.TensorSliceProto", "repeated"),
    ],
    # tensorflow/core/framework/tensor_slice.proto
    "TensorSliceProto": [
        ("extent", 1, ".tensorflow.TensorSliceProto.Extent", "repeated"),
    ],
    "TensorSliceProto.Extent": [
        ("start", 1, "int64"),
        ("length", 2, "int64", "oneof:has_length"),
    ],
    # tensorflow/python/training/checkpoint_state.proto (the text-format `checkpoint` file)
    "CheckpointState": [
        ("model_checkpoint_path", 1, "string"),
        ("all_model_checkpoint_paths", 2, "string", "repeated"),
        ("all_model_checkpoint_timestamps", 3, "double", "repeated"),
        ("last_preserved_timestamp", 4, "double"),
    ],
    # tensorflow/core/protobuf/saved_model.proto (saved_model.pb)
    "SavedModel": [
        ("saved_model_schema_version", 1, "int64"),
        ("meta_graphs", 2, ".tensorboard.MetaGraphDef", "repeated"),
    ],
    # tensorflow/core/example/feature.proto and example.proto (tf.train.Example)
    "BytesList": [("value", 1, "bytes", "repeated")],
    "FloatList": [("value", 1, "float", "repeated")],  # proto3: packed
    "Int64List": [("value", 1, "int64", "repeated")],
    "Feature": [
        ("bytes_list", 1, ".tensorflow.BytesList", "oneof:kind"),
        ("float_list", 2, ".tensorflow.FloatList", "oneof:kind"),
        ("int64_list", 3, ".tensorflow.Int64List", "oneof:kind"),
    ],
    "Features": [("feature", 1, ".tensorflow.Features.FeatureEntry", "repeated")],
    "Features.FeatureEntry": [("key", 1, "string"), ("value", 2, ".tensorflow.Feature")],
    "Example": [("features", 1, ".tensorflow.Features")],
}
# Nested messages that are protobuf's entries of a map<key, value> field.
_MAP_ENTRIES = {"Features.FeatureEntry"}

# Enum name ("Message.Enum" for a nested one) -> values.
_ENUMS: dict[str, dict[str, int]] = {
    "BundleHeaderProto.Endianness": {"LITTLE": 0, "BIG": 1},
}

_FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _FDP.TYPE_DOUBLE,
    "float": _FDP.TYPE_FLOAT,
    "int32": _FDP.TYPE_INT32,
    "int64": _FDP.TYPE_INT64,
    "uint32": _FDP.TYPE_UINT32,
    "uint64": _FDP.TYPE_UINT64,
    "fixed32": _FDP.TYPE_FIXED32,
    "fixed64": _FDP.TYPE_FIXED64,
    "bool": _FDP.TYPE_BOOL,
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
}


def _field(msg: descriptor_pb2.DescriptorProto, spec: tuple) -> None:
    name, number, type_, *flags = spec
    field = msg.field.add(name=name, number=number, label=_FDP.LABEL_OPTIONAL)
    if type_ in _SCALARS:
        field.type = _SCALARS[type_]
    elif type_.startswith("enum "):
        field.type, field.type_name = _FDP.TYPE_ENUM, type_.removeprefix("enum ")
    else:
        field.type, field.type_name = _FDP.TYPE_MESSAGE, type_
    for flag in flags:
        if flag == "repeated":
            field.label = _FDP.LABEL_REPEATED
        elif flag.startswith("oneof:"):
            oneof = flag.removeprefix("oneof:")
            names = [o.name for o in msg.oneof_decl]
            if oneof not in names:
                msg.oneof_decl.add(name=oneof)
                names.append(oneof)
            field.oneof_index = names.index(oneof)


def _file_proto() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name=_FILE_NAME, package=_PACKAGE, syntax="proto3", dependency=list(_DEPENDENCIES)
    )
    protos: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name in _MESSAGES:  # outer messages come before the nested ones that name them
        outer, _, inner = name.rpartition(".")
        parent = protos[outer].nested_type if outer else fdp.message_type
        protos[name] = parent.add(name=inner)
        if name in _MAP_ENTRIES:
            protos[name].options.map_entry = True
    for name, fields in _MESSAGES.items():
        for spec in fields:
            _field(protos[name], spec)
    for name, values in _ENUMS.items():
        outer, _, inner = name.rpartition(".")
        enum = (protos[outer].enum_type if outer else fdp.enum_type).add(name=inner)
        for value_name, number in values.items():
            enum.value.add(name=value_name, number=number)
    return fdp


_POOL = descriptor_pool.DescriptorPool()


def _copy_from_default(file_name: str) -> None:
    """Add a file registered in the default pool (and what it imports) to ``_POOL``."""
    try:
        _POOL.FindFileByName(file_name)
        return
    except KeyError:
        pass
    source = descriptor_pool.Default().FindFileByName(file_name)
    for dep in source.dependencies:
        _copy_from_default(dep.name)
    proto = descriptor_pb2.FileDescriptorProto()
    source.CopyToProto(proto)
    _POOL.Add(proto)


for _dep in _DEPENDENCIES:
    _copy_from_default(_dep)
_POOL.Add(_file_proto())


def message_class(full_name: str) -> type:
    """The generated message class for ``full_name`` (``"tensorflow.BundleEntryProto"``)."""
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full_name))


BundleHeaderProto = message_class("tensorflow.BundleHeaderProto")
BundleEntryProto = message_class("tensorflow.BundleEntryProto")
TensorSliceProto = message_class("tensorflow.TensorSliceProto")
CheckpointState = message_class("tensorflow.CheckpointState")
SavedModel = message_class("tensorflow.SavedModel")
Example = message_class("tensorflow.Example")
Feature = message_class("tensorflow.Feature")
