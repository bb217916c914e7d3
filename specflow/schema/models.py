"""The spec language as pydantic models (see the language doc for every field).

Validation is strict (``units: "64"`` is an error, not 64). Every model rejects unknown keys with
a did-you-mean over its fields; op and layer nodes accept extra keys and check them against the
op's OpDef (attrs, inputs and their aliases) or the layer's config class. Node kind is chosen by
which of ``op`` / ``layer`` / ``call`` is present. Function bodies stay raw (``$attr`` values are
substituted per call): they are checked here with each ``$attr`` replaced by its default, and
lowering validates them per call with :func:`parse_node`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from specflow.errors import OpError, SpecError, did_you_mean
from specflow.graph import dtypes
from specflow.ops.array_ops import const_value
from specflow.ops.registry import all_ops, get_op
from specflow.schema.initializers import InitializerSpec
from specflow.schema.layers import LAYERS
from specflow.schema.layers.partitioned import PartitionerConfig
from specflow.schema.source import SourceMap
from specflow.schema.spec_fields import (
    ATTR_REF_RE,
    COMMON_NODE_FIELDS,
    NODE_KINDS,
    SPEC_VERSION,
    TYPE_VAR_RE,
    Device,
    Dim,
    DTypeName,
    Ident,
    KnownDim,
    Name,
    NameList,
    PatternDim,
    Reference,
    StrictModel,
    Transfer,
    _check_dtype,
    _check_ref,
    _fail,
)
from specflow.schema.validation_errors import convert, custom_error, line_errors, raise_errors, show

if TYPE_CHECKING:
    from specflow.schema.train_config import TrainConfig

# --- inputs, variables ------------------------------------------------------------------------


class _OptionalDefault(StrictModel):
    """A model whose ``default`` may be given; ``default: null`` counts as given."""

    @property
    def has_default(self) -> bool:
        return "default" in self.model_fields_set


class InputSpec(_OptionalDefault):
    """A placeholder fed at run time; with ``default`` a PlaceholderWithDefault."""

    dtype: DTypeName
    shape: list[Dim] | None = None  # None: unknown rank
    default: Any = None
    doc: str | None = None

    @model_validator(mode="after")
    def _default_fits_dtype(self):
        if self.has_default:
            if self.dtype == "bool" and not np.asarray(self.default).dtype == np.bool_:
                raise _fail("bad_default", f"default of a bool input must be true or false, got {self.default!r}")
            try:  # as a Const's value: whole numbers in range for an integer dtype (no truncation)
                arr = const_value(self.default, dtypes.as_dtype(self.dtype))
            except (TypeError, ValueError) as e:
                raise _fail("bad_default", f"default: {e}") from None
            if self.shape is not None and len(arr.shape) != len(self.shape):
                raise _fail("bad_default", f"default has rank {arr.ndim} but shape is {self.shape}")
        return self


class VariableSpec(StrictModel):
    """A free-standing variable (layers create their own)."""

    shape: list[KnownDim]
    dtype: DTypeName = "float32"
    initializer: InitializerSpec
    trainable: bool = True
    device: Device | None = None
    doc: str | None = None
    # Held as N variables `name/part_k` split along axis 0 (layers/partitioned.py); the name reads the whole.
    partitions: int | None = Field(None, ge=1)
    partitioner: PartitionerConfig | None = None

    @model_validator(mode="after")
    def _partitioning(self):
        if self.partitions is not None and self.partitioner is not None:
            raise ValueError("give partitions or partitioner, not both")
        if (self.partitions is not None or self.partitioner is not None) and not self.shape:
            raise ValueError("a scalar variable cannot be partitioned")
        return self


# --- nodes -------------------------------------------------------------------------------------


class _NodeCommon(BaseModel):
    inputs: list[InputItem] = []
    device: Device | None = None
    colocate_with: NameList = []
    after: NameList = []
    doc: str | None = None
    transfer: Transfer | None = None


class OpNodeSpec(_NodeCommon):
    """``{op: MatMul, inputs: [...], transpose_b: true}``: extra keys are the op's attrs and
    keyword inputs, kept raw in :attr:`params` (lowering types them with the OpDef)."""

    model_config = ConfigDict(extra="allow", strict=True)
    op: str

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LayerNodeSpec(_NodeCommon):
    """``{layer: dense, inputs: [x], units: 128}``: extra keys validated by ``LAYERS[layer]``."""

    model_config = ConfigDict(extra="allow", strict=True)
    layer: str
    inputs: CallInputs = []  # a list, or a mapping by the layer's input names (LAYER_INPUTS)
    _config: BaseModel | None = PrivateAttr(default=None)

    @property
    def config(self) -> BaseModel:
        return self._config


class CallNodeSpec(StrictModel):
    """``{call: residual, inputs: [x] | {x: ...}, attrs: {units: 64}}``: inlines a function."""

    call: Ident
    inputs: CallInputs = []
    attrs: dict[str, Any] = {}
    share: Name | None = None  # another call of the same function whose variables this one uses
    device: Device | None = None
    colocate_with: NameList = []
    after: NameList = []
    doc: str | None = None
    transfer: Transfer | None = None


NodeSpec = OpNodeSpec | LayerNodeSpec | CallNodeSpec


def _node_kind(data: dict) -> str:
    kinds = [k for k in NODE_KINDS if k in data]
    if len(kinds) != 1:
        got = " and ".join(f"'{k}'" for k in kinds) if kinds else "none"
        raise _fail("node_kind", f"a node needs exactly one of 'op', 'layer', 'call', 'while', 'cond' (got {got})")
    return kinds[0]


def _validate_op_node(data: dict) -> OpNodeSpec:
    errors: list[dict] = []
    try:
        node = OpNodeSpec.model_validate(data)
    except ValidationError as e:
        node, errors = None, line_errors(e)
    op = data.get("op")
    if isinstance(op, str):
        all_ops()  # make sure every op family is registered
        try:
            opdef = get_op(op)
        except OpError as e:
            errors.append(custom_error("unknown_op", e.message, ("op",), op))
        else:
            known = list(opdef.attrs) + [a.name for a in opdef.inputs] + [a.alias for a in opdef.inputs if a.alias]
            candidates = known + ["op", *COMMON_NODE_FIELDS]
            for key in data:
                if key not in candidates:
                    msg = f"unknown field '{key}' for op {op}" + (did_you_mean(str(key), candidates)
                                                                  or _type_attr_hint(str(key), opdef))  # fmt: skip
                    errors.append(custom_error("unknown_field", msg, (key,), data[key]))
            _literal_input_hint(errors, data, opdef)
    raise_errors("OpNodeSpec", errors)
    return node


# The keyword TF's Python API takes for an op's output type (tf.cast(x, dtype), to=...) and the
# attr the op itself names it by (Cast's DstT, Bitcast's type, ArgMax's output_type...).
_TYPE_ATTRS = ("out_type", "output_type", "Tout", "DstT", "type", "dtype")


_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

# Other TF Python keywords whose op spells the attr differently (tf.squeeze(x, axis=...)).
_KEYWORD_ATTRS = {"axis": ("squeeze_dims",)}


def _type_attr_hint(key: str, opdef) -> str:
    if key in _KEYWORD_ATTRS:
        attr = next((a for a in _KEYWORD_ATTRS[key] if a in opdef.attrs), None)
        return f" (the op's attr for TF's keyword '{key}' is '{attr}')" if attr else ""
    if key != "to" and key not in _TYPE_ATTRS:
        return ""
    attr = next((a for a in _TYPE_ATTRS if a in opdef.attrs and a != key), None)
    return f" (the op's output type is its attr '{attr}')" if attr else ""


def _literal_input_hint(errors: list[dict], data: dict, opdef) -> None:
    """A literal in ``inputs:`` (``[mask, score, -1e9]``) is refused as a reference; say where a
    literal goes: under the input's name (``e: -1e9``)."""
    items = data.get("inputs")
    if not isinstance(items, list):
        return
    names = [a.alias or a.name for a in opdef.inputs]
    for i, err in enumerate(errors):
        loc = err["loc"]
        if len(loc) < 2 or loc[0] != "inputs" or not isinstance(loc[1], int) or loc[1] >= len(items):
            continue
        item = items[loc[1]]
        if isinstance(item, dict) or (isinstance(item, str) and not _NUMBER.fullmatch(item)):
            continue
        where = names[loc[1]] if loc[1] < len(names) else None
        example = f" (here `{where}: {item if isinstance(item, str) else show(item)}`)" if where else ""
        msg = (f"a literal is not a tensor reference; give it under the input's name{example}: "
               f"{opdef.name} takes {', '.join(names) or 'no inputs'}")
        errors[i] = custom_error("literal_input", msg, loc, item)


