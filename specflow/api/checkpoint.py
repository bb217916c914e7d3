"""sf.train.Checkpoint: TensorFlow 2's object-based checkpoints of modules and variables.

A checkpoint is a TF tensor bundle (io/tensor_bundle) holding, as ``tf.train.Checkpoint`` writes
it, the ``_CHECKPOINTABLE_OBJECT_GRAPH`` (a ``TrackableObjectGraph``: the checkpoint object, the
objects it tracks by keyword, their attributes, breadth first, each variable's checkpoint key)
and each variable under ``PATH/.ATTRIBUTES/VARIABLE_VALUE`` (PATH: the attribute names from the
checkpoint, escaped as TF does), so TensorFlow restores what specflow saves and the other way
round. The tree is export/object_graph's (the SavedModel writer's numbering and checkpoint
graph): an sf.Module's attributes in assignment order (TF's), lists and dicts of variables and
modules, the ``save_counter`` variable once made.

- ``save(file_prefix)`` adds one to ``save_counter``, writes ``<prefix>-<N>.index`` /
  ``.data-00000-of-00001`` and names it in the ``checkpoint`` state file of the prefix's directory
  (TensorFlow's text ``CheckpointState``; atomic: temp file, fsync, rename); ``write(path)`` writes
  the bundle alone. ``sf.train.latest_checkpoint(dir)`` reads that state file as TF does.
- ``restore(path)`` / ``read(path)`` match the checkpoint's objects to the Python ones by name from
  the root, as TF does, assign every matched variable (dtype and shape checked first: a mismatch
  is a CheckpointError and nothing is assigned) and return a load status (checkpoint_status.py)
  whose ``assert_consumed()`` & co. raise AssertionError for what did not match. Values for an
  optimizer's slots, made on its first ``apply_gradients``, are handed to it to assign then (TF's
  deferred restoration). ``restore(None)`` does nothing (TF's InitializationOnlyStatus); a
  SavedModel directory restores its ``variables/variables``; a checkpoint directory (specflow's
  extension) its latest checkpoint.
- A module loaded from a spec keeps its variables' spec names as their keys (``hidden/kernel``,
  ``global_step``, the optimizer's slots: the names ``specflow train`` writes), outside the object
  graph (TF's object-based restore wants ``.ATTRIBUTES`` keys); a checkpoint of spec modules alone
  has no object graph at all (``save_counter`` by name too): a name-based checkpoint, as TF1's
  Saver writes, which TF restores by name (into ``tf.saved_model.load`` of the spec's export,
  say). A training run's checkpoint restores into ``sf.load(spec)``, and one saved from it resumes
  ``specflow train``. Bundles without an object graph (these, and specflow's earlier ``model/w``
  layout) restore by name.

``sf.train.CheckpointManager`` (numbered saves, keep-N, the state file) is checkpoint_manager.py.
"""

from __future__ import annotations

import os
import secrets

import numpy as np
from google.protobuf import text_format
from google.protobuf.message import DecodeError
from tensorboard.compat.proto import trackable_object_graph_pb2

from specflow.errors import CheckpointError, Location
from specflow.export.object_graph import Obj, SavedObjects, Var, _checkpoint_graph, _number
from specflow.io.checkpoint import STATE_FILENAME
from specflow.io.extra_protos import CheckpointState
from specflow.io.tensor_bundle import fsync_dir, index_filename, read_bundle, write_bundle, write_synced
from specflow.io.tf_object_graph import OBJECT_GRAPH_KEY, VALUE_ATTRIBUTE

STATE_TEMP_SUFFIX = ".tmp"  # io/checkpoint's temp name for the state file: "checkpoint.tmp<hex>"


