"""load_spec: YAML text -> positions -> overrides -> pydantic models -> GraphDef -> verified Spec.

Every error on the way is a SpecflowError carrying its location, ready for the CLI to print.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specflow.errors import Location, SpecError, SpecflowError
from specflow.graph.graph_def import GraphDef, canonical_tensor
from specflow.graph.shape_inference import ShapeInferencer
from specflow.graph.verify import verify
from specflow.ops.registry import TensorSpec
from specflow.schema.models import ModelSpec, parse_model
from specflow.schema.overrides import apply_overrides
from specflow.schema.source import SourceMap
from specflow.schema.train_checks import check_train
from specflow.schema.train_config import TrainConfig
from specflow.schema.yaml_loader import MAX_BYTES, load_yaml

Overrides = Iterable[str] | Mapping[str, Any] | None


@dataclass
class Spec:
    """A loaded, validated and lowered spec."""

    path: str
    model: ModelSpec
    source: SourceMap
    lowered: Any  # specflow.schema.lower.Lowered
    inferencer: ShapeInferencer

    @property
    def graph_def(self) -> GraphDef:
        return self.lowered.graph_def

    @property
    def signatures(self) -> dict:
        return self.lowered.signatures

    @property
    def variables(self) -> list:
        return self.lowered.variables

    @property
    def train(self) -> TrainConfig | None:
        """The validated ``train:`` section (checked against the model), or None."""
        return self.model.train

    def resolve(self, ref: str) -> str:
        """The tensor a spec reference names, as signatures resolve it: ``loss``, ``xent:0``, a
        function-call node (its first output), a variable (its value)."""
        return canonical_tensor(self.lowered.namespace.resolve(ref, (), _ResolveErrors))

    def tensor_spec(self, name: str) -> TensorSpec:
        """dtype and static shape of a tensor (``"probs"``, ``"xent:1"``)."""
        return self.inferencer.spec(name)


class _ResolveErrors:
    """The error factory Namespace.resolve expects, for references resolved after loading."""

    @staticmethod
    def error(message: str, path: tuple, key: bool = False, cls=SpecError) -> SpecflowError:
        return cls(message)


def load_spec(path: str | Path, overrides: Overrides = None) -> Spec:
    """Load the spec file at ``path`` (``overrides``: ``["nodes.hidden.units=64"]`` or a dict)."""
    p = Path(path)
    try:
        # Read at most one byte past the limit: a device or pipe (/dev/zero) reports no size.
        with open(p, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise SpecError(f"file is too large (more than the limit of {MAX_BYTES} bytes)", location=Location(str(path)))
    except OSError as e:
        raise SpecError(f"cannot read spec: {e.strerror}", location=Location(str(path))) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"spec is not UTF-8 text (byte {e.start})", location=Location(str(path))) from None
    return load_spec_text(text, str(path), overrides)


def load_spec_text(text: str, filename: str = "<string>", overrides: Overrides = None) -> Spec:
    """Load a spec from ``text``; ``filename`` names it in error locations."""
    from specflow.schema.lower import lower_spec

    tree, source = load_yaml(text, filename)
    tree = apply_overrides(tree, source, overrides)
    model = parse_model(tree, source)
    lowered = lower_spec(model, source, filename)
    try:
        inferencer = verify(lowered.graph_def)
    except SpecflowError as e:
        if e.location is None:
            e.location = Location(filename)
        raise
    spec = Spec(path=filename, model=model, source=source, lowered=lowered, inferencer=inferencer)
    check_train(spec)
    if model.cluster is not None:
        # The cluster section's checks (distributed/cluster_spec.py never imports Ray).
        from specflow.distributed.cluster_spec import cluster_from_section

        cluster_from_section(model.cluster, source, lowered.graph_def)
    return spec