def _keras_only_hint(key: str) -> str:
    """Keras's per-layer regularizers (kernel_regularizer: l2(0.01)) have no field here: 'did you
    mean kernel_initializer' misled; say how to write the penalty instead."""
    if not key.endswith("_regularizer"):
        return ""
    return ("; layers take no regularizers: add the penalty to the loss (Keras's l2(0.01) on a kernel is "
            "{op: Mul, inputs: [{op: Sum, inputs: [{op: Square, inputs: [NODE/kernel]}]}], y: 0.01}) or give "
            "the optimizer weight_decay")


def _validate_layer_node(data: dict) -> LayerNodeSpec:
    errors: list[dict] = []
    try:
        node = LayerNodeSpec.model_validate(data)  # common fields; config keys stay as extras
    except ValidationError as e:
        node, errors = None, line_errors(e)
    layer = data.get("layer")
    config = None
    if isinstance(layer, str) and layer not in LAYERS:
        msg = f"unknown layer '{layer}'" + did_you_mean(layer, LAYERS) + "; known: " + ", ".join(LAYERS)
        errors.append(custom_error("unknown_layer", msg, ("layer",), layer))
    elif isinstance(layer, str):
        cls = LAYERS[layer]
        common = ["layer", *COMMON_NODE_FIELDS]
        fields = [f.alias or n for n, f in cls.model_fields.items()]
        extra = {k: v for k, v in data.items() if k not in common}
        for key in extra:
            if key not in fields:
                hint = _keras_only_hint(str(key)) or did_you_mean(str(key), fields + common)
                errors.append(custom_error("unknown_field", "unknown field" + hint, (key,), extra[key]))
        try:
            config = cls.model_validate({k: v for k, v in extra.items() if k in fields})
        except ValidationError as e:
            errors.extend(line_errors(e))
    raise_errors("LayerNodeSpec", errors)
    node._config = config
    return node