class Checkpoint:
    """``tf.train.Checkpoint(root=None, **kwargs)``: tracks ``root``'s attributes and each keyword's
    object (an sf.Module, an sf.Variable, a module loaded by sf.load, or lists and dicts of them)."""

    def __init__(self, root=None, **kwargs):
        from specflow.api.module import Module

        if root is not None and not isinstance(root, Module):
            raise CheckpointError(f"Checkpoint: the root is a {type(root).__name__}; give an sf.Module "
                                  "(or track objects by keyword: Checkpoint(model=..., optimizer=...))")
        for key, obj in kwargs.items():
            if not _trackable(obj):
                raise CheckpointError(f"Checkpoint: '{key}' is a {type(obj).__name__}; track modules and "
                                      "variables (or lists and dicts of them)")
            if root is not None and key in vars(root) and vars(root)[key] is not obj:
                raise CheckpointError(f"Checkpoint: cannot track keyword '{key}': root.{key} already exists")
        self._root = root
        self._objects = dict(kwargs)
        self._save_counter = None  # made on the first save or restore, as TF's

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"'Checkpoint' object has no attribute '{name}'")

    @property
    def save_counter(self):
        """An int64 variable, 0 until the first ``save`` (each save adds one): numbers the saves."""
        if self._save_counter is None:
            from specflow.api.variables import Variable

            self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        return self._save_counter

    # --- writing -------------------------------------------------------------------------------------

    def write(self, file_prefix, options=None) -> str:
        """Write the checkpoint at ``file_prefix`` (``.index`` and ``.data-00000-of-00001``): no
        number, no state file. Returns ``file_prefix``."""
        path = os.fspath(file_prefix)
        try:
            write_bundle(path, self._bundle())
        except OSError as e:
            raise CheckpointError(f"cannot write checkpoint {path}: {e.strerror or e}") from None
        return path

    def save(self, file_prefix, options=None) -> str:
        """``save_counter`` += 1, then write ``<file_prefix>-<save_counter>`` and name it the latest
        in the ``checkpoint`` state file beside it. Returns that path."""
        counter = self.save_counter
        counter.assign_add(np.int64(1))
        path = f"{os.fspath(file_prefix)}-{int(counter.numpy())}"
        self.write(path)
        try:
            _record_latest(path)
        except OSError as e:
            raise CheckpointError(f"cannot write the checkpoint state beside {path}: {e.strerror or e}") from None
        return path

    def _bundle(self) -> dict:
        """Checkpoint key -> value for every tracked variable, and the object graph."""
        tree = ObjectTree(self)
        nodes, children, paths = _number(SavedObjects(tree.root))
        keys = {item.key: f"{paths[i]}/.ATTRIBUTES/{VALUE_ATTRIBUTE}"
                for i, item in enumerate(nodes) if isinstance(item, Var)}
        counter = None if self._save_counter is None else self._save_counter._uid
        # Only spec-loaded modules (and the counter): a name-based checkpoint, as TF1's Saver
        # writes; TF restores it by name (into tf.saved_model.load of the spec's export, say).
        by_name = bool(tree.fixed) and set(keys) <= {counter}
        if by_name and counter is not None:
            keys = {counter: "save_counter"}
        owner: dict[str, str] = {}
        for uid, key in [*keys.items(), *tree.fixed.items()]:
            if key in owner or key == OBJECT_GRAPH_KEY:
                raise CheckpointError(f"Checkpoint: two variables would be saved as '{key}'")
            owner[key] = uid
        tensors = {key: np.asarray(tree.variables[uid]) for key, uid in owner.items()}
        if not by_name:
            graph = _checkpoint_graph(nodes, children, keys)
            for proto, item in zip(graph.nodes, nodes):
                if isinstance(item, Var):
                    proto.attributes[0].full_name = tree.variables[item.key].name  # TF: the variable's name
            tensors[OBJECT_GRAPH_KEY] = np.array(graph.SerializeToString(), dtype=object)
        return tensors

    # --- reading -------------------------------------------------------------------------------------

    def restore(self, save_path, options=None):
        """Restore from ``save_path`` (a checkpoint path, as ``save`` and ``latest_checkpoint``
        return; a SavedModel directory; a checkpoint directory: its latest). ``None`` restores
        nothing. Returns the load status."""
        from specflow.api.checkpoint_status import InitializationOnlyStatus, NameBasedSaverStatus

        counter = self.save_counter  # made now, so the checkpoint's count restores it (TF: deferred)
        if save_path is None:
            return InitializationOnlyStatus()
        path = os.fspath(save_path)
        if os.path.isdir(path):
            if any(os.path.exists(os.path.join(path, f)) for f in ("saved_model.pb", "saved_model.pbtxt")):
                path = os.path.join(path, "variables", "variables")
            else:
                latest = latest_checkpoint(path)
                if latest is None:
                    raise CheckpointError(f"{path} is a directory without a checkpoint (no 'checkpoint' state "
                                          "file naming one) or SavedModel")
                path = latest
        status = self.read(path)
        if isinstance(status, NameBasedSaverStatus):
            status._optional.add(counter._uid)  # a name-based checkpoint may lack it (TF's rule)
        return status

    def read(self, save_path, options=None):
        """Restore from a checkpoint written by ``write`` (or ``save``). Returns the load status."""
        from specflow.api.checkpoint_status import restore_by_name, restore_objects
        path = os.fspath(save_path)
        if not os.path.exists(index_filename(path)):
            raise CheckpointError(f"no checkpoint at {path} ({os.path.basename(index_filename(path))} not found); "
                                  "the checkpoint suffix (the '-1' in 'path/to/ckpt-1') missing?",
                                  location=Location(index_filename(path)))
        tensors = read_bundle(path)
        if OBJECT_GRAPH_KEY not in tensors:
            return restore_by_name(self, tensors, path)
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        try:
            graph.ParseFromString(bytes(np.asarray(tensors.pop(OBJECT_GRAPH_KEY), dtype=object).item()))
        except (DecodeError, ValueError, TypeError) as e:
            raise CheckpointError(f"checkpoint {path}: corrupted {OBJECT_GRAPH_KEY} ({e})") from None
        return restore_objects(self, graph, tensors, path)

    def sync(self) -> None:
        """Wait for pending saves (none: saves are synchronous)."""

    def __repr__(self) -> str:
        return f"<sf.train.Checkpoint tracking {', '.join(self._objects) or 'nothing'}>"


