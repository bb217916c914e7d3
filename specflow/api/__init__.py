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
    "load": ("specflow.api.saved", "load"),
    "save": ("specflow.api.saved", "save"),
    # namespaces (attr None: the module itself)
    "nn": ("specflow.api.nn", None),
    "optimizers": ("specflow.api.optimizers", None),
    "keras": ("specflow.api.keras", None),
    "saved_model": ("specflow.api.saved_model", None),
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
