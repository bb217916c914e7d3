"""Restoring an sf.train.Checkpoint, and the load status TensorFlow 2's ``restore`` returns.

Object-based (the bundle has ``_CHECKPOINTABLE_OBJECT_GRAPH``): the Python objects are matched to
the checkpoint's by walking both graphs from the root through children of the same name
(io/tf_object_graph's rule); each matched variable takes the value its checkpoint key names. An
optimizer's checkpointed values that have no Python variable yet (its slots, made on the first
``apply_gradients``) are handed to it by path (``slots/m/0``), to assign when it makes them.

Name-based (no object graph: ``specflow train``'s checkpoints, specflow's earlier ``model/w``
layout): each variable by its name (a spec-loaded module's spec names; ``<keyword>/<path>``).

The status objects mirror TF's: ``assert_consumed()`` (every checkpointed value and every tracked
variable matched), ``assert_existing_objects_matched()`` (every tracked variable that exists now
took a value, an optimizer's slot restored when made included), ``assert_nontrivial_match()``
(something besides the root matched), each raising AssertionError and returning the status;
``expect_partial()``, ``run_restore_ops()`` and ``initialize_or_restore()`` (nothing to run:
restores are eager). ``restore(None)`` returns InitializationOnlyStatus, whose assertions fail.
"""

from __future__ import annotations

import numpy as np

from specflow.api.checkpoint import ObjectTree
from specflow.errors import CheckpointError
from specflow.export.object_graph import Obj, SavedObjects, Var, _number
from specflow.graph.shapes import Shape
from specflow.io.tf_object_graph import VALUE_ATTRIBUTE


def restore_objects(ckpt, graph, tensors: dict, path: str) -> CheckpointLoadStatus:
    """Assign every tracked variable its value in ``tensors`` (a bundle whose object graph is
    ``graph``); dtypes and shapes are checked before anything is assigned."""
    from specflow.api.optimizers import Optimizer

    tree = ObjectTree(ckpt, place_specs=True)
    matched = match(tree.root, graph)
    plan, used = [], set()
    for uid, var in tree.variables.items():
        if tree.fixed.get(uid) in tensors:  # a spec-loaded module's variable: by its name
            value = np.asarray(tensors[tree.fixed[uid]])
            _check(path, tree.fixed[uid], value, var)
            plan.append((var, value))
            continue
        cid = matched.get(("var", uid))
        key = None if cid is None else _value_key(graph.nodes[cid])
        if key is None:
            continue
        if key not in tensors:
            raise CheckpointError(f"checkpoint {path}: its object graph names '{key}', which the bundle lacks")
        value = np.asarray(tensors[key])
        _check(path, key, value, var)
        plan.append((var, value))
        used.add(cid)
    deferred = {}
    for obj_id, owner in tree.owners.items():
        cid = matched.get(obj_id)
        if not isinstance(owner, Optimizer) or cid is None:
            continue
        handed = {}
        for sub, rel in _descendants(graph, cid):
            key = _value_key(graph.nodes[sub])
            if sub not in used and key is not None and key in tensors:
                handed[rel] = np.asarray(tensors[key])
                deferred[sub] = (owner, rel, handed[rel])
        owner._deferred = handed
    for var, value in plan:
        var.assign(value)
    return CheckpointLoadStatus(ckpt, graph, {v._uid for v, _ in plan}, used, set(matched.values()), deferred)


def restore_by_name(ckpt, tensors: dict, path: str) -> NameBasedSaverStatus:
    """A bundle without an object graph: each variable by its name-based key."""
    from specflow.api.optimizers import Optimizer

    tree = ObjectTree(ckpt)
    plan = []
    for name, var in tree.legacy.items():
        if name in tensors:
            value = np.asarray(tensors[name])
            _check(path, name, value, var)
            plan.append((var, value))
    deferred = {}
    for key, obj in ckpt._objects.items():
        if isinstance(obj, Optimizer):
            prefix = key + "/"
            obj._deferred = {n[len(prefix):]: np.asarray(v) for n, v in tensors.items()
                             if n.startswith(prefix) and n not in tree.legacy}
            deferred.update({prefix + rel: (obj, rel, v) for rel, v in obj._deferred.items()})
    for var, value in plan:
        var.assign(value)
    return NameBasedSaverStatus(ckpt, {v._uid for v, _ in plan}, deferred)


def match(root, graph) -> dict:
    """Python node -> checkpoint node id, breadth first from the roots through children of the
    same name. Keys: ("var", uid) for a variable, id(Obj) for an object."""
    matched = {id(root): 0}
    queue = [(root, 0)]
    while queue:
        obj, cid = queue.pop(0)
        if not isinstance(obj, Obj) or cid >= len(graph.nodes):
            continue
        by_name = {c.local_name: c.node_id for c in graph.nodes[cid].children}
        for name, child in obj.children.items():
            k = _key(child)
            if k not in matched and name in by_name:
                matched[k] = by_name[name]
                queue.append((child, by_name[name]))
    return matched


def _key(item):
    return ("var", item.key) if isinstance(item, Var) else id(item)


def _value_key(node) -> str | None:
    return next((a.checkpoint_key for a in node.attributes if a.name == VALUE_ATTRIBUTE), None)


def _descendants(graph, cid: int):
    """(node id, path from ``cid``) for every node below ``cid``, each once, breadth first."""
    seen, queue = {cid}, [(cid, "")]
    while queue:
        node, path = queue.pop(0)
        for c in graph.nodes[node].children:
            if c.node_id not in seen and c.node_id < len(graph.nodes):
                seen.add(c.node_id)
                rel = f"{path}/{c.local_name}" if path else c.local_name
                yield c.node_id, rel
                queue.append((c.node_id, rel))