def _trackable(obj) -> bool:
    from specflow.api.module import Module
    from specflow.api.variables import Variable

    if isinstance(obj, (Module, Variable)):
        return True
    if isinstance(obj, (list, tuple)):
        return all(_trackable(x) for x in obj)
    if isinstance(obj, dict):
        return all(_trackable(x) for x in obj.values())
    return False


class ObjectTree:
    """What ``ckpt`` tracks, now, as export/object_graph's Obj/Var tree (TF's dependency graph):
    ``root``; ``variables``: the variable's uid (a Var's key) -> sf.Variable; ``fixed``: uid ->
    the spec name of a spec-loaded module's variable, its key outside the object graph;
    ``owners``: id(Obj) -> the Python object; ``legacy``: name -> variable under specflow's
    name-based keys (``model/w``, a spec's names, ``save_counter``)."""

    def __init__(self, ckpt: Checkpoint, place_specs: bool = False):
        self.place_specs = place_specs  # spec variables in the tree too, by name scope (to match)
        self.variables: dict = {}
        self.fixed: dict[str, str] = {}
        self.owners: dict[int, object] = {}
        self._memo: dict[int, object] = {}
        root = ckpt._root
        self.root = self.node(root) if root is not None else Obj()
        self.owners.setdefault(id(self.root), ckpt)
        for key in sorted(ckpt._objects):  # TF attaches the keywords in sorted order
            child = self.node(ckpt._objects[key])
            if child is not None and key not in self.root.children:
                self.root.children[key] = child
        if ckpt._save_counter is not None and "save_counter" not in self.root.children:
            self.root.children["save_counter"] = self.node(ckpt._save_counter)
        self.legacy = self._legacy(ckpt)

    def node(self, value):
        from specflow.api.module import Module
        from specflow.api.saved import LoadedModule
        from specflow.api.variables import Variable

        if isinstance(value, Variable):
            self.variables[value._uid] = value
            return Var(value._uid)
        if id(value) in self._memo:
            return self._memo[id(value)]
        if isinstance(value, LoadedModule) and value._spec is not None:
            # its variables by their spec names, outside the object graph (whose keys TF wants
            # as PATH/.ATTRIBUTES/...): the keys `specflow train` reads. Placed by name scope only
            # to match an object-based checkpoint (TF's of the spec's export loaded, say).
            node = self._memo[id(value)] = Obj() if self.place_specs else None
            for name, var in value.named_variables().items():
                self.variables[var._uid] = var
                self.fixed[var._uid] = name
                if node is not None:
                    _place(node, name, Var(var._uid))
            return node
        if isinstance(value, LoadedModule):  # a loaded SavedModel: its variables' attribute paths
            node = self._memo[id(value)] = Obj()
            self.owners[id(node)] = value
            for name, var in value.named_variables().items():
                self.variables[var._uid] = var
                _place(node, name, Var(var._uid))
            return node
        if isinstance(value, Module):
            node = self._memo[id(value)] = Obj()
            self.owners[id(node)] = value
            for attr, v in list(vars(value).items()):  # assignment order, as TF's
                if attr.startswith("_sf_function_") or attr == "_module_name":
                    continue
                child = self.node(v)
                if child is not None:
                    node.children[attr] = child
            return node
        if isinstance(value, (list, tuple, dict)):
            node = self._memo[id(value)] = Obj("dict" if isinstance(value, dict) else "list")
            for k, v in (value.items() if isinstance(value, dict) else enumerate(value)):
                child = self.node(v)
                if child is not None:
                    node.children[str(k)] = child
            if not node.children:
                self._memo[id(value)] = None
                return None
            return node
        return None

    def _legacy(self, ckpt: Checkpoint) -> dict:
        from specflow.api.module import Module
        from specflow.api.saved import LoadedModule
        from specflow.api.variables import Variable

        def named(prefix: str, obj) -> dict:
            if isinstance(obj, LoadedModule) and obj._spec is not None:
                return obj.named_variables()  # the spec's own names: the CLI's checkpoints
            if isinstance(obj, Module):
                return {prefix + p: v for p, v in obj.named_variables().items()}
            if isinstance(obj, Variable):
                return {prefix.rstrip("/"): obj}
            return {}

        out = named("", ckpt._root) if ckpt._root is not None else {}
        for key, obj in ckpt._objects.items():
            out.update(named(key + "/", obj))
        if ckpt._save_counter is not None:
            out.setdefault("save_counter", ckpt._save_counter)
        return out


