"""The ``train:`` section checked against the lowered model (train_config.py checks it alone).

Names resolve as in signatures: ``loss``, ``block/d``, ``xent:0``, a variable. Each problem is a
SpecError at the file:line:col of the offending value, all reported together:

- ``loss`` is a float scalar (known rank 0 or unknown rank); ``summaries.scalars`` and
  ``eval.metrics`` are real scalars;
- ``summaries.histograms`` name variables;
- ``data.feeds`` keys are model inputs whose dtype and shape fit the source field when the
  source's fields are known (builtin datasets, CSV), and every input without a default that the
  loss, a summary or a metric depends on is fed.
"""

from __future__ import annotations

from specflow.errors import SpecError, SpecflowError, did_you_mean
from specflow.graph import dtypes
from specflow.graph.graph_def import canonical_tensor, parse_input
from specflow.graph.shapes import Shape
from specflow.schema.namespace import split_ref
from specflow.schema.source import dotted
from specflow.schema.validation_errors import raise_spec_errors

_LISTED = 8  # names listed when no close match exists


def check_train(spec) -> None:
    """Check ``spec.model.train`` (a loaded Spec: model, source, lowered, tensor_spec) against the
    model; raises SpecError or MultipleErrors. Nothing to do without a train section."""
    if spec.model.train is not None:
        raise_spec_errors(_TrainChecker(spec).run())


