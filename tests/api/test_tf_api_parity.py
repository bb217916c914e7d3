"""The Python API's own rules, as TensorFlow 2.21's (scripts/tf_api_sweep.py found each one): the
expected values are numpy's or small constants copied from TF's output, so no TF is needed."""

import numpy as np
import pytest

import specflow as sf
from specflow.errors import SpecflowError


def _eq(t, want, dtype):
    """dtype exactly; values exactly (ints, bools, strings) or to float32's precision."""
    assert t.dtype.name == dtype
    got = np.asarray(t)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


# --- operators ------------------------------------------------------------------------------------

def test_bitwise_operators_on_integers_logical_on_bools():
    i = sf.constant([1, 2, 3])
    _eq(i & 6, [0, 2, 2], "int32")
    _eq(i | 4, [5, 6, 7], "int32")
    _eq(3 ^ sf.constant([1, 2]), [2, 1], "int32")
    _eq(~sf.constant([1, 2], sf.uint8), [254, 253], "uint8")
    _eq(~sf.constant([5, -1], sf.int64), [-6, 0], "int64")
    b = sf.constant([True, False])
    _eq(True & b, [True, False], "bool")
    _eq(False | b, [True, False], "bool")
    _eq(b ^ True, [False, True], "bool")
    _eq(b * True, [True, False], "bool")  # TF: a bool tensor's * is logical and
    assert sf.function(lambda x: x & 6)(sf.constant([7, 8])).numpy().tolist() == [6, 0]


def test_literals_follow_the_first_literal_and_integral_floats_compare():
    _eq(sf.math.maximum(2.5, 3), 3.0, "float32")
    _eq(sf.math.add(3.0, 2), 5.0, "float32")
    _eq(sf.math.equal(2.5, 3), False, "bool")
    with pytest.raises(SpecflowError, match="non-integer value 3.5"):
        sf.math.maximum(2, 3.5)
    # an int tensor against integral floats compares elementwise (was a plain False)
    _eq(sf.constant([1, 2, 3]) == np.array([1.0, 2, 3]), [True, True, True], "bool")
    _eq(sf.constant([1, 2]) < np.array([2.0, 2.0]), [True, False], "bool")


def test_string_tensors_concatenate_and_compare():
    a = sf.constant([b"a", b"b"])
    _eq(a + "x", [b"ax", b"bx"], "string")
    _eq("x" + a, [b"xa", b"xb"], "string")
    _eq(a == "a", [True, False], "bool")
    _eq(a != b"a", [False, True], "bool")


# --- constructors and conversion ------------------------------------------------------------------

def test_constant_dtypes_and_refusals():
    _eq(sf.constant(1, shape=[2, 3]), np.ones((2, 3)), "int32")  # was int64
    _eq(sf.constant(1.5, shape=[2]), [1.5, 1.5], "float32")
    with pytest.raises(SpecflowError, match="NoneType"):
        sf.constant(None)
    with pytest.raises(SpecflowError, match="NoneType"):
        sf.constant([1.0, None])
    with pytest.raises(SpecflowError, match="must be bool"):
        sf.constant(2, sf.bool)
    with pytest.raises(TypeError, match="not float64"):
        sf.constant(sf.constant(1.0), sf.float64)  # was float32, the dtype ignored
    _eq(sf.convert_to_tensor(1, dtype_hint=sf.float32), 1.0, "float32")
    _eq(sf.convert_to_tensor(1.5, dtype_hint=sf.int32), 1.5, "float32")  # the hint does not fit: ignored


def test_zeros_ones_fill_one_hot():
    _eq(sf.zeros(3), [0.0, 0.0, 0.0], "float32")
    _eq(sf.ones(2, sf.int8), [1, 1], "int8")
    _eq(sf.fill(3, 7), [7, 7, 7], "int32")
    _eq(sf.zeros([2], sf.string), [b"", b""], "string")  # was int 0s in a string tensor
    with pytest.raises(TypeError, match="string"):
        sf.ones([2], sf.string)
    _eq(sf.one_hot([0, 2], 3, on_value=5, off_value=-1), [[5, -1, -1], [-1, -1, 5]], "int32")
    _eq(sf.one_hot([1], 2, on_value=True, off_value=False), [[False, True]], "bool")
    _eq(sf.one_hot([1], 2, off_value=2.0), [[2.0, 1.0]], "float32")
    assert sf.as_dtype(float) == sf.float32 and sf.dtypes.as_dtype(type_value="int8") == sf.int8


