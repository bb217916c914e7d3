"""AutoGraph (api/autograph.py): Python control flow on tensors inside sf.function equals the
same Python run eagerly, and builds real conds and loops (not Python unrolled on one value):
each function is traced once with unknown-valued inputs and then run on several values."""

import numpy as np
import pytest

import specflow as sf
from specflow.errors import GraphError

F32 = sf.TensorSpec([], sf.float32)
V32 = sf.TensorSpec([None], sf.float32)
I32 = sf.TensorSpec([], sf.int32)


def sign_chain(x):
    if x > 1.0:
        y = x * 2.0
    elif x < -1.0:
        y = -x
    else:
        y = x * 0.0 + 7.0
    return y + 1.0


def early_returns(x):
    if x > 0:
        if x > 5:
            return x * 10.0
        return x + 100.0
    return -x


def while_sum(v):
    s = 0.0
    i = 0
    while i < sf.shape(v)[0]:
        s += v[i] * sf.cast(i, sf.float32)
        i += 1
    return s, i


def short_circuit_while(v):
    i = 0
    n = sf.shape(v)[0]
    while i < n and v[i] < 3.0:  # v[i] would be out of range at i == n without short-circuit
        i += 1
    return i


def for_break_continue(v):
    total = sf.constant(0.0)
    count = 0
    for x in v:
        if x > 8.0:
            break
        if x < 2.0:
            continue
        total += x
        count += 1
    return total, count


def for_range_else(n):
    acc = 1
    for i in range(n):
        acc = acc * (i + 2)
        if acc > 1000:
            break
    else:
        acc = -acc
    return acc


def nested_loops(n):
    out = 0
    for i in sf.range(n):
        j = 0
        while j < i:
            if j == 3:
                break
            out += i * j
            j += 1
    return out


def helper(x):
    if x > 0:
        return x
    return x * x


def calls_a_helper(x):
    return helper(x) + helper(-x) * 2.0


def python_values_stay_python(x):
    scale = 3  # a Python if on a Python value: plain Python (no cond)
    if scale > 2:
        x = x * scale
    for k in [1.0, 2.0]:
        x = x + k
    return x


def conditional_expression(x):
    return x * 2.0 if x > 0 and x < 10 or x < -100 else -x


def not_and_len(v):
    if not len(v) > 3:
        return sf.reduce_sum(v)
    return sf.reduce_max(v)


def tensor_array_loop(n):
    ta = sf.TensorArray(sf.float32, size=0, dynamic_size=True)
    for i in sf.range(n):
        if i % 2 == 0:
            ta = ta.write(i, sf.cast(i * i, sf.float32))
        else:
            ta = ta.write(i, -1.0)
    return ta.stack()


CASES = [  # fn, input_signature, inputs
    (sign_chain, [F32], [np.float32(v) for v in (3.0, -4.0, 0.5, 1.0)]),
    (early_returns, [F32], [np.float32(v) for v in (7.0, 2.0, -3.0, 0.0)]),
    (while_sum, [V32], [np.arange(n, dtype=np.float32) for n in (0, 1, 5)]),
    (short_circuit_while, [V32], [np.array(v, np.float32) for v in ([], [1.0, 2.0], [1.0, 5.0, 1.0], [0.0] * 4)]),
    (for_break_continue, [V32], [np.array(v, np.float32) for v in ([], [1.0, 3.0, 9.0, 4.0], [2.0, 0.5, 5.0])]),
    (for_range_else, [I32], [np.int32(v) for v in (0, 3, 10)]),
    (nested_loops, [I32], [np.int32(v) for v in (0, 3, 7)]),
    (calls_a_helper, [F32], [np.float32(v) for v in (2.0, -3.0)]),
    (python_values_stay_python, [F32], [np.float32(v) for v in (1.0, -2.0)]),
    (conditional_expression, [F32], [np.float32(v) for v in (5.0, 20.0, -200.0, -5.0)]),
    (not_and_len, [V32], [np.array(v, np.float32) for v in ([1.0, 2.0], [1.0, 9.0, 2.0, 3.0])]),
    (tensor_array_loop, [I32], [np.int32(v) for v in (1, 4)]),
]


