"""A JSON Schema (draft 2020-12) of the spec language, for editors (completion, hover, lint).

The models give the skeleton; op and layer nodes are refined here so an editor can complete
``op:`` from the registered op names and then that op's attrs and inputs (``if op == X then
...``), and ``layer:`` from the layer names and then that layer's config keys.
"""

from __future__ import annotations

from typing import Any

from specflow.graph import dtypes
from specflow.ops.registry import AttrDef, OpDef, all_ops
from specflow.schema.control_flow_models import CondNodeSpec, WhileNodeSpec
from specflow.schema.layers import LAYERS
from specflow.schema.models import COMMON_NODE_FIELDS, ModelSpec

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_NODE_KINDS = ("OpNodeSpec", "LayerNodeSpec", "CallNodeSpec", "WhileNodeSpec", "CondNodeSpec")
_NODE_REFS = [{"$ref": f"#/$defs/{n}"} for n in _NODE_KINDS]


def spec_json_schema() -> dict[str, Any]:
    schema = ModelSpec.model_json_schema(ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    for cls in (WhileNodeSpec, CondNodeSpec):  # control-flow nodes nest nodes: ModelSpec names them loosely
        sub = cls.model_json_schema(ref_template="#/$defs/{model}")
        for k, v in sub.pop("$defs", {}).items():
            defs.setdefault(k, v)
        defs[cls.__name__] = sub
    common = {k: v for k, v in defs["OpNodeSpec"]["properties"].items() if k in COMMON_NODE_FIELDS}
    defs["OpNodeSpec"] = _op_node_schema(common)
    defs["LayerNodeSpec"] = _layer_node_schema(common, defs)
    # Body values may be `$attr` references of any type, so only the node kind is checked there.
    defs["FunctionSpec"]["properties"]["nodes"]["additionalProperties"] = {
        "type": "object",
        "description": "a node (op, layer or call); any value may be a `$attr` reference",
        "properties": {
            "op": defs["OpNodeSpec"]["properties"]["op"],
            "layer": defs["LayerNodeSpec"]["properties"]["layer"],
            "call": {"type": "string"},
        },
    }
    schema["properties"]["nodes"]["additionalProperties"] = {"anyOf": _NODE_REFS}
    return {"$schema": DRAFT, "$id": "https://specflow.dev/schema/spec-v1.json", **schema}


def _op_node_schema(common: dict) -> dict:
    ops = all_ops()
    return {
        "title": "OpNodeSpec",
        "description": "An op node: `op`, `inputs`, and the op's attrs and keyword inputs as keys.",
        "type": "object",
        "properties": {"op": {"enum": list(ops), "description": "a registered op name"}, **common},
        "required": ["op"],
        "allOf": [_if_then("op", name, _op_keys(opdef), opdef.doc) for name, opdef in ops.items()],
        "unevaluatedProperties": False,
    }


def _op_keys(opdef: OpDef) -> dict:
    keys: dict[str, Any] = {}
    for arg in opdef.inputs:
        desc = f"input '{arg.name}': a tensor reference ('name' or 'name:k') or a literal value"
        if arg.has_default:
            desc += " (optional: has a default)"
        keys[arg.alias or arg.name] = {"description": desc}
        if arg.alias:
            keys[arg.name] = {"description": f"same as '{arg.alias}'"}
    for name, adef in opdef.attrs.items():
        keys[name] = {**_attr_schema(adef), "description": adef.describe()}
    return keys


def _attr_schema(adef: AttrDef) -> dict:
    t = adef.type
    if t == "type":
        allowed = adef.allowed or dtypes.ALL
        return {"enum": sorted(d.name for d in allowed)}
    if t == "string" and adef.allowed is not None:
        return {"enum": sorted(adef.allowed)}
    if t.startswith("list("):
        return {"type": "array", "items": _attr_schema(AttrDef(adef.name, t[5:-1]))}
    simple = {
        "int": {"type": "integer"},
        "float": {"type": "number"},
        "bool": {"type": "boolean"},
        "string": {"type": "string"},
        "func": {"type": "string"},
        "shape": {"type": ["array", "null"], "items": {"type": ["integer", "null"]}},
    }
    out = dict(simple.get(t, {}))
    if adef.minimum is not None and t == "int":
        out["minimum"] = adef.minimum
    return out


def _layer_node_schema(common: dict, defs: dict) -> dict:
    branches = []
    for name, cls in LAYERS.items():
        config = cls.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(config.pop("$defs", {}))
        branch = _if_then("layer", name, config.get("properties", {}), cls.__doc__ or "")
        if config.get("required"):
            branch["then"]["required"] = config["required"]
        branches.append(branch)
    return {
        "title": "LayerNodeSpec",
        "description": "A layer node: `layer`, `inputs`, and the layer's config keys.",
        "type": "object",
        # A layer's inputs: a list, or a mapping by the layer's input names (as a call's).
        "properties": {"layer": {"enum": list(LAYERS), "description": "a layer name"}, **common,
                       "inputs": defs["CallNodeSpec"]["properties"]["inputs"]},
        "required": ["layer"],
        "allOf": branches,
        "unevaluatedProperties": False,
    }


def _if_then(key: str, value: str, properties: dict, doc: str) -> dict:
    then: dict[str, Any] = {"properties": properties}
    if doc:
        then["description"] = doc.strip().splitlines()[0]
    return {"if": {"properties": {key: {"const": value}}, "required": [key]}, "then": then}
