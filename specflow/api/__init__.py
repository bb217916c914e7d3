"""The Python face ("functions, not sessions"): eager ops, sf.function, sf.Variable, sf.Module,
sf.GradientTape, sf.cond/sf.while_loop, sf.load/sf.save, on the existing graphs, kernels and
runtime. ``specflow/__init__.py`` exports these names lazily (``import specflow`` stays cheap)."""

# name -> (module, attribute)
EXPORTS = {
    "Tensor": ("specflow.api.tensor", "Tensor"),
    "Variable": ("specflow.api.variables", "Variable"),
    "function": ("specflow.api.function", "function"),
    "Function": ("specflow.api.function", "Function"),
    "ConcreteFunction": ("specflow.api.function", "ConcreteFunction"),
    "TensorSpec": ("specflow.api.function", "TensorSpec"),
    "RetracingWarning": ("specflow.api.function", "RetracingWarning"),
    "Module": ("specflow.api.module", "Module"),
    "GradientTape": ("specflow.api.tape", "GradientTape"),
    "cond": ("specflow.api.control_flow", "cond"),
    "while_loop": ("specflow.api.control_flow", "while_loop"),
    "device": ("specflow.api.context", "device"),
    "config": ("specflow.api.context", "config"),
    "constant": ("specflow.api.op_functions", "constant"),
    "convert_to_tensor": ("specflow.api.op_functions", "convert_to_tensor"),
    "wrap_function": ("specflow.api.wrap", "wrap_function"),
    "TensorArray": ("specflow.api.tensor_array", "TensorArray"),
    "IndexedSlices": ("specflow.api.indexed_slices", "IndexedSlices"),
    "load": ("specflow.api.saved", "load"),
    "save": ("specflow.api.saved", "save"),
    # namespaces (attr None: the module itself)
    "nn": ("specflow.api.nn", None),
    "optimizers": ("specflow.api.optimizers", None),
    "keras": ("specflow.api.keras", None),
    "saved_model": ("specflow.api.saved_model", None),
    "data": ("specflow.api.data", None),
    "image": ("specflow.api.image", None),
    "strings": ("specflow.api.strings", None),
    "signal": ("specflow.api.signal", None),
    "bitwise": ("specflow.api.bitwise", None),
    "lookup": ("specflow.api.lookup", None),
    "sparse": ("specflow.api.sparse", None),
    "io": ("specflow.io", None),  # the package: its __getattr__ gives api/tf_io.py's tf.io names
    "SparseTensor": ("specflow.api.sparse", "SparseTensor"),
    "math": ("specflow.api.tf_names", "math"),
    "random": ("specflow.api.tf_names", "random"),
}

# TensorFlow's first-week functions at the top level (sf.matmul, sf.reduce_mean, sf.zeros, ...):
# api/tf_names.py (its NAMES; a test keeps the two lists equal).
TF_NAMES = (
    "abs add argmax argmin broadcast_to cast ceil clip_by_global_norm clip_by_value concat cos cumsum divide "
    "divide_no_nan einsum equal erf exp expand_dims expm1 fill floor floordiv floormod gather greater "
    "greater_equal identity is_finite is_nan less less_equal log log1p logical_and logical_not logical_or "
    "matmul maximum minimum multiply negative not_equal one_hot ones ones_like pad pow range rank reciprocal "
    "reduce_all reduce_any reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum reshape reverse "
    "round rsqrt sequence_mask shape sigmoid sign sin size softplus split sqrt square squared_difference "
    "squeeze stack stop_gradient subtract tanh tile top_k transpose unstack where zeros zeros_like"
).split()
EXPORTS.update({n: ("specflow.api.tf_names", n) for n in TF_NAMES})

# More of TensorFlow's top level: array/indexing names (api/tf_array_names.py), math names
# (api/tf_math_names.py) and linalg names (api/linalg.py); each module's NAMES, kept equal by a test.
TF_ARRAY_NAMES = (
    "argsort batch_to_space bitcast boolean_mask broadcast_dynamic_shape broadcast_static_shape clip_by_norm "
    "complex dynamic_partition dynamic_stitch gather_nd histogram_fixed_width identity_n linspace meshgrid "
    "parallel_stack repeat reverse_sequence roll saturate_cast scatter_nd searchsorted shape_n slice sort "
    "space_to_batch space_to_batch_nd strided_slice tensor_scatter_nd_add tensor_scatter_nd_max "
    "tensor_scatter_nd_min tensor_scatter_nd_sub tensor_scatter_nd_update unique unique_with_counts unravel_index"
).split()
TF_MATH_NAMES = (
    "acos acosh add_n asin asinh atan atan2 atanh cosh realdiv scalar_mul sinh tan truediv truncatediv truncatemod"
).split()
TF_LINALG_NAMES = "eig eigvals eye matrix_square_root norm tensordot".split()
EXPORTS.update({n: ("specflow.api.tf_array_names", n) for n in TF_ARRAY_NAMES})
EXPORTS.update({n: ("specflow.api.tf_math_names", n) for n in TF_MATH_NAMES})
EXPORTS.update({n: ("specflow.api.linalg", n) for n in TF_LINALG_NAMES})
EXPORTS["linalg"] = ("specflow.api.linalg", None)

# Functional control flow and its helpers (sf.map_fn, sf.scan, sf.switch_case, sf.control_dependencies,
# ...: api/tf_control_names.py), sf.custom_gradient, and sf.debugging's checks (TensorFlow keeps
# Assert and four asserts at its top level too).
CONTROL_NAMES = (
    "map_fn vectorized_map scan foldl foldr switch_case case control_dependencies group no_op gradients "
    "init_scope executing_eagerly is_tensor get_static_value ensure_shape print"
).split()
EXPORTS.update({n: ("specflow.api.tf_control_names", n) for n in CONTROL_NAMES})
EXPORTS["custom_gradient"] = ("specflow.api.custom_gradient", "custom_gradient")
EXPORTS["debugging"] = ("specflow.api.debugging", None)
EXPORTS.update({n: ("specflow.api.debugging", n) for n in ("Assert", "assert_equal", "assert_greater", "assert_less",
                                                            "assert_rank")})

# TensorFlow's core names beyond ops (api/tf_core_names.py), tf.nest (api/nest.py) and tf.summary
# (api/summary.py, eager only, on io/summaries' event-file writer).
EXPORTS.update({
    "name_scope": ("specflow.api.tf_core_names", "name_scope"),
    "TensorShape": ("specflow.api.tf_core_names", "TensorShape"),
    "dtypes": ("specflow.api.tf_core_names", "dtypes"),
    "DType": ("specflow.api.tf_core_names", "DType"),
    "as_dtype": ("specflow.api.tf_core_names", "as_dtype"),
    "nest": ("specflow.api.nest", None),
    "summary": ("specflow.api.summary", None),
})