def _np(out):
    if isinstance(out, tuple):
        return tuple(_np(o) for o in out)
    return np.asarray(out.numpy() if isinstance(out, sf.Tensor) else out)


@pytest.mark.parametrize("fn, signature, inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_traced_once_equals_python(fn, signature, inputs):
    traced = sf.function(fn, input_signature=signature)
    for x in inputs:
        want = _np(fn(sf.constant(x)))  # eagerly: plain Python on values
        got = _np(traced(x))
        if isinstance(want, tuple):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-6)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert traced.trace_count == 1


def test_tensor_loops_and_conds_are_graph_constructs():
    ops = {n.op for n in sf.function(nested_loops).get_concrete_function(I32).graph_def.nodes}
    assert {"Enter", "Exit", "NextIteration", "Switch", "Merge"} <= ops
    ops = {n.op for n in sf.function(python_values_stay_python).get_concrete_function(F32).graph_def.nodes}
    assert not ops & {"Switch", "Merge", "Enter"}


def test_gradient_through_converted_control_flow():
    def f(x):
        y = x
        i = 0
        while i < 3:
            if y > 2.0:
                y = y * 0.5
            else:
                y = y * y
            i += 1
        return y

    traced = sf.function(f, input_signature=[F32])
    for x0 in (1.5, 3.0, 0.7):
        x = sf.constant(np.float32(x0))
        with sf.GradientTape() as tape:
            tape.watch(x)
            y = traced(x)
        g = float(tape.gradient(y, x).numpy())
        eps = 1e-3
        fd = (float(f(sf.constant(np.float32(x0 + eps))).numpy()) - float(f(sf.constant(np.float32(x0 - eps))).numpy())) / (2 * eps)
        assert g == pytest.approx(fd, rel=1e-2)


def test_effects_only_in_the_taken_branch():
    v = sf.Variable(0.0)

    @sf.function(input_signature=[F32])
    def bump(x):
        if x > 0:
            v.assign_add(x)
        else:
            v.assign_sub(1.0)
        return v.read_value()

    assert float(bump(np.float32(2.0)).numpy()) == 2.0
    assert float(bump(np.float32(-5.0)).numpy()) == 1.0


def test_methods_closures_and_super():
    class Base(sf.Module):
        def scale(self, x):
            return x * 2.0

    class Model(Base):
        def __init__(self):
            super().__init__()
            self.limit = 4.0

        @sf.function(input_signature=[F32])
        def __call__(self, x):
            y = super().scale(x)
            if y > self.limit:
                y = self.limit + 0.0 * y
            return y

    m = Model()
    assert float(m(np.float32(1.0)).numpy()) == 2.0
    assert float(m(np.float32(9.0)).numpy()) == 4.0

    offset = sf.constant(10.0)

    @sf.function(input_signature=[F32])
    def closure(x):
        if x > 0:
            x = x + offset
        return x

    assert float(closure(np.float32(1.0)).numpy()) == 11.0


def test_a_variable_set_in_one_branch_is_an_error_when_used():
    def f(x):
        if x > 0:
            y = x
        return y  # noqa: F821 (undefined on the other path)

    with pytest.raises(GraphError, match="variable 'y' has no value here: it is assigned in only one branch"):
        sf.function(f, input_signature=[F32]).get_concrete_function()

    def g(x):
        if x > 0:
            tmp = x * 2.0  # only used inside: fine
            x = tmp
        return x

    assert float(sf.function(g, input_signature=[F32])(np.float32(3.0)).numpy()) == 6.0


def test_mismatched_branch_values_are_one_line_errors():
    def f(x):
        y = None
        if x > 0:
            y = x
        return y

    with pytest.raises(GraphError, match="variable 'y' is a tensor in one branch .* NoneType in the other"):
        sf.function(f, input_signature=[F32]).get_concrete_function()


def test_autograph_false_keeps_python_semantics():
    with pytest.raises(GraphError, match="as a Python bool"):
        sf.function(sign_chain, input_signature=[F32], autograph=False).get_concrete_function()


