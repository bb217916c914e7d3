"""sf.wrap_function: the RFC's path for 1.x code. A pruned piece of any GraphDef (a spec's, one
built with GraphBuilder, or a TensorFlow frozen graph ``.pb``) as a callable: its ``feeds``
become the inputs, its ``fetches`` the outputs, and a call runs the piece through a Session
(pruned to what the fetches need, placed, optimized; the plan cached)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specflow.api.context import dtype_of
from specflow.api.tensor import EagerTensor, Tensor
from specflow.errors import GraphError
from specflow.graph.graph_def import GraphDef, canonical_tensor

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


class WrappedFunction:
    def __init__(self, session, feeds: list[str], fetches: list[str], single: bool):
        self.session = session
        self.inputs = feeds
        self.outputs = fetches
        self._single = single

    def __call__(self, *args, **kwargs):
        """Inputs positionally (in ``feeds`` order) or by tensor name; one output, or a list."""
        if len(args) > len(self.inputs):
            raise GraphError(f"wrapped function takes {len(self.inputs)} input(s), got {len(args)}")
        fed = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            key = canonical_tensor(k)
            if key not in self.inputs:
                raise GraphError(f"wrapped function has no input '{k}' (inputs: {', '.join(self.inputs)})")
            fed[key] = v
        missing = [t for t in self.inputs if t not in fed]
        if missing:
            raise GraphError(f"wrapped function needs input(s) {', '.join(missing)}")
        feeds = {t: np.asarray(v) if isinstance(v, Tensor) else v for t, v in fed.items()}
        values = self.session.run(self.outputs, feeds)
        out = [EagerTensor(v, dtype_of(v), _CPU0) for v in values]
        return out[0] if self._single else out

    def prune(self, feeds, fetches) -> WrappedFunction:
        """Another piece of the same graph (and Session: variables are shared)."""
        return _wrapped(self.session, feeds, fetches)


def _wrapped(session, feeds, fetches) -> WrappedFunction:
    single = isinstance(fetches, str)
    feeds = [canonical_tensor(f) for f in ([feeds] if isinstance(feeds, str) else list(feeds))]
    fetches = [canonical_tensor(f) for f in ([fetches] if single else list(fetches))]
    session.plan_for(fetches, feeds)  # prune now: an unknown name or an unfed input is an error here
    return WrappedFunction(session, feeds, fetches, single)


def wrap_function(graph, feeds=(), fetches=(), init: str | None = None) -> WrappedFunction:
    """``graph``: a GraphDef, a loaded Spec, a spec path (``.yaml``) or a TF GraphDef file
    (``.pb``). A spec's variables are initialized (``init``: another target to run first)."""
    from specflow.api.function import devices_needed
    from specflow.runtime.session import Session, SessionConfig

    if isinstance(graph, (str, Path)):
        path = Path(graph)
        if path.suffix == ".pb":
            from specflow.io.tf_graph import from_tf_graph_def

            graph = from_tf_graph_def(path.read_bytes())
        else:
            import specflow

            graph = specflow.load_spec(path)
        from specflow.io.tf_functions import check_spec_writes_no_files

        # a graph read from a file writes or deletes no files it names (as every CLI command)
        check_spec_writes_no_files(graph if isinstance(graph, GraphDef) else graph.graph_def)
    if not isinstance(graph, GraphDef):
        spec = graph
        graph = spec.graph_def
        init = init or spec.lowered.init_op
    session = Session(graph, SessionConfig(devices=devices_needed(graph)))
    if init:
        session.run([], targets=[init])
    return _wrapped(session, feeds, fetches)