# --- functions ------------------------------------------------------------------------------------

def test_math_functions_rules():
    _eq(sf.math.divide_no_nan([3, 4], [0, 2]), [0.0, 2.0], "float64")
    _eq(sf.math.divide_no_nan(np.array([3], np.int8), np.array([2], np.int8)), [1.5], "float32")
    _eq(sf.math.round(sf.constant([3, 4], sf.uint8)), [3, 4], "uint8")
    _eq(sf.math.unsorted_segment_mean(sf.constant([3, 4], sf.int8), [0, 0], 1), [3.5], "float32")
    _eq(sf.math.unsorted_segment_mean(sf.constant([3, 4]), [0, 0], 1), [3.5], "float64")
    z = np.array([3 + 4j, 1j])
    np.testing.assert_allclose(sf.math.l2_normalize(z).numpy(), z / np.linalg.norm(z))
    with pytest.raises(SpecflowError, match="non-integer"):
        sf.math.scalar_mul(2.5, sf.constant([2, 4]))  # was 2 * x, the scalar truncated
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        sf.math.softmax(np.zeros((2, 3), np.float32), 2)
    with pytest.raises(TypeError, match="numeric"):
        sf.math.conj(sf.constant([True]))
    _eq(sf.math.softplus(features=sf.constant([0.0])), [np.log(2.0)], "float32")
    _eq(sf.nn.sigmoid(x=sf.constant([0.0])), [0.5], "float32")
    _eq(sf.nn.tanh(x=sf.constant([0.0])), [0.0], "float32")
    idx = sf.math.top_k([1, 3, 2], 2, index_type=sf.int64).indices
    _eq(idx, [1, 2], "int64")


def test_array_functions_rules():
    x = np.arange(24.0).reshape(2, 3, 4)
    _eq(sf.transpose(x, [-1, 0, 1]), np.transpose(x, (2, 0, 1)), "float64")
    c = np.array([[1 + 2j, 3j]])
    _eq(sf.transpose(c, conjugate=True), c.conj().T, "complex128")
    _eq(sf.matmul([[1, 2]], [[3], [4]]), [[11]], "int32")  # a list as a: was an AttributeError
    i8 = np.array([[100, 100]], np.int8)
    _eq(sf.matmul(i8, i8.T, output_type=sf.int32), [[20000]], "int32")
    parts = sf.split(np.zeros((2, 4)), sf.constant([1, 3]), axis=1, num=2)
    assert [p.shape.as_list() for p in parts] == [[2, 1], [2, 3]]
    _eq(sf.clip_by_value(sf.constant([1.0, 5.0]), [2.0, 0.0], 3.0), [2.0, 3.0], "float32")
    with pytest.raises(SpecflowError, match="non-integer"):
        sf.pad(sf.constant([[1]]), [[1, 0], [0, 0]], constant_values=0.5)
    with pytest.raises(ValueError, match="does not match"):
        sf.boolean_mask(np.zeros((2, 3)), [True])
    with pytest.raises(ValueError, match="out of range"):
        sf.unstack(sf.constant(1.0))
    clipped, norm = sf.clip_by_global_norm([sf.constant([3.0, 4.0])], 1.0, use_norm=sf.constant(10.0))
    _eq(norm, 10.0, "float32")
    _eq(clipped[0], [0.3, 0.4], "float32")
    v = np.array([-300.7, 1.5, 3e39, np.inf])
    out = sf.saturate_cast(v, sf.bfloat16).numpy().astype(np.float64)
    assert out[0] == -300.0 and out[1] == 1.5 and out[2] == out[3] == 3.3895313892515355e38


