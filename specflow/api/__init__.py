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
}
