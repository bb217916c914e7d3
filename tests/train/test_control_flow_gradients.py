"""Gradients through while loops and conditionals (specflow/train/loop_gradients.py), against
analytic values and central finite differences, run by the Session's frame executor (and
compiled, ``same_on_frames``); and the
stack ops the backward loops use (specflow/ops/stack_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import GraphError, SpecflowError
from specflow.graph import dtypes
from specflow.graph.builder import GraphBuilder
from specflow.graph.control_flow import cond, while_loop
from specflow.graph.verify import verify
from specflow.runtime.session import Session, SessionConfig
from specflow.train.gradients import gradients
from tests.ops.cases_stack import check_ensure_shape_errors

F64, I32 = dtypes.float64, dtypes.int32
RNG = np.random.default_rng(6)


def placeholder(b, name, shape, dtype=F64) -> str:
    return b.add_op("Placeholder", attrs={"dtype": dtype, "shape": shape}, name=name).name


def add(b, op, *inputs, **attrs) -> str:
    return b.add_op(op, list(inputs), attrs).name


def sum_all(b, t, name=None) -> str:
    rank = b.spec(t).shape.rank
    return b.add_op("Sum", [t, b.const(np.arange(rank, dtype=np.int32))], name=name).name


def counted_loop(b, n, body, init, **kw):
    """``for i in range(n): vars = body(b, *vars)``; n a tensor or an int."""
    n = n if isinstance(n, str) else b.const(np.int32(n))
    return while_loop(
        b,
        lambda b, i, *vs: add(b, "Less", i, n),
        lambda b, i, *vs: [add(b, "AddV2", i, b.const(np.int32(1))), *body(b, *vs)],
        [b.const(np.int32(0)), *init],
        **kw,
    )


def finite_differences(s: Session, loss: str, feeds: dict, name: str, eps=1e-6) -> np.ndarray:
    x = feeds[name]
    grad = np.zeros_like(x)
    for j in range(x.size):
        d = np.zeros(x.size)
        d[j] = eps
        d = d.reshape(x.shape)
        hi = s.run(loss, feeds={**feeds, name: x + d})
        lo = s.run(loss, feeds={**feeds, name: x - d})
        grad.flat[j] = (hi - lo) / (2 * eps)
    return grad


def check(b, loss: str, feeds: dict, wrt: list[str], rtol=1e-6, atol=1e-8) -> list[np.ndarray]:
    """The gradients of ``loss`` for ``wrt`` against finite differences; returns them."""
    grads = gradients(b, [loss], wrt)
    verify(b.graph_def)
    with Session(b.graph_def) as s:
        got = s.run(grads, feeds=feeds)
        for name, g in zip(wrt, got):
            np.testing.assert_allclose(g, finite_differences(s, loss, feeds, name), rtol=rtol, atol=atol,
                                       err_msg=f"d loss / d {name}")  # fmt: skip
    same_on_frames(b, [loss, *grads], feeds)
    return got


def same_on_frames(b, fetches: list[str], feeds: dict) -> None:
    """Loops kept (not unrolled): compiled (runtime/loop_plan.py) and on frames, the values and
    gradients agree to 1e-12."""
    runs = []
    for compiled in (True, False):
        with Session(b.graph_def, SessionConfig(unroll_limit=0, compile_loops=compiled)) as s:
            runs.append(s.run(fetches, feeds=feeds))
    for name, a, f in zip(fetches, *runs):
        np.testing.assert_allclose(a, f, rtol=1e-12, atol=1e-300, err_msg=f"{name}: compiled vs frames")


# --- while loops ------------------------------------------------------------------------------------


def power_loop(n):
    """``p = x ** n`` by a loop multiplying by x; ``loss = sum(p)``."""
    b = GraphBuilder()
    x = placeholder(b, "x", [3])
    if n is None:
        n = placeholder(b, "n", [], I32)
    r = counted_loop(b, n, lambda b, p: [add(b, "Mul", p, x)], [add(b, "OnesLike", x)])
    return b, x, sum_all(b, r.outputs[1], name="loss")


X = np.array([1.5, -0.5, 2.0])


def test_power_loop_gradient_is_n_x_to_the_n_minus_1():
    b, x, loss = power_loop(5)
    (dx,) = check(b, loss, {x: X}, [x])
    np.testing.assert_allclose(dx, 5 * X**4, rtol=1e-12)


def test_power_loop_with_n_fed_at_run_time():
    b, x, loss = power_loop(None)
    (dx,) = gradients(b, [loss], [x])
    with Session(b.graph_def) as s:
        for n in (0, 1, 2, 7):
            got = s.run(dx, feeds={x: X, "n": np.int32(n)})
            np.testing.assert_allclose(got, n * X ** (n - 1) if n else np.zeros(3), rtol=1e-12)
        # Twice in a row with different n: each step has its own stacks.
        assert s.run(dx, feeds={x: X, "n": np.int32(3)}) == pytest.approx(3 * X**2)


def test_loop_invariant_weight_gradient_sums_over_iterations():
    """``h = w * h + x`` four times: w and x are loop invariants, h0 the initial value."""
    b = GraphBuilder()
    w, x, h0 = placeholder(b, "w", [3]), placeholder(b, "x", [3]), placeholder(b, "h0", [3])
    r = counted_loop(b, 4, lambda b, h: [add(b, "AddV2", add(b, "Mul", w, h), x)], [h0])
    loss = sum_all(b, add(b, "Square", r.outputs[1]), name="loss")
    W, XV, H0 = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    dw, dx, dh0 = check(b, loss, {w: W, x: XV, h0: H0}, [w, x, h0])
    # Analytic: h4 = w^4 h0 + (w^3 + w^2 + w + 1) x
    h4 = W**4 * H0 + (W**3 + W**2 + W + 1) * XV
    np.testing.assert_allclose(dh0, 2 * h4 * W**4)
    np.testing.assert_allclose(dx, 2 * h4 * (W**3 + W**2 + W + 1))
    np.testing.assert_allclose(dw, 2 * h4 * (4 * W**3 * H0 + (3 * W**2 + 2 * W + 1) * XV))


def test_rnn_loop_over_time_steps_matches_finite_differences():
    """An Elman cell over 5 time steps read by GatherV2 with the loop counter (an order-sensitive
    use of the saved values), with the default 10 parallel iterations."""
    b = GraphBuilder()
    seq, w, u = placeholder(b, "seq", [5, 2, 3]), placeholder(b, "w", [3, 4]), placeholder(b, "u", [4, 4])
    h0 = b.const(np.zeros((2, 4)), F64)
    zero = b.const(np.int32(0))

    def body(b, i, h):
        x_t = add(b, "GatherV2", seq, i, zero)
        h = add(b, "Tanh", add(b, "AddV2", add(b, "MatMul", x_t, w), add(b, "MatMul", h, u)))
        return [add(b, "AddV2", i, b.const(np.int32(1))), h]

    r = while_loop(b, lambda b, i, h: add(b, "Less", i, b.const(np.int32(5))), body, [zero, h0])
    target = b.const(RNG.uniform(-1, 1, (2, 4)), F64)
    loss = sum_all(b, add(b, "Square", add(b, "Sub", r.outputs[1], target)), name="loss")
    feeds = {seq: RNG.uniform(-1, 1, (5, 2, 3)), w: RNG.uniform(-1, 1, (3, 4)), u: RNG.uniform(-0.5, 0.5, (4, 4))}
    check(b, loss, feeds, [seq, w, u], rtol=1e-5)


def test_cond_inside_loop():
    """Even iterations multiply by w, odd ones take ``tanh(h) - x``: each backward iteration
    follows the branch its forward iteration took."""
    b = GraphBuilder()
    x, w, h0 = placeholder(b, "x", [3]), placeholder(b, "w", [3]), placeholder(b, "h0", [3])

    def body(b, i, h):
        even = add(b, "Equal", add(b, "FloorMod", i, b.const(np.int32(2))), b.const(np.int32(0)))
        r = cond(b, even, lambda b, h: add(b, "Mul", h, w), lambda b, h: add(b, "Sub", add(b, "Tanh", h), x), [h])
        return [add(b, "AddV2", i, b.const(np.int32(1))), r.outputs[0]]

    r = while_loop(b, lambda b, i, h: add(b, "Less", i, b.const(np.int32(5))), body, [b.const(np.int32(0)), h0])
    loss = sum_all(b, add(b, "Square", r.outputs[1]), name="loss")
    feeds = {x: np.array([0.3, -0.2, 0.5]), w: np.array([1.1, -0.9, 0.8]), h0: np.array([0.5, 0.1, -0.2])}
    dx, dw, dh0 = check(b, loss, feeds, [x, w, h0])
    assert np.all(dx != 0) and np.all(dw != 0)  # both branches carried gradient


# --- conditionals -------------------------------------------------------------------------------


@pytest.mark.parametrize("pred", [True, False])
def test_cond_gradient_goes_to_the_taken_branch(pred):
    """``y = x * x`` if p else ``-3 x``: dy/dx is 2x or -3, and the untaken branch gets nothing."""
    b = GraphBuilder()
    x, p = placeholder(b, "x", [3]), placeholder(b, "p", [], dtypes.bool_)
    r = cond(b, p, lambda b, v: add(b, "Mul", v, v), lambda b, v: add(b, "Mul", v, b.const(-3.0, F64)), [x])
    loss = sum_all(b, r.outputs[0], name="loss")
    (dx,) = check(b, loss, {x: X, p: np.array(pred)}, [x])
    np.testing.assert_allclose(dx, 2 * X if pred else np.full(3, -3.0))


# --- errors -------------------------------------------------------------------------------------


def test_gradient_with_respect_to_a_tensor_inside_a_loop_is_an_error():
    b = GraphBuilder()
    x = placeholder(b, "x", [3])
    r = counted_loop(b, 3, lambda b, h: [add(b, "Mul", h, x)], [x])
    loss = sum_all(b, r.outputs[1])
    inside = r.identities[1]
    with pytest.raises(GraphError, match=f"'{inside}:0', a tensor inside while loop 'while'") as e:
        gradients(b, [loss], [inside])
    assert e.value.node == inside


# --- stacks -------------------------------------------------------------------------------------


def stack_graph():
    """Push a then b onto a stack; pop twice (b, then a) in order; a third pop would be empty."""
    b = GraphBuilder()
    h = b.add_op("StackV2", [b.const(np.int32(2))], {"elem_type": F64}, name="stack").name
    a_, c_ = placeholder(b, "a", [2]), placeholder(b, "c", [3])
    pa = b.add_op("StackPushV2", [h, a_], name="push_a").name
    pc = b.add_op("StackPushV2", [h, c_], name="push_c", control_inputs=[pa]).name
    first = b.add_op("StackPopV2", [h], {"elem_type": F64}, name="pop1", control_inputs=[pc]).name
    second = b.add_op("StackPopV2", [h], {"elem_type": F64}, name="pop2", control_inputs=[first]).name
    b.add_op("StackPopV2", [h], {"elem_type": F64}, name="pop3", control_inputs=[second])
    b.add_op("StackPushV2", [h, c_], name="push_3", control_inputs=[pc])
    b.add_op("StackCloseV2", [h], name="close", control_inputs=[pc])
    b.add_op("StackPushV2", [h, a_], name="push_closed", control_inputs=["close"])
    return b


def test_stack_pops_in_reverse_push_order_and_steps_do_not_share_stacks():
    A, C = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    with Session(stack_graph().graph_def) as s:
        for _ in range(2):  # a second step starts with a fresh, empty stack
            first, second = s.run(["pop1", "pop2"], feeds={"a": A, "c": C})
            np.testing.assert_array_equal(first, C)
            np.testing.assert_array_equal(second, A)
        with pytest.raises(SpecflowError, match="stack '.*' is empty"):
            s.run("pop3", feeds={"a": A, "c": C})
        with pytest.raises(SpecflowError, match=r"overflowed its max_size \(2\)"):
            s.run("push_3", feeds={"a": A, "c": C})
        with pytest.raises(SpecflowError, match="does not exist in this step|has already been closed"):
            s.run("push_closed", feeds={"a": A, "c": C})


def test_ensure_shape():
    check_ensure_shape_errors()


def test_variable_read_inside_the_loop_gets_the_summed_gradient():
    """The body reads a resource variable (its handle enters the loop): ``h = h * v`` three times,
    so d sum(h) / dv = 3 v^2 h0, accumulated from the value each iteration read."""
    b = GraphBuilder()
    handle = b.add_op("VarHandleOp", attrs={"dtype": F64, "shape": [3], "shared_name": "v"}, name="v").name
    init = b.add_op("AssignVariableOp", [handle, placeholder(b, "v0", [3])], name="init").name
    h0 = placeholder(b, "h0", [3])
    read = lambda b: add(b, "ReadVariableOp", handle, dtype=F64)  # noqa: E731
    r = counted_loop(b, 3, lambda b, h: [add(b, "Mul", h, read(b))], [h0])
    assert any(n.op == "Enter" and n.inputs[0] == handle for n in b.graph_def.nodes)  # the handle is captured
    (dv,) = gradients(b, [sum_all(b, r.outputs[1])], [handle])
    V, H0 = np.array([0.5, -1.5, 2.0]), np.array([1.0, 2.0, -0.5])
    with Session(b.graph_def) as s:
        s.run([], feeds={"v0": V}, targets=[init])
        np.testing.assert_allclose(s.run(dv, feeds={h0: H0}), 3 * V**2 * H0)