def test_image_transpose_swaps_height_and_width():
    img = np.arange(24.0).reshape(2, 4, 3)
    _eq(sf.image.transpose(img), np.transpose(img, (1, 0, 2)), "float64")  # was every axis reversed
    batch = np.arange(48.0).reshape(2, 2, 4, 3)
    _eq(sf.image.transpose(batch), np.transpose(batch, (0, 2, 1, 3)), "float64")
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        sf.image.adjust_hue(np.zeros((2, 2, 3), np.float32), 1.5)


def test_pools_by_rank_and_keyword_names():
    x3 = np.arange(14.0, dtype=np.float32).reshape(1, 7, 2)
    _eq(sf.nn.max_pool(x3, 2, 2, "VALID"), x3[:, 1:7:2], "float32")
    x5 = np.arange(16.0, dtype=np.float32).reshape(1, 2, 2, 2, 2)
    _eq(sf.nn.avg_pool(x5, 2, 2, "VALID"), x5.mean(axis=(1, 2, 3), keepdims=True)[:, :, :, :, :], "float32")
    _eq(sf.linalg.tensor_diag(diagonal=[1, 2]), [[1, 0], [0, 2]], "int32")
    _eq(sf.debugging.check_numerics(tensor=[1.0], message="m"), [1.0], "float32")
    with pytest.raises(SpecflowError, match="msg"):  # (x, y, summarize, message), TF's order
        sf.debugging.assert_none_equal([1, 2], [1, 4], 3, "msg")


def test_get_shape_and_variable_reads():
    assert sf.constant(np.zeros((2, 3))).get_shape().as_list() == [2, 3]
    v = sf.Variable(np.arange(6.0).reshape(2, 3))
    assert v.get_shape().as_list() == [2, 3]
    _eq(v.sparse_read([1, 0]), [[3, 4, 5], [0, 1, 2]], "float64")
    _eq(v.gather_nd([[1, 2]]), [5.0], "float64")
    with sf.GradientTape() as tape:
        y = sf.reduce_sum(v.sparse_read([1]))
    g = tape.gradient(y, v)
    _eq(g.indices, [1], "int32")
    _eq(sf.dtypes.cast([1.7], sf.int32), [1], "int32")


def test_followups_while_loop_keywords_float_dtype_int32_bounds_and_tensor_paddings():
    out = sf.while_loop(cond=lambda i: i < 3, body=lambda i: (i + 1,), loop_vars=(sf.constant(0),))
    assert int(out[0].numpy()) == 3
    assert sf.zeros([2], float).dtype == sf.float32  # TF: Python's float is float32
    assert sf.constant(-2**31).dtype == sf.int32 and sf.constant(2**31).dtype == sf.int64
    padded = sf.function(lambda t: sf.pad(t, sf.stack([[0, 0], sf.stack([sf.shape(t)[0], 0])])),
                         input_signature=[sf.TensorSpec([None, 3])])(np.ones((2, 3), np.float32))  # fmt: skip
    np.testing.assert_array_equal(padded.numpy(), np.pad(np.ones((2, 3)), [[0, 0], [2, 0]]))


def test_sf_load_of_a_spec_refuses_file_writing_nodes(tmp_path):
    spec = tmp_path / "save.yaml"
    spec.write_text(
        "specflow: 1\nname: s\ninputs:\n  x: {dtype: float32, shape: [2]}\nnodes:\n"
        f"  save: {{op: SaveV2, inputs: [{{op: Const, value: '{tmp_path / 'elsewhere' / 'ckpt'}', dtype: string}}, "
        "{op: Const, value: [x], dtype: string}, {op: Const, value: [''], dtype: string}, x]}\n"
        "  y: {op: Identity, inputs: [x], after: [save]}\n"
        "signatures:\n  serving_default: {inputs: {x: x}, outputs: {y: y}}\n"
    )
    with pytest.raises(sf.SpecflowError, match="SaveV2 would write or delete files"):
        sf.load(spec)
    with pytest.raises(sf.SpecflowError, match="SaveV2 would write or delete files"):
        sf.wrap_function(spec, feeds=["x"], fetches=["y"])
    assert not (tmp_path / "elsewhere").exists()
