"""sf.GradientTape: gradients with the ops' registered gradient functions, through
``train/gradients.py`` (no second autodiff).

Eagerly, the tape records the ops that touch watched tensors (trainable variables it reads are
watched automatically; others through ``watch``). ``gradient`` replays the record as a graph
(outside values as Consts, each variable read a Const standing for the variable), extends it
with ``train/gradients.gradients`` and runs the gradient nodes' kernels on the recorded forward
values, which are known, so nothing forward is recomputed; tapes recording around this one record
those gradient ops, so nested tapes give second derivatives. Inside ``sf.function`` the forward
graph is the trace itself, and the gradient nodes join it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

from specflow.api.context import STATE
from specflow.api.graph_call import RECORD_OP
from specflow.api.indexed_slices import IndexedSlices
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.graph_def import parse_input
from specflow.ops.grad_util import IndexedSlices as SparseGrad


class GradientTape:
    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self._records: list[tuple] = []  # (op, attrs, inputs, outputs)
        self._live: set[int] = set()  # ids of watched tensors and those computed from them
        self._keep: list = []  # the tensors whose ids are in _live (so an id is not reused)
        self._reads: dict[str, list[EagerTensor]] = {}  # variable uid -> its recorded reads
        self._watched_vars: set[str] = set()
        self._seen_vars: dict[str, object] = {}  # uid -> each variable this tape watched (watched_variables)
        self._watched_graph: set[str] = set()  # inside sf.function: the tensors watch() was given
        self._used = False
        self._recording = False
        # Inside sf.function: per trace (by id), the nodes made while this tape recorded, and
        # the names there when it began recording again (an open window). Only those ops are
        # differentiated: a value computed before the tape opened is a constant to it, as in TF.
        self._made: dict[int, set[str]] = {}
        self._open: dict[int, set[str]] = {}

    def __enter__(self) -> GradientTape:
        STATE.tapes.append(self)
        self._recording = True
        if STATE.trace is not None:
            self._made.setdefault(id(STATE.trace), set())
            self._open[id(STATE.trace)] = _node_names(STATE.trace)
        return self

    def __exit__(self, *exc) -> None:
        if self._recording:
            STATE.tapes.remove(self)
            self._recording = False
        if STATE.trace is not None and id(STATE.trace) in self._open:
            self._made[id(STATE.trace)] |= _node_names(STATE.trace) - self._open.pop(id(STATE.trace))

    def watch(self, x) -> None:
        from specflow.api.variables import Variable

        for v in x if isinstance(x, (list, tuple)) else [x]:
            if isinstance(v, Variable):
                self._watched_vars.add(v._uid)
                self._seen_vars.setdefault(v._uid, v)
            elif isinstance(v, EagerTensor):
                self._mark(v)
            elif isinstance(v, GraphTensor):
                self._watched_graph.add(v.name)
            else:
                raise TypeError(f"GradientTape.watch takes tensors or variables, got {type(v).__name__}")

    def _mark(self, t) -> None:
        if id(t) not in self._live:
            self._live.add(id(t))
            self._keep.append(t)

    # --- recording (called by eager.execute and Variable reads) -------------------------------------

    def _record(self, op: str, attrs: dict, inputs: list, outputs: list) -> None:
        live = self._live
        for t in inputs:
            if id(t) in live:
                break
        else:
            return
        if not outputs or any(t.dtype is dtypes.resource for t in inputs):
            # An update (AssignAddVariableOp...) or a kernel on a variable's handle: no gradient
            # flows through it (reads are the variable's recorded ReadVariableOps).
            return
        self._records.append((op, attrs, list(inputs), outputs))
        for t in outputs:
            self._mark(t)

    def _record_read(self, var, t: EagerTensor) -> None:
        if (self.watch_accessed_variables and var.trainable) or var._uid in self._watched_vars:
            self._reads.setdefault(var._uid, []).append(t)
            self._seen_vars.setdefault(var._uid, var)
            self._mark(t)

    def _traced_read(self, var) -> None:
        """A read of ``var`` inside sf.function while this tape records (for watched_variables)."""
        if self._watches(var):
            self._seen_vars.setdefault(var._uid, var)

    # --- TF's tape controls ---------------------------------------------------------------------------

    @contextmanager
    def stop_recording(self):
        """``with tape.stop_recording():`` the ops run (eagerly) or traced inside are not recorded
        by this tape: they are constants to its gradients (other tapes still record them)."""
        if not self._recording:
            raise ValueError("GradientTape.stop_recording needs the tape to be recording (inside its `with`)")
        trace = STATE.trace
        index = STATE.tapes.index(self)
        STATE.tapes.remove(self)
        self._recording = False
        if trace is not None:
            key = id(trace)
            if key not in self._made:  # recording since before the trace began: all of it so far
                self._made[key] = _node_names(trace)
            elif key in self._open:
                self._made[key] |= _node_names(trace) - self._open.pop(key)
        try:
            yield
        finally:
            STATE.tapes.insert(min(index, len(STATE.tapes)), self)
            self._recording = True
            if trace is not None:
                self._open[id(trace)] = _node_names(trace)

    def reset(self) -> None:
        """Forget everything recorded (and watched) so far, as a new tape would; a tape inside its
        ``with`` goes on recording from here."""
        self._records, self._keep, self._live, self._reads = [], [], set(), {}
        self._watched_vars, self._watched_graph, self._seen_vars = set(), set(), {}
        self._used = False
        self._made, self._open = {}, {}
        trace = STATE.trace
        if trace is not None and self._recording:
            self._made[id(trace)] = set()
            self._open[id(trace)] = _node_names(trace)

    def watched_variables(self) -> tuple:
        """The variables this tape watched (read while recording, or given to ``watch``), in
        creation order, as TensorFlow orders them."""
        return tuple(sorted(self._seen_vars.values(), key=lambda v: v._serial))

    # --- gradients ----------------------------------------------------------------------------------

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(sum of target)/d(source) for each source (a tensor or variable; nested lists keep their
        structure); None where a source does not affect the target (zeros with
        ``unconnected_gradients="zero"``)."""
        from specflow.api.function import flatten, unflatten

        zero = _zero_unconnected(unconnected_gradients)
        self._use()
        flat, structure = flatten(sources)
        targets, _ = flatten(target)
        seeds = None if output_gradients is None else flatten(output_gradients)[0]
        grads = self._with_variable_targets(targets, flat, seeds)  # a gathered variable's: IndexedSlices
        if zero:
            grads = [_zeros_like(s) if g is None else g for g, s in zip(grads, flat)]
        self._release()
        return unflatten(structure, grads)

    def jacobian(self, target, sources, unconnected_gradients="none"):
        """d(target[i...])/d(source[j...]) for each source: shape target.shape + source.shape; None
        where a source does not affect the target (zeros with ``unconnected_gradients="zero"``)."""
        import numpy as np

        from specflow.api.function import flatten, unflatten
        from specflow.api.op_functions import call

        zero = _zero_unconnected(unconnected_gradients)
        self._use()
        flat, structure = flatten(sources)
        shape = target.shape.as_list() if target.shape.rank is not None else None
        if shape is None or None in shape:
            raise GraphError(f"GradientTape.jacobian needs the target's full shape, got {target.shape}")
        rows: list[list] = [[] for _ in flat]
        size = int(np.prod(shape, dtype=np.int64))
        for k in range(size):
            seed = np.zeros(size, target.dtype.numpy)
            seed[k] = 1
            for i, g in enumerate(self._gradients([target], flat, [_as_eager(seed.reshape(shape))])):
                rows[i].append(g)
        out = []
        for s, row in zip(flat, rows):
            if all(g is None for g in row) and not zero:
                out.append(None)
                continue
            parts = [_zeros_like(s) if g is None else g for g in row]
            stacked = call("Pack", parts, axis=0) if parts else _zeros_like(s)
            out.append(call("Reshape", stacked, np.asarray(shape + s.shape.as_list(), np.int64)))
        self._release()
        return unflatten(structure, out)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per-example jacobians: for ``target`` [b, t...] and ``source`` [b, s...] (each row of
        the target depending only on the same row of the source, as TensorFlow assumes), the
        tensor [b, t..., s...] of d target[i, t...] / d source[i, s...]."""
        import numpy as np

        from specflow.api.op_functions import call

        zero = _zero_unconnected(unconnected_gradients)
        self._use()
        shape = target.shape.as_list() if target.shape.rank is not None else None
        sshape = source.shape.as_list() if source.shape.rank is not None else None
        if shape is None or None in shape or sshape is None or None in sshape:
            raise GraphError(f"GradientTape.batch_jacobian needs full shapes, got target {target.shape}, source "
                             f"{source.shape}")
        if not shape or not sshape or shape[0] != sshape[0]:
            raise ValueError(f"batch_jacobian: target {target.shape} and source {source.shape} need the same "
                             "first (batch) dimension")
        batch, rest = shape[0], int(np.prod(shape[1:], dtype=np.int64))
        parts = []
        for j in range(rest):
            seed = np.zeros((batch, rest), target.dtype.numpy)
            seed[:, j] = 1
            parts.append(self._gradients([target], [source], [_as_eager(seed.reshape(shape))])[0])
        self._release()
        if all(g is None for g in parts):
            if not zero:
                return None
            return _zeros_of(shape + sshape[1:], source.dtype)
        parts = [_zeros_like(source) if g is None else g for g in parts]
        stacked = call("Pack", parts, axis=1)  # [b, rest, s...]
        return call("Reshape", stacked, np.asarray(shape + sshape[1:], np.int64))

    def _use(self) -> None:
        if self._used and not self.persistent:
            raise GraphError("a non-persistent GradientTape can compute gradients once; use "
                             "GradientTape(persistent=True) to call gradient() again")
        self._used = True

    def _release(self) -> None:
        if not self.persistent:
            self._records, self._keep, self._live, self._reads = [], [], set(), {}

    def _with_variable_targets(self, targets, sources, seeds) -> list:
        """The gradients, where a variable as a target stands for itself, as TF's handle does:
        d(w)/d(w) is the seed (ones), recorded or not; d(w)/d(anything else) adds nothing."""
        from specflow.api.op_functions import call, convert_to_tensor
        from specflow.api.variables import Variable

        if not any(isinstance(t, Variable) for t in targets):
            return self._gradients(targets, sources, seeds, sparse=True)
        keep = [i for i, t in enumerate(targets) if not isinstance(t, Variable)]
        grads = self._gradients([targets[i] for i in keep], sources, None if seeds is None else [seeds[i] for i in keep],
                                sparse=True) if keep else [None] * len(sources)  # fmt: skip
        for i, t in enumerate(targets):
            if isinstance(t, Variable):
                seed = call("OnesLike", t._read()) if seeds is None else seeds[i]
                grads = [(seed if g is None else convert_to_tensor(g) + seed) if s is t else g
                         for g, s in zip(grads, sources)]  # fmt: skip
        return grads

    def _gradients(self, targets, sources, seeds, sparse: bool = False) -> list:
        """Per source its gradient; with ``sparse``, a variable read only through gathers gets
        an sf.IndexedSlices (TF's tape), every other source a dense tensor."""
        if any(isinstance(t, GraphTensor) for t in targets):
            return self._graph_gradient(targets, sources, seeds, sparse)
        return self._eager_gradient(targets, sources, seeds, sparse)

    def _graph_gradient(self, targets, sources, seeds, sparse: bool = False) -> list:
        from specflow.api.variables import Variable
        from specflow.train.gradients import gradients

        trace = targets[0].trace
        xs = []
        watched = []  # per source: whether this tape watches it (None for the others, as TF)
        for s in sources:
            if isinstance(s, Variable):
                xs.append(trace.variable_handle(s).name)
                watched.append(self._watches(s))
            elif isinstance(s, GraphTensor):
                xs.append(s.name)
                watched.append(self._watched_in_graph(trace, s.name))
            else:
                raise GraphError(f"gradient sources inside sf.function must be variables or tensors of the trace, "
                                 f"got {type(s).__name__}")
        grad_ys = None
        if seeds is not None:
            grad_ys = []
            for g, y in zip(seeds, targets):
                if g is None:  # sf.gradients' grad_ys: None seeds with ones, as TF's
                    grad_ys.append(None)
                    continue
                if not isinstance(g, GraphTensor):
                    g = trace.capture(_as_eager(g, y.dtype))
                grad_ys.append(g.name)
        names = gradients(trace.builder, [t.name for t in targets], xs, grad_ys=grad_ys,
                          stop_gradients=self._unrecorded(trace, xs), sparse=sparse, sparse_reads=sparse)  # fmt: skip
        out = []
        for n, w, s in zip(names, watched, sources):
            if isinstance(n, SparseGrad):
                if isinstance(s, Variable):
                    out.append(IndexedSlices(trace._tensor(n.values), trace._tensor(n.indices),
                                             trace._tensor(_variable_shape(trace.builder, xs[len(out)], s))))
                    continue
                n = n.dense(trace.builder)
            out.append(None if n is None or not w else trace._tensor(n))
        return out

    def _unrecorded(self, trace, xs: list[str]) -> list[str]:
        """The trace's nodes this tape did not record (made while it was closed), the sources
        aside; none when it recorded from before the trace began (a tape around the call)."""
        if id(trace) not in self._made:
            return []
        made = set(self._made[id(trace)])
        if id(trace) in self._open:
            made |= _node_names(trace) - self._open[id(trace)]
        sources = {parse_input(x).node for x in xs}
        return [n.name for n in trace.builder.graph_def.nodes if n.name not in made and n.name not in sources]

    def _watches(self, var) -> bool:
        return (self.watch_accessed_variables and var.trainable) or var._uid in self._watched_vars

    def _watched_in_graph(self, trace, tensor: str) -> bool:
        """Whether ``tensor`` of the trace is watched or computed from what this tape watches (a
        watched tensor, a read of a watched variable); others get no gradient, as in TensorFlow."""
        from specflow.graph.graph_def import canonical_tensor, parse_input

        handles = set()
        for ref, handle in trace.variables.values():
            var = ref()
            if var is not None and self._watches(var):
                handles.add(handle)
        nodes = trace.builder.graph_def.node_map()
        todo, seen = [tensor], set()
        while todo:
            t = canonical_tensor(todo.pop())
            if t in self._watched_graph:
                return True
            name = parse_input(t).node
            if name in seen or name not in nodes:
                continue
            seen.add(name)
            inputs = [i for i in nodes[name].inputs if not i.startswith("^")]
            if any(parse_input(i).node in handles for i in inputs):
                return True
            todo.extend(inputs)
        return False

    def _eager_gradient(self, targets, sources, seeds, sparse: bool = False) -> list:
        from specflow.api.variables import Variable
        from specflow.graph.builder import GraphBuilder
        from specflow.train.gradients import gradients

        b = GraphBuilder()
        names: dict[int, str] = {}
        # tensor name -> the recorded EagerTensor itself, so that a tape recording around this
        # one sees the gradient ops read its forward tensors (nested tapes: second derivatives)
        tensors: dict[str, EagerTensor] = {}

        # A loaded signature's loop copied in: the gradient runs in a Session, whose plan is cached
        # per graph structure, so the values that change from step to step are fed (Placeholders)
        # and only small integer ones (axes, shapes) stay constants of the graph.
        framed = any(r[0] == RECORD_OP for r in self._records)
        feeds: dict[str, object] = {}

        def name_of(t) -> str:
            n = names.get(id(t))
            if n is None:
                if not isinstance(t, EagerTensor):
                    raise GraphError(f"cannot differentiate through a {type(t).__name__}")
                if framed and (t.dtype.is_floating or t.dtype.is_complex or t.value.size > 8):
                    node = b.add_op("Placeholder", [], {"dtype": t.dtype, "shape": t.shape}, name=b.unique_name("fed"),
                                    exact_name=True)
                    feeds[node.name] = t.value
                else:
                    node = b.add_op("Const", [], {"value": np.asarray(t), "dtype": t.dtype}, name=b.unique_name("c"),
                                    exact_name=True)
                n = names[id(t)] = node.name
                tensors[n] = t
            return n

        for op, attrs, inputs, outputs in self._records:
            ins = [name_of(t) for t in inputs]
            if op == RECORD_OP:
                k = len(attrs["inputs"])
                outs = attrs["call"].inline(b, dict(zip(attrs["inputs"], ins[:k])), reads=dict(zip(attrs["reads"], ins[k:])))
                for alias, t in zip(attrs["outputs"], outputs):
                    names[id(t)] = outs[alias]
                continue
            node = b.add_op(op, ins, dict(attrs), name=b.unique_name(op), exact_name=True)
            for k, t in enumerate(outputs):
                n = node.name if k == 0 else f"{node.name}:{k}"
                names[id(t)] = n
                tensors[n] = t
        # Sources after the record: a source computed inside the tape (an intermediate) is the
        # recorded op's output, not a constant standing beside it.
        xs: list[str] = []
        spans: list[tuple[int, int]] = []  # per source: its slice of xs (a variable: one per read)
        for s in sources:
            lo = len(xs)
            if isinstance(s, Variable):
                xs.extend(name_of(r) for r in self._reads.get(s._uid, ()))
            elif isinstance(s, Tensor):
                if id(s) in self._live:  # a tensor neither watched nor computed from one: None
                    xs.append(name_of(s))
            else:
                raise TypeError(f"gradient sources must be tensors or variables, got {type(s).__name__}")
            spans.append((lo, len(xs)))
        ys = [names.get(id(t)) for t in targets]
        grad_ys = None
        if seeds is not None:
            if any(g is None for g in seeds):  # TF's eager tape refuses one too (it gave NaN here)
                raise ValueError("GradientTape.gradient: output_gradients holds None; give a tensor for every target "
                                 "(ones for its plain gradient)")
            grad_ys = [name_of(_as_eager(g, t.dtype)) for g, t, y in zip(seeds, targets, ys) if y is not None]
        connected = [y for y in ys if y is not None]
        if not connected or not xs:
            return [None] * len(sources)
        first_new = len(b.graph_def.nodes)
        b.eager_replay = (names, tensors)  # a custom gradient's grad_fn reads recorded tensors (api/custom_gradient.py)
        grads = gradients(b, connected, xs, grad_ys=grad_ys, sparse=sparse)
        # IndexedSlices only for a variable (a read taken through gathers alone); others dense
        for s, (lo, hi) in zip(sources, spans):
            for k in range(lo, hi):
                if isinstance(grads[k], SparseGrad) and not isinstance(s, Variable):
                    grads[k] = grads[k].dense(b)
        outer = [t for t in STATE.tapes if t is not self]
        fetched = [n for g in grads if g is not None for n in ((g.values, g.indices) if isinstance(g, SparseGrad) else (g,))]
        if framed:
            _run_session(b, fetched, feeds, tensors, outer)
        else:
            _run_nodes(b.graph_def.nodes[first_new:], tensors, outer)
        out = []
        for lo, hi in spans:
            parts = [IndexedSlices(tensors[_canon(g.values)], tensors[_canon(g.indices)],
                                   np.asarray(tensors[_canon(xs[k])].value.shape, np.int32))
                     if isinstance(g, SparseGrad) else tensors[_canon(g)]
                     for k, g in zip(range(lo, hi), grads[lo:hi]) if g is not None]  # fmt: skip
            out.append(_sum_parts(parts) if parts else None)
        return out


_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _sum_parts(parts: list):
    """A variable's gradients from its reads added up: IndexedSlices joined (TF's aggregation:
    the rows concatenated), anything dense making the sum dense."""
    from specflow.api.op_functions import call, convert_to_tensor

    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, IndexedSlices) for p in parts):
        wide = any(p.indices.dtype.name == "int64" for p in parts)
        ids = [call("Cast", p.indices, DstT="int64") if wide and p.indices.dtype.name != "int64" else p.indices
               for p in parts]  # fmt: skip
        return IndexedSlices(call("ConcatV2", [p.values for p in parts], np.int32(0)), call("ConcatV2", ids, np.int32(0)),
                             parts[0].dense_shape)  # fmt: skip
    total = convert_to_tensor(parts[0])
    for p in parts[1:]:
        total = total + convert_to_tensor(p)
    return total


