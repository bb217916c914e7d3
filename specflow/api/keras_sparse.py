"""Keras 3's arithmetic on a sparse gradient (its TensorFlow backend's ``sparse`` wrappers), which
the optimizers' update steps follow so that an Embedding trains as in Keras: an elementwise
function of an sf.IndexedSlices maps its values (so ``square`` squares each occurrence of a
repeated row before they add up); a product or quotient with a scalar or a dense tensor keeps the
rows (the dense operand gathered at them); a sum with a dense tensor, and ``maximum``, make it
dense first; assigning one to a variable scatters its rows. With dense arguments each is the
plain op, so dense gradients take exactly the ops they took before."""

from __future__ import annotations

import numpy as np

from specflow.api.indexed_slices import IndexedSlices
from specflow.api.op_functions import call, convert_to_tensor


def dense(x):
    return x._dense() if isinstance(x, IndexedSlices) else x


def square(x):
    return x.with_values(call("Square", x.values)) if isinstance(x, IndexedSlices) else call("Square", x)


def absolute(x):
    return x.with_values(call("Abs", x.values)) if isinstance(x, IndexedSlices) else call("Abs", x)


def mul(x1, x2):
    """Keras's multiply: the rows of the sparse operand (the other gathered there, unless a scalar)."""
    if isinstance(x1, IndexedSlices):
        return x1.with_values(x1.values * _at_rows(x2, x1))
    if isinstance(x2, IndexedSlices):
        return x2.with_values(_at_rows(x1, x2) * x2.values)
    return x1 * x2


def div(x1, x2):
    """Keras's divide of sparse by scalar or dense: the numerator's rows (a sparse divisor is made
    dense; Keras also keeps the rows where a dense divisor is 0 or NaN, which an epsilon > 0
    never makes)."""
    if isinstance(x2, IndexedSlices):
        return dense(x1) / x2._dense()
    if isinstance(x1, IndexedSlices):
        return x1.with_values(x1.values / _at_rows(x2, x1))
    return x1 / x2


def assign_add(var, x) -> None:
    var.scatter_add(x) if isinstance(x, IndexedSlices) else var.assign_add(x)


def assign_sub(var, x) -> None:
    var.scatter_sub(x) if isinstance(x, IndexedSlices) else var.assign_sub(x)


def _at_rows(x, rows: IndexedSlices):
    """``x`` where the sparse operand's rows are: a scalar as it is, a dense tensor gathered."""
    if _is_scalar(x):
        return x
    return call("GatherV2", convert_to_tensor(x), rows.indices, np.int32(0))


def _is_scalar(x) -> bool:
    if isinstance(x, (int, float, np.ndarray, np.generic)):
        return np.ndim(x) == 0
    return x.shape.rank == 0