def _check(path: str, key: str, value: np.ndarray, var) -> None:
    if value.dtype != var.dtype.numpy or not var.shape.is_compatible_with(Shape(value.shape)):
        raise CheckpointError(f"checkpoint {path} holds '{key}' as {value.dtype}{list(value.shape)}, "
                              f"the variable '{var.name}' is {var.dtype.name}{var.shape}")


def _checkpoint_names(graph) -> dict[int, str]:
    """Each checkpoint node's path, as TF prints it: ``(root).model.w``."""
    names, queue = {0: "(root)"}, [0]
    while queue:
        node = queue.pop(0)
        for c in graph.nodes[node].children:
            if c.node_id not in names:
                names[c.node_id] = f"{names[node]}.{c.local_name}"
                queue.append(c.node_id)
    return names


def _variable_paths(tree: ObjectTree) -> dict[str, str]:
    """Variable uid -> its attribute path from the checkpoint (``model/w``)."""
    nodes, _, paths = _number(SavedObjects(tree.root))
    return {item.key: tree.fixed.get(item.key, paths[i]) for i, item in enumerate(nodes) if isinstance(item, Var)}


class _LoadStatus:
    def expect_partial(self):
        """Silence warnings about an incomplete restore (specflow prints none)."""
        return self

    def run_restore_ops(self, session=None) -> None:
        """Nothing to run: values are assigned when restored."""

    def initialize_or_restore(self, session=None) -> None:
        """Nothing to run: variables are initialized when made and restored eagerly."""


class CheckpointLoadStatus(_LoadStatus):
    """What an object-based restore returns."""

    def __init__(self, ckpt, graph, restored: set, used: set, matched_ids: set, deferred: dict):
        self._ckpt = ckpt
        self._graph = graph
        self._restored = restored  # uids of the variables assigned
        self._used = used  # checkpoint node ids whose value was assigned
        self._matched_ids = matched_ids  # checkpoint node ids matched to a Python object
        self._deferred = deferred  # checkpoint node id -> (optimizer, slot path, value) handed over

    def _consumed(self, cid: int) -> bool:
        if cid in self._used:
            return True
        if cid not in self._deferred:
            return False
        opt, rel, value = self._deferred[cid]
        return opt._deferred.get(rel) is not value  # taken by the slot it was for

    def assert_existing_objects_matched(self):
        """AssertionError unless every tracked variable that exists now took a checkpoint value."""
        tree = ObjectTree(self._ckpt, place_specs=True)
        matched = match(tree.root, self._graph)
        paths = _variable_paths(tree)
        unbound = []
        for uid in tree.variables:
            cid = matched.get(("var", uid))
            if uid not in self._restored and not (cid is not None and cid in self._deferred and self._consumed(cid)):
                unbound.append(paths.get(uid, uid))
        if unbound:
            raise AssertionError(f"Found {len(unbound)} Python objects that were not bound to checkpointed values, "
                                 f"likely due to changes in the Python program. Showing {min(10, len(unbound))} of "
                                 f"{len(unbound)} unmatched objects: {unbound[:10]}")
        return self

    def assert_consumed(self):
        """AssertionError unless every tracked variable took a value and every value in the
        checkpoint was taken (an optimizer's slot values once it has made the slots)."""
        self.assert_existing_objects_matched()
        names = None
        for cid, node in enumerate(self._graph.nodes):
            if node.attributes and not self._consumed(cid):
                names = names or _checkpoint_names(self._graph)
                raise AssertionError(f"Unresolved object in checkpoint {names.get(cid, cid)}: "
                                     f"{[a.checkpoint_key for a in node.attributes]}")
        return self

    def assert_nontrivial_match(self):
        """AssertionError if nothing besides the root matched."""
        if len(self._matched_ids) <= 1:
            if ObjectTree(self._ckpt).variables:
                raise AssertionError("Nothing except the root object matched a checkpointed value. Typically this "
                                     "means that the checkpoint does not match the Python program.")
            raise AssertionError("Nothing to load. No dependencies have been added to the checkpoint yet.")
        return self


class NameBasedSaverStatus(_LoadStatus):
    """What a restore of a checkpoint without an object graph returns (TF's name-based mode):
    every assertion checks that each tracked variable was restored."""

    def __init__(self, ckpt, restored: set, deferred: dict):
        self._ckpt = ckpt
        self._restored = restored
        self._deferred = deferred  # name -> (optimizer, slot path, value) handed over
        self._optional: set = set()  # uids a name-based checkpoint may lack (the save counter)

    def assert_consumed(self):
        tree = ObjectTree(self._ckpt)
        names = {v._uid: n for n, v in tree.legacy.items()}
        for uid in tree.variables:
            if uid in self._restored or uid in self._optional:
                continue
            name = names.get(uid, uid)
            if name in self._deferred:
                opt, rel, value = self._deferred[name]
                if opt._deferred.get(rel) is not value:
                    continue
            raise AssertionError(f"Object not restored: {name}")
        return self

    def assert_existing_objects_matched(self):
        return self.assert_consumed()

    def assert_nontrivial_match(self):
        return self.assert_consumed()


class InitializationOnlyStatus(_LoadStatus):
    """What ``restore(None)`` returns: nothing restored; the assertions fail, as TF's."""

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_existing_objects_matched(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_nontrivial_match(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def run_restore_ops(self, session=None) -> None:
        raise AssertionError("No checkpoint specified, so no restore ops are available "
                             "(save_path=None to Saver.restore).")