def _variable_shape(b, handle: str, var) -> str:
    """A variable's shape as an int32 vector of the graph: a Const when fully known."""
    dims = var.shape.as_list() if var.shape.rank is not None else None
    if dims is not None and None not in dims:
        return b.const(np.asarray(dims, np.int32), name="dense_shape")
    return b.add_op("VariableShape", [handle], {"out_type": dtypes.int32}).name


def _node_names(trace) -> set[str]:
    return {n.name for n in trace.builder.graph_def.nodes}


def _canon(name: str) -> str:
    return name[:-2] if name.endswith(":0") else name


def _zero_unconnected(how) -> bool:
    """TF's ``unconnected_gradients``: "none" (the default) or "zero" (a string or an enum)."""
    value = str(getattr(how, "value", how)).lower()
    if value not in ("none", "zero"):
        raise GraphError(f"unconnected_gradients must be 'none' or 'zero', got {how!r}")
    return value == "zero"


def _zeros_like(source):
    from specflow.api.op_functions import call

    return call("ZerosLike", source)


def _zeros_of(shape: list, dtype):
    import numpy as np

    return _as_eager(np.zeros(shape, dtype.numpy))


def _as_eager(g, dtype=None) -> EagerTensor:
    """``g`` as an eager tensor; a Python value or numpy array (an output gradient) takes the
    target's ``dtype``, as a literal takes its op's."""
    from specflow.api.op_functions import to_tensor

    if isinstance(g, EagerTensor) or dtype is None:
        return to_tensor(g)
    return to_tensor(g, dtype, "output_gradients")