def _place(node, name: str, var) -> None:
    """A spec variable at its name-scope path under ``node`` (``hidden/kernel``: node.hidden.kernel),
    under its whole name where that path is taken, as export/object_graph.place_variable."""
    parts = name.split("/")
    cur = node
    for p in parts[:-1]:
        nxt = cur.children.setdefault(p, Obj())
        if not isinstance(nxt, Obj) or nxt.kind != "user":
            cur = None
            break
        cur = nxt
    if cur is not None and parts[-1] not in cur.children:
        cur.children[parts[-1]] = var
    elif name not in node.children:
        node.children[name] = var
    else:
        raise CheckpointError(f"Checkpoint: variable '{name}' has no free attribute name in the object graph")


# --- the state file ----------------------------------------------------------------------------------


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> str | None:
    """``tf.train.latest_checkpoint``: the path the ``checkpoint`` state file of ``checkpoint_dir``
    names as the latest (joined to the directory when relative), if its ``.index`` exists; else
    None (no state file, an unreadable one, a checkpoint since deleted)."""
    directory = os.fspath(checkpoint_dir)
    try:
        with open(os.path.join(directory, latest_filename or STATE_FILENAME), encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    state = CheckpointState()
    try:
        text_format.Parse(text, state)
    except text_format.ParseError:
        return None  # TF logs it and ignores the file
    path = state.model_checkpoint_path
    if not path:
        return None
    if not os.path.isabs(path):
        path = os.path.join(directory, path)
    return path if os.path.exists(path + ".index") else None


def _record_latest(path: str) -> None:
    """TF's ``Checkpoint.save`` bookkeeping: the ``checkpoint`` state file in ``path``'s directory
    names ``path`` (relative to it) as the latest and only checkpoint. Replaced atomically (temp
    file, fsync, rename), as io/checkpoint writes it."""
    directory = os.path.dirname(path) or "."
    name = os.path.basename(path)
    state = CheckpointState(model_checkpoint_path=name, all_model_checkpoint_paths=[name])
    tmp = os.path.join(directory, STATE_FILENAME + STATE_TEMP_SUFFIX + secrets.token_hex(8))
    try:
        write_synced(tmp, [text_format.MessageToString(state).encode("utf-8")])
        os.replace(tmp, os.path.join(directory, STATE_FILENAME))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    fsync_dir(directory)

