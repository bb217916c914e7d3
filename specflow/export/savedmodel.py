"""Writing a ServingModel as a TensorFlow SavedModel directory.

The layout TensorFlow reads (``tf.saved_model.load``, ``saved_model_cli``)::

    EXPORT_DIR/saved_model.pb                               SavedModel: one MetaGraphDef tagged "serve"
    EXPORT_DIR/variables/variables.index                    tensor bundle (io/tensor_bundle.py)
    EXPORT_DIR/variables/variables.data-00000-of-00001

The MetaGraphDef serves both kinds of loader. For TF1-style ones (TF Serving, ``saved_model_cli``,
``tf.compat.v1.saved_model.load``, specflow's own): the graph holds the serving graph (resource
variables as VarHandleOp + ReadVariableOp) plus the saver graph ``tf.compat.v1.train.Saver``
builds (``save/Const`` the filename, ``save/SaveV2`` + ``save/control_dependency`` to save,
``save/RestoreV2`` + ``save/AssignVariableOp*`` + ``save/restore_all`` to restore), a
``saver_def`` naming them, and one ``signature_def`` per signature with dtypes and shapes filled
in. For TF2's ``tf.saved_model.load``: the object graph (object_graph.py: the model's objects,
variables and methods; its functions in the graph's library), with the bundle's
``_CHECKPOINTABLE_OBJECT_GRAPH`` mapping its variables to the same bundle keys.

``write_saved_model`` writes into a temporary directory beside EXPORT_DIR, runs ``check`` on it
(export re-loads it and compares outputs), and only then renames it into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import meta_graph_pb2, saver_pb2, variable_pb2

from specflow.errors import ExportError, Location
from specflow.export.function_def import FrameError
from specflow.export.loader import SAVED_MODEL_FILENAME, VARIABLES_DIR, variables_prefix
from specflow.export.object_graph import WrittenObjects, objects_from_signatures, write_objects
from specflow.export.serving import ServingModel, SignatureIO
from specflow.export.target_dir import Held, check_overwritable, clean_leftovers
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import GraphDef
from specflow.graph.names import check_node_name
from specflow.io.extra_protos import SavedModel
from specflow.io.tensor_bundle import fsync_dir, usual_mode, write_bundle, write_synced
from specflow.io.tf_graph import shape_to_proto, to_tf_graph_def
from specflow.io.tf_object_graph import OBJECT_GRAPH_KEY

SERVE_TAG = "serve"
PREDICT_METHOD = "tensorflow/serving/predict"
# The GraphDef version TensorFlow 2.21 writes; TF checks op deprecations against the producer.
TF_GRAPH_DEF_VERSION = 2474
# specflow ops that TensorFlow does not have (runtime-internal ``_`` ops are refused as well).
NOT_IN_TENSORFLOW: frozenset[str] = frozenset()


def check_tf_ops(graph: GraphDef) -> None:
    """ExportError naming the first node whose op has no TensorFlow equivalent."""
    for node in graph.nodes:
        if node.op.startswith("_") or node.op in NOT_IN_TENSORFLOW:
            raise ExportError(f"op {node.op} has no TensorFlow equivalent; it cannot be exported",
                              node=node.name, location=node.location)


# --- the graph -----------------------------------------------------------------------------------


def add_saver(b: GraphBuilder, handles: dict[str, str],
              keys: dict[str, str] | None = None) -> tuple[saver_pb2.SaverDef, dict[str, tuple[str, str]]]:
    """Add tf.compat.v1.train.Saver's graph for the variables ``handles`` (name -> VarHandleOp)
    under ``save/``, each saved under ``keys[name]`` (default: its name); returns its SaverDef
    and, per variable, its read and restoring assign."""
    names = sorted(handles)
    n = len(names)
    stored = [(keys or {}).get(v, v) for v in names]
    var_dtypes = [b.graph_def.node(handles[v]).attrs["dtype"] for v in names]

    def strings(values: list[str], name: str) -> str:
        arr = np.empty(len(values), dtype=object)
        arr[:] = [v.encode("utf-8") for v in values]
        return b.const(arr, dtypes.string, name=name)

    with b.root_scope(), b.name_scope("save"):
        default = b.const(np.array(b"model", dtype=object), dtypes.string, name="filename/input")
        attrs = {"dtype": dtypes.string, "shape": b.spec(default).shape}
        filename = b.add_op("PlaceholderWithDefault", [default], attrs, name="filename").name
        # TF keeps the name "Const" for the filename tensor, for backwards compatibility.
        const = b.add_op("PlaceholderWithDefault", [filename], attrs, name="Const").name
        reads = [b.add_op("ReadVariableOp", [handles[v]], {"dtype": dt}, name="ReadVariableOp" + _suffix(i)).name
                 for i, (v, dt) in enumerate(zip(names, var_dtypes))]
        save = b.add_op("SaveV2", [const, strings(stored, "SaveV2/tensor_names"),
                                   strings([""] * n, "SaveV2/shape_and_slices"), *reads],
                        {"dtypes": var_dtypes}, name="SaveV2").name
        saved = b.add_op("Identity", [const], {"T": dtypes.string}, name="control_dependency",
                         control_inputs=[save], colocate_with=[const]).name
        restore = b.add_op("RestoreV2", [const, strings(stored, "RestoreV2/tensor_names"),
                                         strings([""] * n, "RestoreV2/shape_and_slices")],
                           {"dtypes": var_dtypes}, name="RestoreV2").name
        assigns = []
        for i, (v, dt) in enumerate(zip(names, var_dtypes)):
            value = b.add_op("Identity", [f"{restore}:{i}"], {"T": dt}, name="Identity" + _suffix(i)).name
            assigns.append(b.add_op("AssignVariableOp", [handles[v], value], {"dtype": dt},
                                    name="AssignVariableOp" + _suffix(i)).name)
        restore_all = b.add_op("NoOp", [], name="restore_all", control_inputs=assigns).name
    return saver_pb2.SaverDef(
        filename_tensor_name=f"{const}:0", save_tensor_name=f"{saved}:0", restore_op_name=restore_all,
        max_to_keep=5, sharded=False, keep_checkpoint_every_n_hours=10000.0,
        version=saver_pb2.SaverDef.V2,
    ), {v: (r, a) for v, r, a in zip(names, reads, assigns)}


def add_variable_collections(mg: meta_graph_pb2.MetaGraphDef, handles: dict[str, str],
                             ops: dict[str, tuple[str, str]], trainable: dict[str, bool]) -> None:  # fmt: skip
    """TF1's ``variables`` and ``trainable_variables`` collections (a VariableDef each), which
    ``import_meta_graph`` turns back into variables: the saver's read is the snapshot and its
    restoring assign the initializer (a served variable's value comes from the checkpoint)."""
    for name in sorted(handles):
        read, assign = ops[name]
        vdef = variable_pb2.VariableDef(variable_name=f"{handles[name]}:0", initializer_name=assign,
                                        snapshot_name=f"{read}:0", is_resource=True,
                                        trainable=trainable.get(name, True)).SerializeToString()  # fmt: skip
        mg.collection_def["variables"].bytes_list.value.append(vdef)
        if trainable.get(name, True):
            mg.collection_def["trainable_variables"].bytes_list.value.append(vdef)


def _suffix(i: int) -> str:
    return "" if i == 0 else f"_{i}"  # TF's unique-name spelling: Identity, Identity_1, ...


def signature_def(sig: SignatureIO) -> meta_graph_pb2.SignatureDef:
    out = meta_graph_pb2.SignatureDef(method_name=PREDICT_METHOD)
    for part, entries in (("inputs", sig.inputs), ("outputs", sig.outputs)):
        for alias, (tensor, spec) in entries.items():
            info = getattr(out, part)[alias]
            info.name = tensor
            info.dtype = spec.dtype.tf_enum
            info.tensor_shape.CopyFrom(shape_to_proto(spec.shape))
    return out


def meta_graph(model: ServingModel, objects: WrittenObjects | None = None) -> meta_graph_pb2.MetaGraphDef:
    """The serving graph plus its saver as a MetaGraphDef tagged ``serve``; with ``objects``, TF2's
    object graph and its functions."""
    check_tf_ops(model.graph_def)
    b = GraphBuilder(model.graph_def)
    handles = {}
    for node in model.graph_def.nodes:
        if node.op == "VarHandleOp":
            handles[node.attrs.get("shared_name") or node.name] = node.name
    mg = meta_graph_pb2.MetaGraphDef()
    mg.meta_info_def.tags.append(SERVE_TAG)
    mg.meta_info_def.meta_graph_version = "specflow"
    if handles:
        saver, ops = add_saver(b, handles, objects.keys if objects is not None else None)
        mg.saver_def.CopyFrom(saver)
        if model.trainable:  # (a model from elsewhere may not say)
            add_variable_collections(mg, handles, ops, model.trainable)
    graph = b.graph_def
    for node in graph.nodes:  # TensorFlow (and our loader) refuse other names: say so before writing
        check_node_name(node.name, f"cannot export node {node.name!r} under that name: ")
    graph.versions = {**graph.versions, "producer": TF_GRAPH_DEF_VERSION}
    mg.graph_def.CopyFrom(to_tf_graph_def(graph))
    for name, sig in model.signatures.items():
        mg.signature_def[name].CopyFrom(signature_def(sig))
    if objects is not None:
        mg.graph_def.library.function.extend(objects.functions)
        mg.object_graph_def.CopyFrom(objects.object_graph)
    return mg


def written_objects(model: ServingModel) -> WrittenObjects | None:
    """TF2's object graph of ``model``: its own (a Python module's), else its signatures'. None
    (with a warning: the SavedModel is TF1-style, TF2 loads its signatures only) when a
    signature's body is one TF2's function runtime would refuse."""
    objects = model.objects if model.objects is not None else objects_from_signatures(model)
    try:
        return write_objects(objects, model.variables, model.trainable)
    except FrameError as e:
        warnings.warn(f"written without TF2's object graph (TensorFlow loads its signatures only): {e.format()}",
                      stacklevel=3)
        return None


def saved_model_bytes(model: ServingModel, objects: WrittenObjects | None = None) -> bytes:
    proto = SavedModel(saved_model_schema_version=1)
    proto.meta_graphs.add().ParseFromString(meta_graph(model, objects).SerializeToString())
    return proto.SerializeToString()


def bundle_tensors(model: ServingModel, objects: WrittenObjects | None) -> dict:
    """The variables bundle: each variable under its checkpoint key, and the checkpoint's object graph."""
    if objects is None:
        return dict(model.variables)
    out = {objects.keys[name]: value for name, value in model.variables.items()}
    out[OBJECT_GRAPH_KEY] = np.array(objects.checkpoint_graph, dtype=object)
    return out


# --- the directory -------------------------------------------------------------------------------


def write_saved_model(model: ServingModel, export_dir, overwrite: bool = False,
                      check: Callable[[str], object] | None = None) -> None:
    """Write ``model`` to ``export_dir`` atomically; ``check(temp_dir)`` vets the written files
    before they are renamed into place (an exception from it leaves nothing behind)."""
    export_dir = Path(export_dir)
    refuse_existing(export_dir, overwrite)
    objects = written_objects(model)
    data = saved_model_bytes(model, objects)  # graph problems surface before anything is written
    try:
        export_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{export_dir.name}.tmp-", dir=export_dir.parent)
    except OSError as e:
        raise _write_error(e, export_dir) from None
    held = Held(tmp)
    try:
        usual_mode(tmp)
        write_synced(os.path.join(tmp, SAVED_MODEL_FILENAME), [data])
        os.mkdir(os.path.join(tmp, VARIABLES_DIR))
        write_bundle(variables_prefix(tmp), bundle_tensors(model, objects))
        fsync_dir(tmp)
        if check is not None:
            check(tmp)
        replace_dir(tmp, export_dir, overwrite)
    except OSError as e:  # a full disk, a file too large: one line, and nothing left behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise _write_error(e, export_dir) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        held.close()


def _write_error(e: OSError, export_dir: Path) -> ExportError:
    return ExportError(f"cannot write the export: {e.strerror or e}", location=Location(str(export_dir)))


def refuse_existing(export_dir: Path, overwrite: bool) -> None:
    """An existing ``export_dir`` is replaced only with ``overwrite``, and only if it is empty or
    a SavedModel (target_dir.check_overwritable). What killed exports left is cleaned first."""
    try:
        clean_leftovers(export_dir)
    except OSError as e:
        raise _write_error(e, export_dir) from None
    if not os.path.lexists(export_dir):
        return
    if not overwrite:
        raise ExportError(f"{export_dir} already exists (pass --overwrite to replace it)")
    check_overwritable(export_dir)


def replace_dir(tmp: str, export_dir: Path, overwrite: bool) -> None:
    """Rename ``tmp`` to ``export_dir``; an existing one (with ``overwrite``) is moved aside first
    and deleted after, so ``export_dir`` always holds a complete export or none (a kill between
    the two renames leaves it in ``.{name}.old-*``, which the next export puts back first)."""
    refuse_existing(export_dir, overwrite)
    old = held = None
    if export_dir.exists():
        old = tempfile.mkdtemp(prefix=f".{export_dir.name}.old-", dir=export_dir.parent)
        held = Held(old)
        os.replace(export_dir, os.path.join(old, "export"))
    os.replace(tmp, export_dir)
    fsync_dir(str(export_dir.parent))
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
        held.close()