def _run_nodes(nodes: list, tensors: dict, tapes: list) -> None:
    """Run ``nodes`` (in graph order) through their eager kernels, reading and filling ``tensors``
    (tensor name -> EagerTensor); ``tapes`` (those recording around the one differentiating)
    record the ops, so a gradient can itself be differentiated."""
    from specflow.api import eager
    from specflow.api.context import dtype_of
    from specflow.ops.registry import get_op

    saved, STATE.tapes = STATE.tapes, tapes
    try:
        for node in nodes:
            if node.op == "Const":
                if node.name not in tensors:
                    v = node.attrs["value"]
                    tensors[node.name] = EagerTensor(v, node.attrs.get("dtype") or dtype_of(v), _CPU0)
                continue
            ins = [tensors[_canon(inp)] for inp in node.data_inputs]
            attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
            outs = eager.execute(get_op(node.op), ins, attrs)
            for k, t in enumerate(outs):
                tensors[node.name if k == 0 else f"{node.name}:{k}"] = t
    finally:
        STATE.tapes = saved


_SESSIONS: OrderedDict = OrderedDict()  # graph structure -> Session (the last few gradient graphs)
_SESSIONS_KEPT = 4
_SESSIONS_LOCK = threading.Lock()


def _run_session(b, fetches: list[str], feeds: dict, tensors: dict, tapes: list) -> None:
    """Run the gradient ``fetches`` of replay graph ``b`` (holding a loaded signature's loop)
    through a Session, putting them in ``tensors``. The forward runs again there (its backward
    loop pops what its forward loop pushed); tapes recording around this one cannot see inside.
    The Session is kept per graph structure: the next step's identical graph reuses its plan."""
    from specflow.api.function import devices_needed
    from specflow.runtime.session import Session, SessionConfig

    if any(t._recording for t in tapes):
        raise GraphError("a gradient through a loaded signature's loop cannot itself be differentiated (an outer "
                         "GradientTape is recording): take the second derivative inside an sf.function instead")
    fetches = list(dict.fromkeys(_canon(f) for f in fetches))
    key = (_structure(b.graph_def), tuple(fetches))
    with _SESSIONS_LOCK:
        session = _SESSIONS.pop(key, None)
        if session is None:
            session = Session(b.graph_def, SessionConfig(devices=devices_needed(b.graph_def)))
        _SESSIONS[key] = session
        while len(_SESSIONS) > _SESSIONS_KEPT:
            _SESSIONS.popitem(last=False)[1].close()
    values = session.run(fetches, feeds)
    for name, value in zip(fetches, values):
        tensors[name] = EagerTensor(value, b.spec(name).dtype, _CPU0)


def _structure(graph) -> tuple:
    """What makes two graphs run alike: every node's name, op, inputs and attrs (constants by value)."""
    import numpy as np

    def attr(v):
        if isinstance(v, np.ndarray):
            return (str(v.dtype), v.shape, v.tobytes() if v.dtype != object else repr(v.tolist()))
        if isinstance(v, (list, tuple)):
            return tuple(attr(x) for x in v)
        return repr(v)

    return tuple((n.name, n.op, tuple(n.inputs), n.device, tuple(sorted((k, attr(v)) for k, v in n.attrs.items())))
                 for n in graph.nodes)
