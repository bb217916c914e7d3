"""TF2's functional control flow (``If``/``StatelessIf``, ``Case``/``StatelessCase``,
``While``/``StatelessWhile``) lowered to
the five primitives while a TF graph is inlined, as TensorFlow itself lowers them for graph
execution (common_runtime/lower_if_op.cc, lower_while_op.cc). The runtime then runs them in
frames with dead-tensor propagation, and ``find_while_loops`` and the gradient code see ordinary
loops and conditionals: nothing about them is special after loading.

``If`` node ``C`` (``cond, inputs...``; functions ``then_branch``/``else_branch``)::

    C/switch_pred = Switch(cond, cond); C/switch_t, C/switch_f: Identity of :1 and :0 (the pivots)
    C/input_i     = Switch(input_i, cond)
    C/then        = then_branch(C/input_i:1 ...), inlined, started by ^C/switch_t
    C/else        = else_branch(C/input_i:0 ...), inlined, started by ^C/switch_f
    C/output_k    = Merge(C/else:k, C/then:k)
    C             = IdentityN(C/output_k ...) after ^C/branch_executed (a Merge of the pivots
                    after each branch), so ``^C`` still means "the branch taken has finished"

``Case`` node ``C`` (``branch_index, inputs...``; functions ``branches``) is an ``If`` per branch
sharing the outputs' Merges: branch ``i`` < N - 1 runs where ``branch_index == i``, the last one
where ``branch_index`` is N - 1 or out of range (TF's _SwitchN runs the last branch then)::

    C/pred_i      = Equal(branch_index, i); C/pred_last = LogicalOr(index < 0, index >= N - 1)
    C/switch_i    = Switch(pred_i, pred_i); C/pivot_i: Identity of :1
    C/input_i_j   = Switch(input_j, pred_i); C/branch_i = branches[i](C/input_i_j:1 ...)
    C/output_k    = Merge(C/branch_0:k, ..., C/branch_{N-1}:k): the one live input wins

``While`` node ``W`` (loop vars ``inputs...``; functions ``cond``/``body``), frame ``W``::

    W/enter_i -> W/merge_i(enter_i, next_iteration_i) -> W/cond (inlined) -> W/loop_cond
    W/switch_i = Switch(merge_i, loop_cond); W/exit_i = Exit(switch_i:0)
    W/identity_i = Identity(switch_i:1) -> W/body (inlined) -> W/next_iteration_i
    W          = IdentityN(W/exit_i ...)

A function's nodes that read nothing from inside it (a Const) wait on the call's control input
(the pivot, the first Merge or Identity), so they run in the branch or iteration that uses them.
TF2 functions capture nothing implicitly (captured tensors are explicit inputs and loop vars), so
no constant Enters are needed.
"""

from __future__ import annotations

from tensorboard.compat.proto import node_def_pb2, tensor_pb2, types_pb2

from specflow.errors import GraphError

IF_OPS = frozenset({"If", "StatelessIf"})
CASE_OPS = frozenset({"Case", "StatelessCase"})
WHILE_OPS = frozenset({"While", "StatelessWhile"})
LOWERED_OPS = IF_OPS | CASE_OPS | WHILE_OPS


def _node(name: str, op: str, inputs, device: str, n: int | None = None, **types) -> node_def_pb2.NodeDef:
    node = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs), device=device)
    if n is not None:
        node.attr["N"].i = n
    for key, value in types.items():
        if isinstance(value, list):
            node.attr[key].list.type.extend(value)
        else:
            node.attr[key].type = value
    return node


def _branch_call(node: node_def_pb2.NodeDef, attr: str, lib) -> node_def_pb2.NodeDef:
    """A direct call of the function ``node``'s ``attr`` names (its bound attrs kept)."""
    func = node.attr[attr].func
    if not func.name:
        raise GraphError(f"{node.op} '{node.name}' has no '{attr}' function")
    if func.name not in lib:
        raise GraphError(f"{node.op} '{node.name}' calls function '{func.name}' ({attr}), which the graph's "
                         "library does not define")
    call = node_def_pb2.NodeDef(name=node.name, op=func.name)
    for key, value in func.attr.items():
        call.attr[key].CopyFrom(value)
    return call


def lower(inliner, node: node_def_pb2.NodeDef, path: str, data: list[str], controls: list[str], device: str,
          caller: str | None, stack: tuple[str, ...]) -> None:
    """Emit ``node`` (an If or While whose inputs are ``data``/``controls`` in flat-graph names) as
    primitives named under ``path``, inlining its functions through ``inliner`` (tf_functions'
    ``_Inliner``: ``emit(proto, function, call)`` and ``call(...)``)."""
    if node.op in IF_OPS:
        _lower_if(inliner, node, path, data, controls, device, caller, stack)
    elif node.op in CASE_OPS:
        _lower_case(inliner, node, path, data, controls, device, caller, stack)
    else:
        _lower_while(inliner, node, path, data, controls, device, caller, stack)