def _parse_node_value(data: Any) -> NodeSpec:
    # Control-flow nodes (schema/control_flow_models.py) nest nodes, so they import this module.
    from specflow.schema.control_flow_models import CondNodeSpec, WhileNodeSpec

    if isinstance(data, (OpNodeSpec, LayerNodeSpec, CallNodeSpec, WhileNodeSpec, CondNodeSpec)):
        return data
    if not isinstance(data, dict):
        raise _fail("node_type", f"a node is a mapping with 'op', 'layer', 'call', 'while' or 'cond', got {show(data)}")
    kind = _node_kind(data)
    if kind == "op":
        return _validate_op_node(data)
    if kind == "layer":
        return _validate_layer_node(data)
    if kind == "while":
        return WhileNodeSpec.model_validate(data)
    if kind == "cond":
        return CondNodeSpec.model_validate(data)
    return CallNodeSpec.model_validate(data)


def _parse_input_item(data: Any) -> str | OpNodeSpec:
    if isinstance(data, (str, OpNodeSpec)):
        return data if isinstance(data, OpNodeSpec) else _check_ref(data)
    if isinstance(data, dict) and "op" in data:
        return _parse_node_value(data)
    raise _fail("bad_input", f"an input is a tensor reference ('name' or 'name:k') or an inline {{op: ...}} node, got {show(data)}")


InputItem = Annotated[Any, PlainValidator(_parse_input_item, json_schema_input_type=str | OpNodeSpec)]
Node = Annotated[NodeSpec, PlainValidator(_parse_node_value, json_schema_input_type=NodeSpec)]


def _parse_call_inputs(data: Any):
    if isinstance(data, dict):
        return TypeAdapter(dict[Ident, InputItem]).validate_python(data, strict=True)
    if isinstance(data, list):
        return TypeAdapter(list[InputItem]).validate_python(data, strict=True)
    raise _fail("bad_inputs", f"expected a list or a mapping of inputs, got {show(data)}")