def test_print_of_a_tensor_runs_when_the_function_runs(capfd):
    @sf.function(input_signature=[F32])
    def f(x):
        if x > 0:
            print("positive", x)
        return x

    f(np.float32(2.5))
    f(np.float32(-1.0))
    out = capfd.readouterr()
    text = out.out + out.err
    assert text.count("positive") == 1 and "2.5" in text


def enumerate_and_zip(a, b):
    s = 0.0
    for i, x in enumerate(a):
        s += sf.cast(i, sf.float32) * x
    for x, y in zip(a, b):
        s += x * y
    return s


def closure_state(x):
    y = x

    def inner():
        nonlocal y
        if y > 2.0:
            y = y * 10.0

    inner()
    return y


def test_enumerate_zip_and_nonlocal_over_unknown_lengths():
    f = sf.function(enumerate_and_zip, input_signature=[V32, V32])
    for n in (0, 3, 5):
        a, b = np.arange(n, dtype=np.float32), np.linspace(1, 2, n).astype(np.float32)
        np.testing.assert_allclose(_np(f(a, b)), _np(enumerate_and_zip(sf.constant(a), sf.constant(b))), rtol=1e-6)
    g = sf.function(closure_state, input_signature=[F32])
    assert float(g(np.float32(3.0)).numpy()) == 30.0 and float(g(np.float32(1.0)).numpy()) == 1.0


def test_a_python_list_filled_in_a_tensor_loop_is_a_one_line_error():
    def f(n):
        out = []
        for i in sf.range(n):
            out.append(i)
        return sf.stack(out)

    with pytest.raises(GraphError, match="made inside while loop .* collect values with sf.TensorArray"):
        sf.function(f, input_signature=[I32]).get_concrete_function()


def test_a_keras_layer_branching_on_a_tensor_trains_with_fit():
    class Gate(sf.keras.layers.Layer):
        def call(self, x):
            if sf.reduce_mean(x) > 0:
                return x * 2.0
            return x - 1.0

    class Net(sf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = sf.keras.layers.Dense(3)
            self.gate = Gate()

        def call(self, x, training=False):
            y = self.gate(self.dense(x))
            for i in sf.range(2):
                y = y + sf.cast(i, sf.float32)
            return y

    m = Net()
    x = np.ones((4, 2), np.float32)
    np.testing.assert_allclose(sf.function(lambda t: m(t))(x).numpy(), m(x).numpy(), rtol=1e-6)
    m.compile(optimizer="sgd", loss="mse")
    history = m.fit(x, np.zeros((4, 3), np.float32), epochs=2, verbose=0).history["loss"]
    assert len(history) == 2 and np.isfinite(history).all()


def test_a_return_inside_a_tensor_loop_is_a_one_line_error_and_python_loops_keep_it():
    def first_positive(v):
        for x in v:
            if x > 0:
                return x
        return -1.0

    with pytest.raises(GraphError, match="returns from inside its body.* assign the result to a variable and `break`"):
        sf.function(first_positive, input_signature=[V32]).get_concrete_function()

    def python_list(x):
        for k in [1.0, 2.0, 3.0]:
            if k > 1.5:
                return x * k
        return x

    assert float(sf.function(python_list, input_signature=[F32])(np.float32(2.0)).numpy()) == 4.0


def test_attributes_assigned_in_tensor_branches_and_loops_are_state():
    """``self.x = ...`` in a branch or loop on a tensor: a cond output / loop variable, as TF's
    composite names (it leaked the branch's tensor: 'produced no value (it is dead)')."""
    class Tracker(sf.Module):
        def __init__(self):
            super().__init__()
            self.last = 0.0

        @sf.function(input_signature=[F32])
        def f(self, x):
            if x > 0:
                self.last = x * 2.0
            else:
                self.last = x - 1.0
            i = 0
            while i < 3:
                self.last = self.last + 1.0
                i += 1
            return self.last

    t = Tracker()
    assert float(t.f(np.float32(3.0)).numpy()) == 9.0
    assert float(t.f(np.float32(-2.0)).numpy()) == 0.0

    class OneBranch:
        @sf.function(input_signature=[F32])
        def f(self, x):
            if x > 0:
                self.tmp = x
            return self.tmp

    with pytest.raises((GraphError, AttributeError)):
        OneBranch().f(np.float32(1.0))