def _lower_if(inliner, node, path, data, controls, device, caller, stack) -> None:
    if not data:
        raise GraphError(f"{node.op} '{path}' has no condition input")
    if "Tcond" in node.attr and node.attr["Tcond"].type != types_pb2.DT_BOOL:
        name = types_pb2.DataType.Name(node.attr["Tcond"].type)
        raise GraphError(f"{node.op} '{path}': a {name} condition is not supported (only bool)")
    cond, args = data[0], data[1:]
    tin = list(node.attr["Tin"].list.type)
    tout = list(node.attr["Tout"].list.type)
    if len(tin) != len(args):
        raise GraphError(f"{node.op} '{path}' has {len(args)} inputs but Tin lists {len(tin)} types")

    def emit(proto):
        inliner.emit(proto, caller, None)

    gate = [f"^{c}" for c in controls]
    emit(_node(f"{path}/switch_pred", "Switch", [cond, cond, *gate], device, T=types_pb2.DT_BOOL))
    emit(_node(f"{path}/switch_t", "Identity", [f"{path}/switch_pred:1"], device, T=types_pb2.DT_BOOL))
    emit(_node(f"{path}/switch_f", "Identity", [f"{path}/switch_pred"], device, T=types_pb2.DT_BOOL))
    for i, (arg, t) in enumerate(zip(args, tin)):
        emit(_node(f"{path}/input_{i}", "Switch", [arg, cond, *gate], device, T=t))
    done = []
    for label, attr, port, pivot in (("else", "else_branch", 0, "switch_f"), ("then", "then_branch", 1, "switch_t")):
        call = _branch_call(node, attr, inliner.lib)
        inliner.call(call, f"{path}/{label}", [f"{path}/input_{i}:{port}" for i in range(len(args))],
                     [f"{path}/{pivot}"], device, caller, stack)
        done.append(f"{path}/{label}_done")
        emit(_node(done[-1], "Identity", [f"{path}/{pivot}", f"^{path}/{label}"], device, T=types_pb2.DT_BOOL))
    emit(_node(f"{path}/branch_executed", "Merge", done, device, 2, T=types_pb2.DT_BOOL))
    outputs = []
    for k, t in enumerate(tout):
        outputs.append(f"{path}/output_{k}")
        emit(_node(outputs[-1], "Merge", [f"{path}/else:{k}", f"{path}/then:{k}"], device, 2, T=t))
    executed = f"^{path}/branch_executed"
    if tout:
        emit(_node(path, "IdentityN", [*outputs, executed], device, T=tout))
    else:
        emit(_node(path, "NoOp", [executed], device))


def _int_const(name: str, value: int, after: str, device: str) -> node_def_pb2.NodeDef:
    """An int32 scalar Const that runs after ``after`` (so it joins that tensor's frame)."""
    node = _node(name, "Const", [f"^{after}"], device, dtype=types_pb2.DT_INT32)
    node.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, tensor_shape={}, int_val=[value]))
    return node


def _lower_case(inliner, node, path, data, controls, device, caller, stack) -> None:
    if not data:
        raise GraphError(f"{node.op} '{path}' has no branch_index input")
    index, args = data[0], data[1:]
    tin = list(node.attr["Tin"].list.type)
    tout = list(node.attr["Tout"].list.type)
    branches = list(node.attr["branches"].list.func)
    if len(tin) != len(args):
        raise GraphError(f"{node.op} '{path}' has {len(args)} inputs but Tin lists {len(tin)} types")
    if not branches:
        raise GraphError(f"{node.op} '{path}' has no branches")
    for fn in branches:
        if fn.name not in inliner.lib:
            raise GraphError(f"{node.op} '{path}' calls function '{fn.name}' (branches), which the graph's library "
                             "does not define")

    def emit(proto):
        inliner.emit(proto, caller, None)

    gate = [f"^{c}" for c in controls]
    emit(_node(f"{path}/index", "Identity", [index, *gate], device, T=types_pb2.DT_INT32))
    last = len(branches) - 1
    preds = []
    for i in range(last):
        emit(_int_const(f"{path}/const_{i}", i, f"{path}/index", device))
        preds.append(f"{path}/pred_{i}")
        emit(_node(preds[-1], "Equal", [f"{path}/index", f"{path}/const_{i}"], device, T=types_pb2.DT_INT32))
    emit(_int_const(f"{path}/const_zero", 0, f"{path}/index", device))
    emit(_int_const(f"{path}/const_last", last, f"{path}/index", device))
    emit(_node(f"{path}/below", "Less", [f"{path}/index", f"{path}/const_zero"], device, T=types_pb2.DT_INT32))
    emit(_node(f"{path}/above", "GreaterEqual", [f"{path}/index", f"{path}/const_last"], device, T=types_pb2.DT_INT32))
    preds.append(f"{path}/pred_{last}")
    emit(_node(preds[-1], "LogicalOr", [f"{path}/below", f"{path}/above"], device))
    done = []
    for i, (fn, pred) in enumerate(zip(branches, preds)):
        emit(_node(f"{path}/switch_{i}", "Switch", [pred, pred], device, T=types_pb2.DT_BOOL))
        emit(_node(f"{path}/pivot_{i}", "Identity", [f"{path}/switch_{i}:1"], device, T=types_pb2.DT_BOOL))
        for j, (arg, t) in enumerate(zip(args, tin)):
            emit(_node(f"{path}/input_{i}_{j}", "Switch", [arg, pred, *gate], device, T=t))
        call = node_def_pb2.NodeDef(name=node.name, op=fn.name)
        for key, value in fn.attr.items():
            call.attr[key].CopyFrom(value)
        inliner.call(call, f"{path}/branch_{i}", [f"{path}/input_{i}_{j}:1" for j in range(len(args))],
                     [f"{path}/pivot_{i}"], device, caller, stack)
        done.append(f"{path}/branch_{i}_done")
        emit(_node(done[-1], "Identity", [f"{path}/pivot_{i}", f"^{path}/branch_{i}"], device, T=types_pb2.DT_BOOL))
    emit(_node(f"{path}/branch_executed", "Merge", done, device, len(done), T=types_pb2.DT_BOOL))
    outputs = []
    for k, t in enumerate(tout):
        outputs.append(f"{path}/output_{k}")
        emit(_node(outputs[-1], "Merge", [f"{path}/branch_{i}:{k}" for i in range(len(branches))], device,
                   len(branches), T=t))
    executed = f"^{path}/branch_executed"
    if tout:
        emit(_node(path, "IdentityN", [*outputs, executed], device, T=tout))
    else:
        emit(_node(path, "NoOp", [executed], device))


def _lower_while(inliner, node, path, data, controls, device, caller, stack) -> None:
    types = list(node.attr["T"].list.type)
    if len(types) != len(data):
        raise GraphError(f"{node.op} '{path}' has {len(data)} inputs but T lists {len(types)} types")
    if not data:
        raise GraphError(f"{node.op} '{path}' has no loop variables")
    parallel = node.attr["parallel_iterations"].i if "parallel_iterations" in node.attr else 10
    cond_fn = inliner.lib[_branch_call(node, "cond", inliner.lib).op]
    outs = cond_fn.signature.output_arg
    if len(outs) != 1 or outs[0].type != types_pb2.DT_BOOL:
        raise GraphError(f"{node.op} '{path}': its condition '{cond_fn.signature.name}' must return one bool "
                         "(other types are not supported)")

    def emit(proto):
        inliner.emit(proto, caller, None)

    n = len(data)
    shapes = list(node.attr["output_shapes"].list.shape) if "output_shapes" in node.attr else []
    for i, (v, t) in enumerate(zip(data, types)):
        if len(shapes) == n and (shapes[i].unknown_rank or any(d.size < 0 for d in shapes[i].dim)):
            # a var whose shape may change (shape_invariants): its static shape relaxed to TF's before
            # the frame, so the loop's Merge is not inferred as the initial value's shape
            relax = _node(f"{path}/relax_{i}", "PlaceholderWithDefault", [v], device)
            relax.attr["dtype"].type = t
            relax.attr["shape"].shape.CopyFrom(shapes[i])
            emit(relax)
            v = relax.name
        enter = _node(f"{path}/enter_{i}", "Enter", [v, *(f"^{c}" for c in controls)], device, T=t)
        enter.attr["frame_name"].s = path.encode()
        enter.attr["is_constant"].b = False
        enter.attr["parallel_iterations"].i = max(int(parallel), 1)
        emit(enter)
    for i, t in enumerate(types):
        emit(_node(f"{path}/merge_{i}", "Merge", [f"{path}/enter_{i}", f"{path}/next_iteration_{i}"], device, 2, T=t))
    inliner.call(_branch_call(node, "cond", inliner.lib), f"{path}/cond", [f"{path}/merge_{i}" for i in range(n)],
                 [f"{path}/merge_0"], device, caller, stack)
    emit(_node(f"{path}/loop_cond", "LoopCond", [f"{path}/cond"], device))
    for i, t in enumerate(types):
        emit(_node(f"{path}/switch_{i}", "Switch", [f"{path}/merge_{i}", f"{path}/loop_cond"], device, T=t))
        emit(_node(f"{path}/exit_{i}", "Exit", [f"{path}/switch_{i}"], device, T=t))
        emit(_node(f"{path}/identity_{i}", "Identity", [f"{path}/switch_{i}:1"], device, T=t))
    inliner.call(_branch_call(node, "body", inliner.lib), f"{path}/body",
                 [f"{path}/identity_{i}" for i in range(n)], [f"{path}/identity_0"], device, caller, stack)
    for i, t in enumerate(types):
        emit(_node(f"{path}/next_iteration_{i}", "NextIteration", [f"{path}/body:{i}"], device, T=t))
    emit(_node(path, "IdentityN", [f"{path}/exit_{i}" for i in range(n)], device, T=types))