CallInputs = Annotated[Any, PlainValidator(_parse_call_inputs, json_schema_input_type=list[InputItem] | dict[str, InputItem])]

OpNodeSpec.model_rebuild()
LayerNodeSpec.model_rebuild()
CallNodeSpec.model_rebuild()


# --- functions -----------------------------------------------------------------------------------

_ATTR_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "string": (str,), "dtype": (str,)}


class FunctionAttrSpec(_OptionalDefault):
    type: Literal["int", "float", "bool", "string", "dtype"]
    default: Any = None
    doc: str | None = None

    @model_validator(mode="after")
    def _default_has_type(self):
        if self.has_default:
            check_attr_value(self.type, self.default)
        return self


def check_attr_value(kind: str, value: Any) -> Any:
    """``value`` checked against a function attr type (raises PydanticCustomError)."""
    ok = isinstance(value, _ATTR_TYPES[kind]) and (kind == "bool" or not isinstance(value, bool))
    if not ok:
        raise _fail("bad_attr", f"expected a value of type {kind}, got {show(value)}")
    if kind == "dtype":
        _check_dtype(value)
    return value


def _check_type_pattern(v: str) -> str:
    if TYPE_VAR_RE.fullmatch(v) and v not in dtypes.dtype_names():
        return v  # a type variable like T, bound at each call
    return _check_dtype(v)


class FunctionInputSpec(StrictModel):
    dtype: Annotated[str, AfterValidator(_check_type_pattern)]
    shape: list[PatternDim] | None = None
    doc: str | None = None


def substitute_attrs(value: Any, attrs: dict[str, Any]) -> Any:
    """``value`` with every ``$name`` string whose name is in ``attrs`` replaced by its value."""
    if isinstance(value, str):
        m = ATTR_REF_RE.fullmatch(value)
        return attrs[m.group(1)] if m and m.group(1) in attrs else value
    if isinstance(value, dict):
        return {k: substitute_attrs(v, attrs) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_attrs(v, attrs) for v in value]
    return value


