"""The op library. Importing this package registers every op family and its kernels."""

# One module per op family; each holds OpDefs, shape functions and kernels side by side.
from specflow.ops import (  # noqa: F401,E402  (importing registers the ops)
    array_ops,
    batch_norm_ops,
    bitwise_ops,
    box_ops,
    color_ops,
    complex_ops,
    control_flow_ops,
    conv3d_ops,
    conv_ops,
    crop_resize_ops,
    ctc_ops,
    data_flow_ops,
    depthwise_conv_ops,
    edit_distance_ops,
    einsum_ops,
    fake_quant_ops,
    fft_ops,
    function_ops,
    fused_elementwise_ops,
    fused_ops,
    gather_scatter_ops,
    grad_util,
    image_ops,
    index_ops,
    inplace_ops,
    io_ops,
    linalg_extra_ops,
    linalg_lstsq_ops,
    linalg_ops,
    linalg_solve_ops,
    list_concat_ops,
    list_ops,
    lrn_ops,
    manip_ops,
    math_binary_ops,
    math_grad_ops,
    math_ops,
    math_unary_ops,
    matmul_ops,
    nn_loss_ops,
    nn_ops,
    optional_ops,
    parse_ops,
    pool_ops,
    ragged_ops,
    random_dist_ops,
    random_ops,
    reader_ops,
    reduction_ops,
    registry,  # noqa: F401
    resource_scatter_ops,
    reverse_ops,
    runtime_ops,
    scale_translate_ops,
    segment_ops,
    selection_ops,
    set_ops,
    space_depth_ops,
    sparse_ops,
    sparse_segment_ops,
    sparse_training_ops,
    special_function_ops,
    special_math_ops,
    stack_ops,
    state_ops,
    stateless_random_dist_ops,
    stateless_random_ops,
    training_ops,
    tridiagonal_ops,
)
from specflow.ops.registry import all_ops, get_op, kernel, register_op  # noqa: F401


def __getattr__(name):
    # sf.ops.<op>: every registered op as a function (specflow/api/op_functions.py), made on first use.
    if name.startswith("__"):
        raise AttributeError(name)
    from specflow.api.op_functions import function_for

    return function_for(name)