class _TrainChecker:
    def __init__(self, spec):
        self.spec = spec
        self.train = spec.model.train
        self.ns = spec.lowered.namespace
        self.nodes = spec.graph_def.node_map()
        self.variables = {v.name: v for v in spec.variables}
        self.errors: list[SpecflowError] = []

    def error(self, message: str, path: tuple, key: bool = False, cls=SpecError) -> SpecflowError:
        """A SpecError at ``path`` (also called by Namespace.resolve)."""
        source = self.spec.source
        loc = source.key_location(path) if key else source.location(path)
        return cls(message, location=loc, path=dotted(path))

    def run(self) -> list[SpecflowError]:
        t = self.train
        targets = [("loss", t.loss, ("train", "loss"))]
        targets += [("scalar summary", ref, ("train", "summaries", "scalars", i)) for i, ref in enumerate(t.summaries.scalars)]
        if t.eval is not None:
            targets += [("metric", ref, ("train", "eval", "metrics", i)) for i, ref in enumerate(t.eval.metrics)]
        needed = []
        for what, ref, path in targets:
            if what == "scalar summary" and ref == "learning_rate":  # hooks.py's tag for the rate
                msg = ("the scalar summary 'learning_rate' would be written under the tag of training's own "
                       "learning-rate summary; name the node otherwise")
                self.errors.append(self.error(msg, path))
                continue
            tensor = self._scalar(what, ref, path)
            if tensor is not None:
                needed.append((what, ref, tensor))
                if what == "loss":
                    self._trains_something(ref, tensor, path)
        for i, ref in enumerate(t.summaries.histograms):
            self._variable(ref, ("train", "summaries", "histograms", i))
        self._feeds(needed)
        self._reserved_names()
        self._distributed()
        return self.errors

    def _distributed(self) -> None:
        """``replicas_to_aggregate`` is SyncReplicasOptimizer's: an async run has nothing to aggregate."""
        d = self.train.distributed
        if d is not None and d.mode == "async" and d.replicas_to_aggregate is not None:
            msg = ("applies to mode: sync (gradients averaged per step); async applies each worker's update "
                   "as it arrives: set mode: sync or remove it")
            self.errors.append(self.error(msg, ("train", "distributed", "replicas_to_aggregate")))

    def _reserved_names(self) -> None:
        """Names the training graph gives its own nodes (train/graph.py, optimizers.py)."""
        model = self.spec.model
        for name, what in (("global_step", "training's step counter"), ("train_init", "training's initializer op")):
            for section, kind in (("nodes", "node"), ("inputs", "input"), ("variables", "variable")):
                if name in (getattr(model, section) or {}):
                    msg = f"'{name}' is the name of {what}; name the {kind} otherwise"
                    self.errors.append(self.error(msg, (section, name), key=True))

    # --- tensors ------------------------------------------------------------------------------

    def _resolve(self, what: str, ref: str, path: tuple) -> str | None:
        if not self.ns.knows(ref):
            close = did_you_mean(split_ref(ref)[0], self.ns.names() + list(self.variables))
            self.errors.append(self.error(f"{what} '{ref}' names no tensor of the model" + close, path))
            return None
        try:
            return canonical_tensor(self.ns.resolve(ref, path, self))
        except SpecflowError as e:
            self.errors.append(e if e.location else self.error(e.message, path))
            return None

    def _scalar(self, what: str, ref: str, path: tuple) -> str | None:
        """The tensor ``ref`` names if it is a scalar (a float one for the loss), else None."""
        tensor = self._resolve(what, ref, path)
        if tensor is None:
            return None
        spec = self.spec.tensor_spec(tensor)
        floating = what == "loss"
        if not (spec.dtype.is_floating if floating else spec.dtype in dtypes.REAL):
            wanted = "a float" if floating else "an integer or float"
            self.errors.append(self.error(f"{what} '{ref}' is {spec.dtype.name}; expected {wanted} scalar", path))
            return None
        if spec.shape.rank not in (None, 0):
            msg = f"{what} '{ref}' has shape {spec.shape}; expected a scalar — reduce it with Mean"
            self.errors.append(self.error(msg, path))
            return None
        return tensor

    def _trains_something(self, ref: str, tensor: str, path: tuple) -> None:
        trainable = {parse_input(v.handle).node for v in self.variables.values() if v.trainable}
        if not trainable:
            self.errors.append(self.error("the model has no trainable variables: there is nothing to train", path))
        elif not trainable & self._upstream(parse_input(tensor).node):
            msg = f"the loss '{ref}' depends on no trainable variable: training would change nothing"
            self.errors.append(self.error(msg, path))

    def _variable(self, ref: str, path: tuple) -> None:
        if ref in self.variables:
            return
        names = list(self.variables)
        close = did_you_mean(ref, names)
        if not close and names:
            close = "; variables: " + ", ".join(names[:_LISTED]) + (", ..." if len(names) > _LISTED else "")
        kind = "is not a variable" if self.ns.knows(ref) else "names no variable"
        self.errors.append(self.error(f"histogram '{ref}' {kind}" + close, path))

    # --- feeds --------------------------------------------------------------------------------

    def _feeds(self, needed: list[tuple[str, str, str]]) -> None:
        data = self.train.data
        inputs = self.spec.model.inputs
        base = ("train", "data", "feeds")
        for name, field in data.feeds.items():
            if name not in inputs:
                msg = f"'{name}' is not a model input" + did_you_mean(name, inputs) + "; feeds map model inputs to source fields"
                self.errors.append(self.error(msg, base + (name,), key=True))
            else:
                self._field_fits(name, field, base + (name,))
        # Placeholder node -> input name, for inputs that have no default and are not fed.
        flag = self.spec.lowered.training_flag  # fed by training (true) and evaluation (false)
        unfed = {
            parse_input(self.ns.resolve(name, base, self)).node: name
            for name, spec in inputs.items()
            if not spec.has_default and name not in data.feeds and name != flag
        }
        reported: set[str] = set()
        for what, ref, tensor in needed:
            upstream = self._upstream(parse_input(tensor).node)
            for node, name in unfed.items():
                if node in upstream and name not in reported:
                    reported.add(name)
                    msg = f"input '{name}' is needed by the {what} '{ref}' but is not fed"
                    self.errors.append(self.error(msg, base))

    def _field_fits(self, name: str, field: str, path: tuple) -> None:
        """The input's dtype and shape accept the source field's batches, when they are known."""
        fields = self.train.data.source.fields()
        if not fields or fields.get(field) is None:
            return
        dtype, dims = fields[field]
        have = self.spec.model.inputs[name]
        want_shape, have_shape = Shape(dims), Shape(have.shape)
        if dtype != have.dtype or not want_shape.is_compatible_with(have_shape):
            msg = f"input '{name}' is {have.dtype} {have_shape} but source field '{field}' is {dtype} {want_shape}"
            if hasattr(self.train.data.source, "label_dtype") and field == "y" and have.dtype == "float32":
                msg += " (label_dtype: float32 reads a CSV label as a real number)"
            self.errors.append(self.error(msg, path))

    def _upstream(self, start: str) -> set[str]:
        """``start`` and every node it depends on (data and control inputs)."""
        seen, stack = {start}, [start]
        while stack:
            node = self.nodes.get(stack.pop())
            for inp in node.inputs if node is not None else ():
                dep = parse_input(inp).node
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen
