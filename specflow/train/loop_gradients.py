"""Gradients through while loops (TF v1's GradLoopState, control_flow_grad.py), as one unit.

``gradients()`` treats a whole loop as one node: once every consumer of its Exits has
contributed, :func:`backprop_loop` builds a *backward loop* next to it:

- The forward loop gets an iteration counter (an extra loop variable); its Exit is ``n``, the
  number of iterations that ran. The backward loop counts down from ``n`` to 0, so it runs
  exactly as many iterations.
- Each differentiable loop variable ``v`` becomes a backward variable that starts as the
  gradient of ``v``'s Exit; one backward iteration feeds it as the gradient of what the body
  computed for the next iteration, runs every body op's gradient (each op's own ``@gradient``)
  back to ``v``'s value in the iteration, and carries that on. Its Exit is the gradient of
  ``v``'s initial value.
- A loop invariant (constant Enter) gets an accumulator: the sum over iterations of what each
  iteration's gradient gives it.
- A forward value that a body op's gradient reads is pushed onto a stack (``StackPushV2``) in
  every forward iteration that computes it and popped (``StackPopV2``) in the matching backward
  iteration, so backward iteration ``i`` sees forward iteration ``n - 1 - i``'s values. A value
  behind a conditional inside the body exists only in some iterations: its pop reads the stack
  through a Switch on the (popped) predicate, so it happens exactly in those iterations.
- Pushes of iteration ``i`` finish before iteration ``i + 1`` starts (the counter's increment
  waits for them), and likewise pops, so parallel iterations never reorder a stack.

The gradient functions are the ordinary per-op ones: they build through :class:`_FrameBuilder`,
which maps every forward tensor they name to its backward-frame counterpart (a pop, an Enter of an
outer value, or a constant) and keeps constants in the backward frame.

A loop nested in another loop's body is one unit of the outer body's reverse walk (as TF's
GradLoopState with an ``outer_grad_state``): its backward loop is built inside the outer backward
loop, so it runs once per outer backward iteration. Everything it needs from the outer forward
frame comes through the outer loop's own stacks, per outer iteration:

- the inner loop's iteration count (its counter's Exit, a value of the outer frame) is pushed by
  the outer forward loop and popped by the outer backward loop, where it starts the inner
  backward counter;
- each inner stack is created in the outer frame, once per outer iteration (its ``StackV2`` runs
  with the inner loop's entry), and its handle is itself pushed on an outer stack, so outer
  backward iteration ``j`` pops exactly the inner values of outer forward iteration ``n - 1 - j``;
- the inner backward loop's Exits are values of the outer backward frame, which the outer body's
  gradients read like any other.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.graph_def import NodeDef, canonical_tensor, parse_input
from specflow.train.loop_structure import Loop, LoopInfo, conditions


def backprop_loop(b, loop: Loop, info: LoopInfo, grads: dict[str, list[str]], between: set[str], walk) -> dict[str, list[str]]:
    """Build ``loop``'s backward loop. ``grads`` holds the gradients reaching its Exits;
    ``walk(fb, nodes, grads)`` is gradients()' reverse walk over body nodes. Returns the gradient
    contributions for the tensors entering the loop (Enter inputs). ``b`` is the builder of the
    frame around the loop: the graph's, or the outer backward loop's :class:`_FrameBuilder` for a
    nested loop."""
    gvars = [v for v in loop.vars if v.exit is not None and _differentiable(b.spec(v.exit.name).dtype)
             and (v.merge.name in between or f"{v.exit.name}:0" in grads)]  # fmt: skip
    if not any(f"{v.exit.name}:0" in grads for v in gvars):
        return {}
    with b.no_control_dependencies():
        state = _GradLoop(b, loop, info)
        fb = _FrameBuilder(state.b, state)
        body_seed: dict[str, list[str]] = {}
        bvars = []
        for v in gvars:
            exit_t = f"{v.exit.name}:0"
            with state.scope():
                g0 = _sum(b, grads[exit_t]) if exit_t in grads else b.add_op("ZerosLike", [exit_t]).name
                merge, body = state.loop_var(g0, v.enter.name.rsplit("/", 1)[-1])
            bvars.append((v, merge, body))
            body_seed.setdefault(v.next_value, []).append(body)
        structural = loop.structural
        body = [n for n in state.b.graph_def.nodes
                if n.name in between and n.name not in structural and info.within(n.name, loop)]  # fmt: skip
        body_grads = walk(fb, loop, body, body_seed)
        result: dict[str, list[str]] = {}
        with state.scope():
            for v, merge, bval in bvars:
                g = _sum(fb, body_grads[v.body_value]) if v.body_value in body_grads else fb.add_op("ZerosLike", [bval]).name
                result.setdefault(canonical_tensor(v.enter.data_inputs[0]), []).append(state.close_var(merge, g))
            for inv in loop.invariants:
                t = f"{inv.name}:0"
                if t in body_grads:
                    total = state.accumulate(inv, _sum(fb, body_grads[t]))
                    result.setdefault(canonical_tensor(inv.data_inputs[0]), []).append(total)
            # A variable a TF2 loop carries as a loop var it passes on unchanged is an invariant
            # too: what its reads give summed over the iterations (TF2 lowers While this way).
            for v in loop.vars:
                if v.body_value in body_grads and b.spec(v.enter.name).dtype == dtypes.resource \
                        and _passes_through(state.b.graph_def.node_map(), v):
                    total = state.accumulate(v.enter, _sum(fb, body_grads[v.body_value]))
                    result.setdefault(canonical_tensor(v.enter.data_inputs[0]), []).append(total)
    return result


def _passes_through(nodes, v) -> bool:
    """Whether the body hands ``v``'s value to the next iteration unchanged (through Identity or
    IdentityN only)."""
    t = parse_input(v.next_value)
    while True:
        if canonical_tensor(f"{t.node}:{t.index}") == canonical_tensor(v.body_value):
            return True
        node = nodes.get(t.node)
        if node is None or node.op not in ("Identity", "IdentityN"):
            return False
        t = parse_input(node.data_inputs[t.index if node.op == "IdentityN" else 0])


def _differentiable(dtype) -> bool:
    """Loop vars with a gradient: floats, and TensorLists (TF2 loops carry their values in them)."""
    return dtype.is_floating or dtype == dtypes.variant


def _sum(b, contributions: list[str]) -> str:
    return contributions[0] if len(contributions) == 1 else b.add_op("AddN", list(contributions)).name


class _GradLoop:
    """The forward loop's counter and stacks, and the backward loop's skeleton."""

    def __init__(self, ob, loop: Loop, info: LoopInfo):
        # ``ob`` builds in the frame around the loop; ``parent`` is the outer loop's state when
        # this loop is nested in another's body (``ob`` is then its backward-frame builder).
        self.parent: _GradLoop | None = ob._state if isinstance(ob, _FrameBuilder) else None
        self.ob, self.b = ob, (ob._b if self.parent is not None else ob)
        self.loop, self.info = loop, info
        self.nodes = info.nodes
        self.conds = conditions(loop, self.nodes)
        # A nested loop's forward helpers (counter start, stacks) run with its first variable's
        # entry: once per outer iteration, in the outer frame (and not at all on an untaken branch).
        self.entry = canonical_tensor(loop.vars[0].enter.data_inputs[0]) if self.parent is not None else None
        self.pi = loop.parallel_iterations
        self.frame = _free_frame_name(self.b, f"{loop.frame}_grad")
        self.backward: set[str] = set()  # nodes made in the backward frame
        self.entered: dict[str, str] = {}  # outer tensor -> its constant Enter into the backward frame
        self.popped: dict[str, str] = {}  # forward tensor -> its value in the backward frame
        self.exits: dict[str, str] = {}  # backward loop variable's Merge -> its Exit
        with self.scope():
            self._forward_counter()
            self._backward_counter()

    @contextmanager
    def scope(self):
        """Where the skeleton, stacks and accumulators go: ``gradients/<frame>_grad``."""
        with self.b.root_scope(), self.b.name_scope("gradients"), self.b.name_scope(f"{self.loop.frame}_grad"):
            yield

    # --- skeletons ------------------------------------------------------------------------------

    def _add(self, op, inputs=(), attrs=None, *, backward=False, outer=False, **kw) -> str:
        """Add a node of the backward frame, or of the forward loop's frame (``outer``: of the frame
        around the forward loop), recording which."""
        node = self.b.add_op(op, list(inputs), attrs, **kw)
        if backward:
            self.backward.add(node.name)
        else:
            self.info.register(node, self.loop.parent if outer else self.loop)
        return node.name

    def _in_outer(self, name: str) -> str:
        """``name``, a value this nested loop's gradient adds to the outer frame (its count, a
        stack): it exists exactly when the loop is entered, as far as the outer loop's stacks
        are concerned."""
        if self.parent is not None:
            self.parent.conds[f"{name}:0"] = self.parent.conds.get(self.entry, ())
        return name

    def _forward_const(self, value, name: str) -> str:
        """A constant of the frame around the forward loop (with the loop's entry when nested)."""
        name = self.b.const(np.asarray(value), name=name)
        node = self.b.graph_def.nodes[-1]
        if self.entry is not None:
            node.inputs.append(f"^{parse_input(self.entry).node}")
        self.info.register(node, self.loop.parent)
        return name

    def _backward_const(self, value, name: str) -> str:
        """A constant of the frame around the backward loop."""
        if self.parent is not None:
            return self.parent._const(value)
        return self.b.const(np.asarray(value), name=name)

    def _from_parent(self, t: str) -> str:
        """``t`` (a value of the frame around the forward loop) in the frame around the backward loop."""
        return self.parent.translate(t) if self.parent is not None else t

    def _enter(self, t: str, frame: str, constant: bool, backward: bool) -> str:
        attrs = {"frame_name": frame, "is_constant": constant, "parallel_iterations": self.pi}
        return self._add("Enter", [t], attrs, backward=backward)

    def _forward_counter(self) -> None:
        """An int32 loop variable counting the forward iterations; its increment also waits for
        the iteration's pushes (``self.f_add`` gains their control edges)."""
        b, f = self.b, self.loop.frame
        with b.name_scope("f_count"):
            enter = self._enter(self._forward_const(np.int32(0), "zero"), f, False, False)
            merge = self._add("Merge", [enter, enter])
            switch = self._add("Switch", [merge, self.loop.loop_cond.name])
            self.f_pivot = self._add("Identity", [f"{switch}:1"])
            one = self._enter(self._forward_const(np.int32(1), "one"), f, True, False)
            self.f_add = self._add("AddV2", [self.f_pivot, one])
            b.add_back_edge(merge, 1, self._add("NextIteration", [self.f_add]))
            self.count = self._in_outer(self._add("Exit", [switch]))

    def _backward_counter(self) -> None:
        """Counts ``n`` down to 0: the backward loop's condition and pivot."""
        b = self.b
        with b.name_scope("b_count"):
            enter = self._enter(self._from_parent(self.count), self.frame, False, True)
            merge = self._add("Merge", [enter, enter], backward=True)
            zero = self._enter(self._backward_const(np.int32(0), "zero"), self.frame, True, True)
            more = self._add("Greater", [merge, zero], backward=True)
            self.cond = self._add("LoopCond", [more], backward=True)
            switch = self._add("Switch", [merge, self.cond], backward=True)
            self.b_pivot = self._add("Identity", [f"{switch}:1"], backward=True)
            one = self._enter(self._backward_const(np.int32(1), "one"), self.frame, True, True)
            self.b_sub = self._add("Sub", [self.b_pivot, one], backward=True)
            b.add_back_edge(merge, 1, self._add("NextIteration", [self.b_sub], backward=True))

    def loop_var(self, init: str, name: str) -> tuple[str, str]:
        """A backward loop variable starting at ``init``: (its Merge, its value in an iteration)."""
        with self.b.name_scope(name):
            enter = self._enter(init, self.frame, False, True)
            merge = self._add("Merge", [enter, enter], backward=True)
            switch = self._add("Switch", [merge, self.cond], backward=True)
            self.exits[merge] = self._add("Exit", [switch], backward=True)
            if self.parent is not None:  # its value is in the outer backward frame
                self.parent.backward.add(self.exits[merge])
            return merge, self._add("Identity", [f"{switch}:1"], backward=True)

    def close_var(self, merge: str, value: str) -> str:
        """Feed ``value`` to the next backward iteration; return the variable's Exit."""
        value = _fit(self.b, value, merge, self.backward)
        nxt = self._add("NextIteration", [value], backward=True)
        self.b.add_back_edge(merge, 1, nxt)
        return self.exits[merge]

    def accumulate(self, inv: NodeDef, contribution: str) -> str:
        """Sum ``contribution`` over the backward iterations: the gradient of invariant ``inv``."""
        b, ob = self.b, self.ob
        outer = inv.data_inputs[0]
        with b.name_scope(f"{inv.name.rsplit('/', 1)[-1]}_acc"):
            like = outer if b.spec(outer).dtype != dtypes.resource else _variable_zeros(ob, inv)
            merge, value = self.loop_var(ob.add_op("ZerosLike", [like]).name, "sum")
            total = self._add("AddV2", [value, contribution], backward=True)
            return self.close_var(merge, total)

    # --- forward values in the backward frame -------------------------------------------------

    def translate(self, t: str) -> str:
        """The backward-frame tensor standing for ``t`` (named by a gradient function)."""
        ref = parse_input(t)
        if ref.node in self.backward:
            return t
        loop = self.info.value_frame(t)  # None: the root frame, or a node gradients() made
        if loop is not self.loop:
            if not _encloses(loop, self.loop):
                raise GraphError(
                    f"the gradient of loop '{self.loop.frame}' reads '{t}' of another loop ('{loop.frame}')",
                    node=ref.node,
                )
            return self._outer(t)
        src = self.nodes[ref.node]
        if src.op == "Enter" and src.attrs.get("is_constant"):
            return self._outer(src.data_inputs[0])
        if src.op in ("Enter", "Merge") and any(src.name in (v.enter.name, v.merge.name) for v in self.loop.vars):
            raise GraphError(
                f"internal error: a gradient in loop '{self.loop.frame}' reads the loop's Merge or Enter '{t}'",
                node=ref.node,
            )
        value = self.b.value(t)
        if value is not None:
            return self._const(value)
        key = canonical_tensor(t)
        if key not in self.popped:
            self.popped[key] = self._stack(key)
        return self.popped[key]

    def _outer(self, t: str) -> str:
        """A value of a frame around the forward loop, entered into the backward frame (through
        the outer backward loops first, for a nested loop)."""
        key = canonical_tensor(t)
        if key not in self.entered:
            self.entered[key] = self._enter(self._from_parent(t), self.frame, True, True)
        return self.entered[key]

    def _const(self, value) -> str:
        node = self.b.const(np.asarray(value), name="fwd_const")
        self.b.graph_def.node(node).inputs.append(f"^{self.b_pivot}")
        self.backward.add(node)
        return node

    def _stack(self, t: str) -> str:
        """Push ``t`` in every forward iteration that computes it; pop it in the matching backward
        iterations. Returns the popped value (with ``t``'s static shape)."""
        b = self.b
        spec = b.spec(t)
        cond = self.conds.get(t, ())
        leaf = parse_input(t).node.rsplit("/", 1)[-1]
        with self.scope(), b.name_scope(f"{leaf}_stack"):
            # In the frame around the loop: one stack per outer iteration for a nested loop.
            handle = self._add("StackV2", [self._forward_const(np.int32(-1), "max_size")],
                               {"elem_type": spec.dtype, "stack_name": t}, outer=True)  # fmt: skip
            self._in_outer(handle)
            push = self._add(
                "StackPushV2", [self._enter(handle, self.loop.frame, True, False), t], control_inputs=[self.f_pivot]
            )
            self._order(self.f_add, self.f_pivot, push, cond, lambda p: p)
            h = self._outer(handle)
            for pred, port in cond:  # read the stack only where the value was pushed
                h = f"{self._add('Switch', [h, self.translate(pred)], backward=True)}:{port}"
            pop = self._add("StackPopV2", [h], {"elem_type": spec.dtype}, control_inputs=[self.b_pivot], backward=True)
            self._order(self.b_sub, self.b_pivot, pop, cond, self.translate)
            if spec.shape.rank is None or spec.dtype == dtypes.resource:  # a handle has no shape to check
                return pop
            return self._add("EnsureShape", [pop], {"shape": spec.shape}, backward=True)

    def _order(self, step: str, pivot: str, op: str, cond, pred_of) -> None:
        """Make the counter's ``step`` wait for ``op`` (a push or pop). A conditional op may not
        run: then the step waits instead for the Switch port saying it did not (a Merge of
        "ran" and each "not taken" port is alive exactly once per iteration)."""
        backward = step == self.b_sub
        sync = op
        if cond:
            ran = self._add("Identity", [pivot], control_inputs=[op], backward=backward)
            skipped = [f"{self._add('Switch', [pivot, pred_of(pred)], backward=backward)}:{1 - port}" for pred, port in cond]
            sync = self._add("Merge", [ran, *skipped], backward=backward)
        self.b.graph_def.node(step).inputs.append(f"^{sync}")


class _FrameBuilder:
    """A GraphBuilder view for gradient functions of body ops: inputs naming forward tensors are
    translated into the backward frame, and a node with no input there gets the backward pivot as
    a control input (so it runs once per backward iteration, like a Const in TF's while body)."""

    def __init__(self, b: GraphBuilder, state: _GradLoop):
        self._b, self._state = b, state

    def __getattr__(self, name):
        return getattr(self._b, name)

    def add_op(self, op, inputs=(), attrs=None, *, control_inputs=(), **kw) -> NodeDef:
        s = self._state
        inputs = [s.translate(i) for i in inputs]
        ctrl = [c for c in control_inputs if parse_input(c).node in s.backward]
        if not any(parse_input(i).node in s.backward for i in inputs + ctrl):
            ctrl.append(s.b_pivot)
        node = self._b.add_op(op, inputs, attrs, control_inputs=ctrl, **kw)
        s.backward.add(node.name)
        return node

    def const(self, value, dtype=None, name: str = "Const") -> str:
        return GraphBuilder.const(self, value, dtype, name)


def _encloses(outer: Loop | None, loop: Loop) -> bool:
    """``outer`` (None: the root frame) is ``loop`` or a frame around it."""
    while loop is not None and loop is not outer:
        loop = loop.parent
    return loop is outer


def _fit(b, value: str, like: str, backward: set[str]) -> str:
    """``value`` with at least ``like``'s static shape, so it can close ``like``'s back edge."""
    have, want = b.spec(value).shape, b.spec(like).shape
    if want.rank is None or have == want:
        return value
    node = b.add_op("EnsureShape", [value], {"shape": want})
    backward.add(node.name)
    return node.name


def _variable_zeros(b, inv: NodeDef) -> str:
    """Zeros shaped like the variable behind a resource handle entering the loop."""
    handle = inv.data_inputs[0]
    data = b.inferencer.handle_data.get(parse_input(handle).node, {}).get(parse_input(handle).index)
    if data is None or not data.shape.is_fully_defined:
        raise GraphError(
            f"the gradient of the variable entering loop '{inv.attrs['frame_name']}' needs the "
            "variable's static shape",
            node=inv.name,
        )
    return b.const(np.zeros(data.shape.as_list(), data.dtype.numpy), name="zeros")


def _free_frame_name(b, base: str) -> str:
    used = {str(n.attrs.get("frame_name")) for n in b.graph_def.nodes if n.op == "Enter"}
    name, i = base, 1
    while name in used:
        name, i = f"{base}_{i}", i + 1
    return name