def _attr_refs(value: Any, path: tuple = ()):
    """(path, name) of every ``$name`` string inside ``value``."""
    if isinstance(value, str):
        m = ATTR_REF_RE.fullmatch(value)
        if m:
            yield path, m.group(1)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _attr_refs(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _attr_refs(v, path + (i,))


class FunctionSpec(StrictModel):
    """A reusable typed subgraph. ``nodes`` are kept raw: see :func:`parse_node`."""

    attrs: dict[Ident, FunctionAttrSpec] = {}
    inputs: dict[Ident, FunctionInputSpec] = {}
    variables: dict[Ident, dict[str, Any]] = {}  # per call site (VariableSpec after $attr substitution)
    nodes: dict[Name, dict[str, Any]] = {}
    outputs: dict[Ident, Reference]
    doc: str | None = None

    @classmethod
    def cross_checks(cls, data: dict) -> list[dict]:
        attrs = list(_mapping(data, "attrs"))
        errors = []
        for section in ("nodes", "variables"):
            for name, raw in _mapping(data, section).items():
                for path, ref in _attr_refs(raw):
                    if ref not in attrs:
                        msg = f"unknown function attr '${ref}'" + did_you_mean("$" + ref, ["$" + a for a in attrs])
                        errors.append(custom_error("unknown_attr", msg, (section, name) + path, "$" + ref))
        return errors

    @model_validator(mode="after")
    def _check_body(self):
        """Validate each body node with the attr defaults substituted; a value that is still a
        `$attr` (no default) is checked per call instead."""
        defaults = {k: a.default for k, a in self.attrs.items() if a.has_default}
        errors: list[dict] = []
        for name, raw in self.nodes.items():
            unresolved = [path for path, ref in _attr_refs(raw) if ref not in defaults]
            try:
                _parse_node_value(substitute_attrs(raw, defaults))
            except ValidationError as e:
                for err in line_errors(e):
                    if not any(tuple(err["loc"][: len(p)]) == p for p in unresolved):
                        errors.append({**err, "loc": ("nodes", name) + tuple(err["loc"])})
            except PydanticCustomError as e:
                errors.append({"type": e, "loc": ("nodes", name), "input": raw})
        for name, raw in self.variables.items():
            unresolved = [path for path, ref in _attr_refs(raw) if ref not in defaults]
            try:
                VariableSpec.model_validate(substitute_attrs(raw, defaults))
            except ValidationError as e:
                for err in line_errors(e):
                    if not any(tuple(err["loc"][: len(p)]) == p for p in unresolved):
                        errors.append({**err, "loc": ("variables", name) + tuple(err["loc"])})
            if name in self.nodes or name in self.inputs:
                errors.append(custom_error("duplicate_name", f"name '{name}' is used twice in the function",
                                           ("variables", name, "[key]"), name))
        raise_errors("FunctionSpec", errors)
        return self


# --- signatures and the model ---------------------------------------------------------------------


class SignatureSpec(StrictModel):
    """A named entry point: input aliases -> placeholders, output aliases -> tensors."""

    inputs: dict[str, Reference] = {}
    outputs: Annotated[dict[str, Reference], Field(min_length=1)]  # export and predict need one
    doc: str | None = None


class ModelSpec(StrictModel):
    specflow: int
    name: Ident
    description: str | None = None
    seed: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] | None = None  # an int64, as TF's graph seed
    inputs: dict[Name, InputSpec] = {}
    variables: dict[Name, VariableSpec] = {}
    nodes: dict[Name, Node] = {}
    functions: dict[Ident, FunctionSpec] = {}
    signatures: dict[str, SignatureSpec] = {}
    train: TrainConfig | None = None  # resolved by train_config.py (imported at the end)
    cluster: dict[str, Any] | None = None  # validated by the distributed runtime
    transfer: Transfer = "float32"  # bfloat16: every session of the spec sends float32 as 16 bits

    @field_validator("specflow")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SPEC_VERSION:
            raise _fail("bad_version", f"unsupported spec version {v} (this specflow reads version {SPEC_VERSION})")
        return v

    @classmethod
    def cross_checks(cls, data: dict) -> list[dict]:
        errors: list[dict] = []
        seen: dict[str, str] = {}
        for section in ("inputs", "variables", "nodes"):
            for name in _mapping(data, section):
                if name in seen:
                    msg = f"name '{name}' is already used in {seen[name]} (inputs, variables and nodes share one namespace)"
                    errors.append(custom_error("duplicate_name", msg, (section, name, "[key]"), name))
                else:
                    seen[name] = section
        functions = _mapping(data, "functions")
        bodies = [(("nodes", n), node) for n, node in _mapping(data, "nodes").items()]
        for fname, fn in functions.items():
            bodies += [(("functions", fname, "nodes", n), node) for n, node in _mapping(fn, "nodes").items()]
        for path, node in bodies:
            call = node.get("call") if isinstance(node, dict) else None
            if isinstance(call, str) and call not in functions:
                msg = f"unknown function '{call}'" + did_you_mean(call, list(functions))
                errors.append(custom_error("unknown_function", msg, path + ("call",), call))
        return errors


def _mapping(data: Any, key: str) -> dict:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


# --- entry points -------------------------------------------------------------------------------


def parse_model(tree: Any, source: SourceMap) -> ModelSpec:
    """Validate a loaded YAML tree; raises SpecError / MultipleErrors with positions."""
    if not isinstance(tree, dict):
        kind = "empty" if tree is None else f"a {type(tree).__name__}"
        raise SpecError(f"a spec must be a mapping at the top level (specflow: 1, name: ..., nodes: ...), got {kind}", location=source.location(()))
    try:
        return ModelSpec.model_validate(tree)
    except ValidationError as e:
        raise convert(e, tree, source) from None


_NODE_ADAPTER = TypeAdapter(Node)


def parse_node(raw: dict, path: tuple, source: SourceMap) -> NodeSpec:
    """Validate one node (a function body node after ``$attr`` substitution); errors are
    reported at ``path`` (e.g. ``("functions", "residual", "nodes", "d")``) in ``source``."""
    try:
        return _NODE_ADAPTER.validate_python(raw)
    except ValidationError as e:
        raise convert(e, raw, source, tuple(path)) from None


# The train section builds on the models above; importing it completes ModelSpec.
from specflow.schema import train_config  # noqa: E402, F401
