"""GradientTape beyond first derivatives of leaves: nested tapes (second derivatives, eagerly and
inside sf.function, with variables), gradients with respect to intermediate tensors, jacobian and
unconnected_gradients."""

from __future__ import annotations

import numpy as np

import specflow as sf


def test_nested_eager_tapes_give_second_derivatives():
    x = sf.constant(np.array([0.5, -1.0, 2.0]))
    with sf.GradientTape() as outer:
        outer.watch(x)
        with sf.GradientTape() as inner:
            inner.watch(x)
            y = sf.ops.sum(x * x * x + sf.ops.tanh(x))
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    xv = x.numpy()
    t = np.tanh(xv)
    np.testing.assert_allclose(dy.numpy(), 3 * xv ** 2 + 1 - t ** 2, rtol=1e-12)
    np.testing.assert_allclose(d2.numpy(), 6 * xv - 2 * t * (1 - t ** 2), rtol=1e-12)


def test_nested_tapes_through_a_variable_match_finite_differences():
    # A gradient penalty: d/dw of |d loss/dx|^2, as WGAN-GP and Hessian-vector products write it.
    rng = np.random.default_rng(0)
    w = sf.Variable(rng.normal(size=(3, 2)))
    x = sf.constant(rng.normal(size=(4, 3)))

    def penalty():
        with sf.GradientTape() as inner:
            inner.watch(x)
            loss = sf.ops.sum(sf.ops.square(sf.ops.tanh(sf.ops.mat_mul(x, w))))
        g = inner.gradient(loss, x)
        return sf.ops.sum(g * g)

    with sf.GradientTape() as outer:
        p = penalty()
    got = outer.gradient(p, w)
    assert got is not None
    base = w.numpy()
    want = np.zeros_like(base)
    eps = 1e-6
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            v = base.copy()
            v[idx] += sign * eps
            w.assign(v)
            want[idx] += sign * float(penalty()) / (2 * eps)
    w.assign(base)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-9)


def test_nested_tapes_inside_a_function_equal_the_eager_ones():
    @sf.function
    def second(x):
        with sf.GradientTape() as outer:
            outer.watch(x)
            with sf.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            dy = inner.gradient(y, x)
        return dy, outer.gradient(dy, x)

    dy, d2 = second(sf.constant(3.0))
    assert float(dy) == 27.0 and float(d2) == 18.0


def test_gradient_with_respect_to_an_intermediate_tensor():
    x = sf.constant(np.array([1.0, 2.0]))
    w = sf.Variable(np.array([3.0, 4.0]))
    with sf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = sf.ops.sum(y)
        u = w * 2.0
        q = sf.ops.sum(u * u)
    np.testing.assert_array_equal(tape.gradient(z, y).numpy(), [1.0, 1.0])
    gu, gw = tape.gradient(q, [u, w])
    np.testing.assert_array_equal(gu.numpy(), [12.0, 16.0])
    np.testing.assert_array_equal(gw.numpy(), [24.0, 32.0])


def test_jacobian_eagerly_and_in_a_function():
    rng = np.random.default_rng(1)
    w = sf.Variable(rng.normal(size=(3, 2)) * 0.3)
    x = sf.constant(rng.normal(size=(2, 3)))
    unused = sf.Variable(1.0)

    def model(x):
        return sf.ops.tanh(sf.ops.mat_mul(x, w))

    xv, wv = x.numpy(), w.numpy()
    d = 1 - np.tanh(xv @ wv) ** 2  # [2, 2]
    want_x = np.einsum("ia,ik,ba->iakb", d, np.eye(2), wv)  # dy[i,a]/dx[k,b]
    want_w = np.einsum("ia,ib,ac->iabc", d, xv, np.eye(2))  # dy[i,a]/dw[b,c]
    with sf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = model(x)
    jx, jw, ju = tape.jacobian(y, [x, w, unused])
    np.testing.assert_allclose(jx.numpy(), want_x, rtol=1e-12)
    np.testing.assert_allclose(jw.numpy(), want_w, rtol=1e-12)
    assert ju is None
    np.testing.assert_array_equal(tape.jacobian(y, unused, unconnected_gradients="zero").numpy(), np.zeros((2, 2)))
    assert float(tape.gradient(y, unused, unconnected_gradients="zero")) == 0.0

    @sf.function
    def traced(x):
        with sf.GradientTape() as tape:
            tape.watch(x)
            y = model(x)
        return tape.jacobian(y, [x, w])

    fx, fw = traced(xv)
    np.testing.assert_allclose(fx.numpy(), want_x, rtol=1e-12)
    np.testing.assert_allclose(fw.numpy(), want_w, rtol=1e-12)
