"""Loading a SavedModel directory into specflow's runtime: ours, or one TensorFlow wrote.

``load_model(path)`` is the one entry point: a SavedModel directory (or its saved_model.pb) or a
frozen GraphDef file (``.pb``/``.pbtxt``, served through its Placeholders and sink nodes as one
``serving_default`` signature; ``io/graph_loader.py``).

``load_saved_model(export_dir)`` parses ``saved_model.pb``, picks the MetaGraphDef with the
requested tags, converts its TensorFlow GraphDef (function library included) with
``io.tf_graph.from_tf_graph_def`` and opens a Session on it. Variables are restored the way
TensorFlow's loader does it: by running the ``saver_def``'s restore op with its filename tensor
fed ``EXPORT_DIR/variables/variables``, so any saver graph built from RestoreV2 and
AssignVariableOp works, whoever wrote it. Every problem (a missing or corrupted file, unknown
tags or signature, a feed of the wrong dtype or shape) is an ExportError naming the file or input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from tensorboard.compat.proto import meta_graph_pb2

from specflow.errors import ExportError, Location, SpecflowError
from specflow.export.saved_gradients import register_saved_gradients
from specflow.export.serving import SignatureIO
from specflow.graph.graph_def import GraphDef, canonical_tensor
from specflow.graph.names import check_function_name, check_reference
from specflow.graph.shapes import Shape
from specflow.io.extra_protos import SavedModel
from specflow.io.graph_loader import graph_io, is_graph_def_file, read_graph_def
from specflow.io.tensor_bundle import data_filename, index_filename
from specflow.io.tf_functions import check_supported
from specflow.io.tf_graph import dtype_from_enum, from_tf_graph_def, shape_from_proto
from specflow.io.tf_object_graph import restore_object_graph
from specflow.ops.registry import TensorSpec

SAVED_MODEL_FILENAME = "saved_model.pb"
VARIABLES_DIR = "variables"
VARIABLES_PREFIX = "variables"  # variables/variables.index, variables/variables.data-00000-of-00001


# TF2's signature naming the init op (an op, not a tensor); its restore needs no init op here.
INIT_OP_SIGNATURE = "__saved_model_init_op"


def variables_prefix(export_dir: str) -> str:
    return os.path.join(export_dir, VARIABLES_DIR, VARIABLES_PREFIX)


@dataclass
class LoadedModel:
    """A SavedModel's meta graph in a Session with its variables restored."""

    export_dir: str
    tags: list[str]
    signatures: dict[str, SignatureIO]  # tensor names are specflow's canonical ``node:k``
    graph_def: GraphDef
    meta_graph: Any  # tensorboard's MetaGraphDef message, as read
    session: Any = field(default=None, repr=False)
    _handles: dict | None = field(default=None, repr=False)

    def object_handles(self) -> dict[int, str]:
        """``object_handles`` of this model, read once (sf.load's variables and its restored
        functions both ask)."""
        if self._handles is None:
            self._handles = object_handles(self.meta_graph, self.graph_def, self.export_dir)
        return self._handles

    def run(self, signature: str, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        """Run ``signature`` on ``feeds`` (input alias -> array); returns output alias -> array."""
        sig = self.signature(signature)
        unknown = [a for a in feeds if a not in sig.inputs]
        if unknown:
            raise ExportError(f"signature '{signature}' has no input '{unknown[0]}' "
                              f"(inputs: {', '.join(sig.inputs)})")
        missing = [a for a in sig.inputs if a not in feeds]
        if missing:
            raise ExportError(f"signature '{signature}' needs input(s) {', '.join(missing)} "
                              f"(inputs: {', '.join(sig.inputs)})")
        fed = {sig.inputs[a][0]: check_input(a, np.asarray(v), sig.inputs[a][1]) for a, v in feeds.items()}
        aliases = list(sig.outputs)
        check_supported(self.graph_def, [sig.outputs[a][0] for a in aliases], list(fed))
        values = self.session.run([sig.outputs[a][0] for a in aliases], fed)
        return {a: np.asarray(v) for a, v in zip(aliases, values)}

    def signature(self, name: str) -> SignatureIO:
        if name not in self.signatures:
            known = ", ".join(sorted(self.signatures)) or "none"
            raise ExportError(f"{self.export_dir} has no signature '{name}' (signatures: {known})")
        return self.signatures[name]

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def __enter__(self) -> LoadedModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_input(alias: str, value: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """``value`` for input ``alias``, cast to the signature's dtype when the kinds agree (float64
    feeds a float32 input, int64 an int32 one; ints do not feed floats) and the shape fits."""
    want = spec.dtype
    kind = value.dtype.kind
    ok = (kind in "OSU") if want.name == "string" else (
        kind == "b" if want.is_bool else kind in ("fc" if want.is_floating or want.is_complex else "iu"))
    if not ok:
        raise ExportError(f"input '{alias}' must be {want.name}, got {value.dtype}")
    if not spec.shape.is_compatible_with(Shape(value.shape)):
        raise ExportError(f"input '{alias}' must have shape {spec.shape}, got {list(value.shape)}")
    if want.is_integer and value.size:  # a narrowing cast must not wrap around
        info = np.iinfo(want.numpy)
        if value.min() < info.min or value.max() > info.max:
            raise ExportError(f"input '{alias}' holds values outside {want.name}'s range")
    return value if want.name == "string" else value.astype(want.numpy, copy=False)


def read_saved_model(export_dir: str):
    """The ``SavedModel`` message of ``export_dir``; ExportError if it is missing or corrupted."""
    if not os.path.isdir(export_dir):
        raise ExportError(f"{export_dir}: no such directory")
    path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    if not os.path.isfile(path):
        raise ExportError(f"{export_dir} is not a SavedModel directory (no {SAVED_MODEL_FILENAME})")
    with open(path, "rb") as f:
        data = f.read()
    proto = SavedModel()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ExportError(f"corrupted or truncated SavedModel ({e})", location=Location(path)) from None
    if not proto.meta_graphs:
        raise ExportError("corrupted or truncated SavedModel: it holds no meta graph", location=Location(path))
    return proto


def meta_graphs(proto) -> list:
    """The meta graphs as tensorboard's MetaGraphDef messages (the SavedModel class lives in
    another descriptor pool, so each is moved over by serialising)."""
    out = []
    for mg in proto.meta_graphs:
        m = meta_graph_pb2.MetaGraphDef()
        m.ParseFromString(mg.SerializeToString())
        out.append(m)
    return out


def find_meta_graph(export_dir: str, proto, tags) -> Any:
    graphs = meta_graphs(proto)
    for mg in graphs:
        if set(mg.meta_info_def.tags) == set(tags):
            return mg
    have = "; ".join(",".join(mg.meta_info_def.tags) or "(none)" for mg in graphs)
    raise ExportError(f"{export_dir} has no meta graph tagged {','.join(tags)} (tag sets: {have})")


def tensor_spec(info, where: str) -> tuple[str, TensorSpec]:
    """A SignatureDef TensorInfo as (canonical tensor name, dtype and shape)."""
    if info.WhichOneof("encoding") != "name":
        raise ExportError(f"{where}: only dense tensors are supported (got {info.WhichOneof('encoding')})")
    try:
        dtype = dtype_from_enum(info.dtype)
        shape = shape_from_proto(info.tensor_shape) if info.HasField("tensor_shape") else Shape(None)
    except SpecflowError as e:
        raise ExportError(f"{where}: {e.message}") from None
    return canonical_tensor(check_reference(info.name, f"{where}: ")), TensorSpec(dtype, shape)


def signatures_of(meta_graph) -> dict[str, SignatureIO]:
    out = {}
    for name in sorted(meta_graph.signature_def):
        if name == INIT_OP_SIGNATURE:
            continue
        sd = meta_graph.signature_def[name]
        # Shown in tables and messages: the same characters as any name from a file.
        check_function_name(name, what="signature name")
        for alias in (*sd.inputs, *sd.outputs):
            check_function_name(alias, f"signature '{name}': ", "input/output name")
        out[name] = SignatureIO(
            {a: tensor_spec(sd.inputs[a], f"signature '{name}' input '{a}'") for a in sorted(sd.inputs)},
            {a: tensor_spec(sd.outputs[a], f"signature '{name}' output '{a}'") for a in sorted(sd.outputs)},
        )
    return out


DEFAULT_SIGNATURE = "serving_default"


def load_model(path, tags=("serve",)) -> LoadedModel:
    """A SavedModel directory, a SavedModel's saved_model.pb, or a frozen GraphDef file, in a
    Session ready to run (variables restored)."""
    path = str(path)
    if is_graph_def_file(path):
        return load_graph_def(path)
    if os.path.basename(path) == SAVED_MODEL_FILENAME and os.path.isfile(path):
        path = os.path.dirname(path) or "."
    if not os.path.exists(path):
        raise ExportError(f"{path}: no such directory or GraphDef file")
    if not os.path.isdir(path):
        raise ExportError(f"{path}: expected a SavedModel directory or a GraphDef file (.pb, .pbtxt)")
    return load_saved_model(path, tags)


def load_graph_def(path) -> LoadedModel:
    """A frozen GraphDef file in a Session; its one signature, ``serving_default``, takes the
    Placeholders (by node name) and gives the sink nodes' outputs."""
    from specflow.runtime.session import Session

    path = str(path)
    try:
        graph = read_graph_def(path)
    except SpecflowError as e:
        raise ExportError(e.message, node=e.node, location=e.location or Location(path)) from None
    inputs, outputs = graph_io(graph)
    if not outputs:
        # A sink whose op specflow lacks is no output (its dtypes are unknown): name the op, not
        # "every output is read".
        read = {i.lstrip("^").split(":")[0] for n in graph.nodes for i in n.inputs}
        try:
            check_supported(graph, [n.name for n in graph.nodes if n.name not in read])
        except SpecflowError as e:
            raise ExportError(e.message, location=Location(path)) from None
        raise ExportError("the GraphDef has no output (every node's output is read by another node)",
                          location=Location(path))
    model = LoadedModel(path, [], {DEFAULT_SIGNATURE: SignatureIO(inputs, outputs)}, graph, None)
    model.session = Session(graph)
    return model


def load_saved_model(export_dir, tags=("serve",)) -> LoadedModel:
    """Load ``export_dir``'s meta graph tagged ``tags`` into a Session and restore its variables."""
    from specflow.runtime.session import Session

    export_dir = str(export_dir)
    proto = read_saved_model(export_dir)
    mg = find_meta_graph(export_dir, proto, tags)
    pb_path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    try:
        graph = from_tf_graph_def(mg.graph_def)
    except SpecflowError as e:
        e.location = e.location or Location(pb_path)
        raise
    model = LoadedModel(export_dir, list(mg.meta_info_def.tags), signatures_of(mg), graph, mg)
    register_saved_gradients(mg, graph, model)  # tf.custom_gradient's saved functions
    nodes = graph.node_map()
    for sig_name, sig in model.signatures.items():
        for alias, (tensor, _) in {**sig.inputs, **sig.outputs}.items():
            if tensor.rsplit(":", 1)[0] not in nodes:
                raise ExportError(f"signature '{sig_name}' names tensor '{tensor}' ({alias}), which the graph "
                                  "lacks (corrupted SavedModel?)", location=Location(pb_path))
    model.session = Session(graph)
    try:
        restore_variables(model, mg.saver_def, nodes)
        restore_object_graph(model.session, mg, variables_prefix(export_dir))  # TF2 (Keras) models
        run_init_op(model, mg, nodes)  # lookup tables' initializers, as TF's loader runs it
    except BaseException:
        model.close()
        raise
    return model


def object_handles(meta_graph, graph: GraphDef, export_dir: str) -> dict[int, str]:
    """Object-graph node id -> the graph node a function's captured input reads (a variable's
    VarHandleOp, a constant's Const). A variable is found by its checkpoint key: the variables
    bundle's object graph gives each saved object's key, and the SavedModel's restore function
    assigns that key to the variable's VarHandleOp (or the copy the GraphDef's calls read in
    its place, ``_graph_copies``)."""
    from tensorboard.compat.proto import trackable_object_graph_pb2

    from specflow.api.saved_objects import restored_handles
    from specflow.io.tensor_bundle import read_bundle
    from specflow.io.tf_object_graph import OBJECT_GRAPH_KEY, VALUE_ATTRIBUTE, match_objects

    saved = meta_graph.object_graph_def.nodes
    graph_nodes = graph.node_map()
    out = {}
    for i, node in enumerate(saved):
        if node.WhichOneof("kind") == "constant" and node.constant.operation in graph_nodes:
            out[i] = node.constant.operation
    if not any(n.WhichOneof("kind") == "variable" for n in saved):
        return out
    bundle = read_bundle(variables_prefix(export_dir), [OBJECT_GRAPH_KEY])
    if OBJECT_GRAPH_KEY not in bundle:
        return out
    trackable = trackable_object_graph_pb2.TrackableObjectGraph()
    trackable.ParseFromString(bytes(np.asarray(bundle[OBJECT_GRAPH_KEY], dtype=object).item()))
    handles = restored_handles(graph)
    for s_id, c_id in match_objects(saved, trackable.nodes).items():
        if saved[s_id].WhichOneof("kind") != "variable" or c_id >= len(trackable.nodes):
            continue
        for attr in trackable.nodes[c_id].attributes:
            if attr.name == VALUE_ATTRIBUTE and attr.checkpoint_key in handles:
                out[s_id] = handles[attr.checkpoint_key]
    copies = _graph_copies(meta_graph, out)
    return {i: copies.get(h, h) for i, h in out.items()}


def _graph_copies(meta_graph, handles: dict[int, str]) -> dict[str, str]:
    """Bound variable handle -> the handle the GraphDef's calls of the same function read in
    its place. A Keras export tracks its variables twice (``variables`` and ``_all_variables``)
    and restores both with the same values; its functions bind the first, while the GraphDef's
    signature calls read the second. specflow runs signatures from the GraphDef, so a restored
    function (and ``loaded.variables``) reads those same copies: one set of variables, which
    gradients and assignments through either path reach."""
    functions = meta_graph.object_graph_def.concrete_functions
    out: dict[str, str] = {}
    for node in meta_graph.graph_def.node:
        if node.op not in ("StatefulPartitionedCall", "PartitionedCall"):
            continue
        fn = functions.get(node.attr["f"].func.name)
        data = [i for i in node.input if not i.startswith("^")]
        if fn is None or not fn.bound_inputs or len(data) < len(fn.bound_inputs):
            continue
        for b, read in zip(fn.bound_inputs, data[len(data) - len(fn.bound_inputs):]):
            if b in handles:
                out.setdefault(handles[b], read.split(":")[0])
    return out


def run_init_op(model: LoadedModel, meta_graph, nodes) -> None:
    """Run the meta graph's init op (TF2's ``__saved_model_init_op`` signature, TF1's main op or
    legacy init op) after the restore, as TensorFlow's loader does: it initializes lookup tables.
    Asset tensors are fed their files in ``EXPORT_DIR/assets`` (which lookup_ops may then read).
    An init op needing ops specflow lacks is skipped (what needs it fails when run)."""
    from specflow.ops.lookup_ops import allow_asset_directory

    init = None
    if INIT_OP_SIGNATURE in meta_graph.signature_def:
        outputs = meta_graph.signature_def[INIT_OP_SIGNATURE].outputs
        if outputs:
            init = next(iter(outputs.values())).name
    for key in ("saved_model_main_op", "legacy_init_op"):
        if init is None and key in meta_graph.collection_def and meta_graph.collection_def[key].node_list.value:
            init = meta_graph.collection_def[key].node_list.value[0]
    if not init:
        return
    init = init.split(":")[0].lstrip("^")
    if init not in nodes:
        raise ExportError(f"the init op '{init}' is not in the graph (corrupted SavedModel?)")
    assets = os.path.join(model.export_dir, "assets")
    feeds = {}
    for asset in meta_graph.asset_file_def:
        name = check_reference(asset.tensor_info.name, "asset_file_def: ")
        path = os.path.join(assets, os.path.basename(asset.filename))
        feeds[canonical_tensor(name)] = np.array(path.encode("utf-8"), dtype=object)
    if feeds:
        allow_asset_directory(assets)
    try:
        check_supported(model.graph_def, [init], list(feeds))
    except SpecflowError:
        return
    try:
        model.session.run([], feeds, targets=[init])
    except SpecflowError as e:
        raise ExportError(f"cannot run the init op: {e.format()}") from None


def restore_variables(model: LoadedModel, saver_def, nodes) -> None:
    """Run the saver_def's restore op with the filename tensor fed the variables prefix."""
    has_variables = any(n.op == "VarHandleOp" for n in model.graph_def.nodes)
    if not saver_def.restore_op_name:
        if has_variables:
            raise ExportError(f"{model.export_dir}: the graph has variables but no saver_def to restore them")
        return
    prefix = variables_prefix(model.export_dir)
    for path in (index_filename(prefix), data_filename(prefix)):
        if not os.path.isfile(path):
            raise ExportError("variables file missing (corrupted or incomplete SavedModel)", location=Location(path))
    restore_op = saver_def.restore_op_name.split(":")[0].lstrip("^")
    filename = check_reference(saver_def.filename_tensor_name, "saver_def: ")
    for what, name in (("restore op", restore_op), ("filename tensor", filename.split(":")[0])):
        if name not in nodes:
            raise ExportError(f"saver_def names {what} '{name}', which the graph lacks",
                              location=Location(os.path.join(model.export_dir, SAVED_MODEL_FILENAME)))
    check_supported(model.graph_def, [restore_op], [filename])
    try:
        model.session.run([], {filename: np.array(prefix.encode("utf-8"), dtype=object)}, targets=[restore_op])
    except SpecflowError as e:
        raise ExportError(f"cannot restore the variables: {e.format()}") from None
