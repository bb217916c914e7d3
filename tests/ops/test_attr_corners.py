"""Attr and zero-size corners scripts/tf_attr_sweep.py found differing from TensorFlow, checked
against numpy references (no TensorFlow needed)."""

import ml_dtypes
import numpy as np
import pytest

import specflow as sf

BF16 = ml_dtypes.bfloat16


def _grad(fn, x, seed):
    x = sf.constant(x)
    with sf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return np.asarray(tape.gradient(y, x, output_gradients=sf.constant(seed)).numpy())


def _bilinear_matrix(n_in, n_out):
    """[out, in] weights of TF's legacy bilinear resize (no align_corners, no half pixels)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = o * n_in / n_out
        lo = int(np.floor(src))
        hi = min(lo + 1, n_in - 1)
        m[o, lo] += 1 - (src - lo)
        m[o, hi] += src - lo
    return m


@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor"])
def test_resize_gradient_in_bfloat16(op):
    # TF's ResizeBilinearGrad / ResizeNearestNeighborGrad take bfloat16; ours refused it.
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3, 1).astype(BF16)
    seed_f = (np.arange(24) % 5 - 2).astype(np.float32).reshape(1, 4, 6, 1) * 0.5
    seed = seed_f.astype(BF16) if op == "ResizeNearestNeighbor" else seed_f
    g = _grad(lambda t: getattr(sf.ops, op)(t, np.array([4, 6], np.int32)), x, seed)
    if op == "ResizeBilinear":
        rows, cols = _bilinear_matrix(2, 4), _bilinear_matrix(3, 6)
    else:  # nearest: source index floor(o * in / out)
        rows = np.eye(2)[np.floor(np.arange(4) * 2 / 4).astype(int)]
        cols = np.eye(3)[np.floor(np.arange(6) * 3 / 6).astype(int)]
    want = rows.T @ seed_f[0, :, :, 0] @ cols
    assert g.dtype == BF16 and g.shape == x.shape
    np.testing.assert_allclose(g[0, :, :, 0].astype(np.float32), want, rtol=1e-2)


def test_one_hot_int8_indices():
    idx = np.array([[0, 2], [-1, 3]], np.int8)
    out = sf.ops.OneHot(idx, 3, np.float32(1.0), np.float32(0.0)).numpy()
    np.testing.assert_array_equal(out, (idx[..., None] == np.arange(3)).astype(np.float32))


@pytest.mark.parametrize("x_shape,f_shape", [((0, 4, 4, 2), (2, 2, 2, 3)), ((1, 4, 4, 2), (2, 2, 2, 0))])
def test_conv2d_gradients_of_empty_products(x_shape, f_shape):
    # An empty batch (filter gradient) or no out_channels (input gradient): zeros, as TF; ours
    # failed to reshape or divided by zero.
    rng = np.random.default_rng(0)
    x, f = sf.constant(rng.standard_normal(x_shape)), sf.constant(rng.standard_normal(f_shape))
    x32, f32 = sf.cast(x, sf.float32), sf.cast(f, sf.float32)
    with sf.GradientTape(persistent=True) as tape:
        tape.watch([x32, f32])
        y = sf.ops.Conv2D(x32, f32, strides=[1, 1, 1, 1], padding="SAME")
    gx, gf = tape.gradient(y, [x32, f32], output_gradients=sf.ones_like(y))
    np.testing.assert_array_equal(gx.numpy(), np.zeros(x_shape, np.float32))
    np.testing.assert_array_equal(gf.numpy(), np.zeros(f_shape, np.float32))


def test_batched_gather_gradient_of_an_empty_axis():
    # batch_dims 1 gathering along an empty axis: the gradient is all zeros of params' shape
    # (ours built a Range with step 0).
    p = np.ones((2, 0, 3))
    idx = np.zeros((2, 0), np.int32)
    g = _grad(lambda t: sf.ops.GatherV2(t, idx, np.int32(1), batch_dims=1), p, np.zeros((2, 0, 3)))
    assert g.shape == (2, 0, 3)
    # and a non-empty batched gather still adds each slice back where it came from
    p = np.arange(24.0).reshape(2, 4, 3)
    idx = np.array([[3, 3, 0], [1, 2, 1]], np.int32)
    seed = np.arange(18.0).reshape(2, 3, 3)
    g = _grad(lambda t: sf.ops.GatherV2(t, idx, np.int32(1), batch_dims=1), p, seed)
    want = np.zeros_like(p)
    for b in range(2):
        np.add.at(want[b], idx[b], seed[b])
    np.testing.assert_array_equal(g, want)


def _prod_others(x, axes):
    """d prod(x over axes) / dx: the product of the other elements of each group (zeros included)."""
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        sel = tuple(slice(None) if a in axes else i for a, i in enumerate(idx))
        group = x[sel].ravel()
        pos = np.ravel_multi_index(tuple(idx[a] for a in sorted(axes)), [x.shape[a] for a in sorted(axes)])
        out[idx] = np.prod(np.delete(group, pos))
    return out


@pytest.mark.parametrize("axes,keep", [([-1], False), ([0, 2], True), ([1], True)])
def test_prod_gradient_with_axes_fed_at_run_time(axes, keep):
    # tf.reduce_prod(x, axis) with axis a tensor: TF's gradient builds the permutation at run
    # time; ours refused ("needs constant axes").
    x = np.array([[[1.0, 2.0, 0.0], [3.0, 0.5, 2.0]], [[0.0, 0.0, 4.0], [1.5, -2.0, 1.0]]])

    @sf.function(input_signature=[sf.TensorSpec([None, None, None], sf.float64), sf.TensorSpec([None], sf.int32)])
    def f(t, a):
        y = sf.ops.Prod(t, a, keep_dims=keep)
        return sf.gradients([y], [t])[0]

    g = f(x, np.array(axes, np.int32)).numpy()
    np.testing.assert_allclose(g, _prod_others(x, [a % 3 for a in axes]))


@pytest.mark.parametrize("axis,batch_dims", [(1, 0), (-1, 0), (2, 1), (1, 1), (0, 0)])
def test_gather_gradient_with_axis_fed_at_run_time(axis, batch_dims):
    # tf.gather(x, ids, axis=a) with a a tensor: TF differentiates it; ours refused ("needs a
    # constant axis").
    rng = np.random.default_rng(1)
    p = rng.standard_normal((2, 3, 4))
    ax = axis % 3
    idx = rng.integers(0, p.shape[ax], (2, 2, 3)[:batch_dims] + (2, 3)).astype(np.int32)

    @sf.function(input_signature=[sf.TensorSpec([None, None, None], sf.float64),
                                  sf.TensorSpec([None] * idx.ndim, sf.int32), sf.TensorSpec([], sf.int32)])
    def f(t, i, a):
        y = sf.ops.GatherV2(t, i, a, batch_dims=batch_dims)
        return y, sf.gradients([y], [t], grad_ys=[sf.reshape(sf.cast(sf.range(sf.size(y)), sf.float64), sf.shape(y))])[0]

    y, g = (v.numpy() for v in f(p, idx, np.int32(axis)))
    seed = np.arange(y.size, dtype=np.float64).reshape(y.shape)
    want = np.zeros_like(p)
    # numpy reference: every gathered element's seed added back at its source
    k = idx.ndim - batch_dims  # y: params' dims before axis, indices' own dims, params' dims after
    for out_idx in np.ndindex(y.shape):
        src = (*out_idx[:ax], idx[out_idx[:batch_dims] + out_idx[ax:ax + k]], *out_idx[ax + k:])
        want[src] += seed[out_idx]
        assert y[out_idx] == p[src]
    np.testing.assert_allclose(g, want)


def test_conv2d_of_no_in_channels_is_a_one_line_error():
    # TF: "filter depth must be strictly positive"; ours failed inside numpy's reshape.
    with pytest.raises(sf.errors.OpError, match="in_channels must be positive"):
        sf.ops.Conv2D(np.ones((1, 4, 4, 0), np.float32), np.ones((2, 2, 0, 3), np.float32),
                      strides=[1, 1, 1, 1], padding="VALID")
