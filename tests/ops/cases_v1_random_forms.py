"""Cases for v1_random_forms: the values TensorFlow 2.21 gave for the same [2] seeds (tf.raw_ops'
V1 stateless ops): bit-exact for uniforms, integers and float64 normals; float32 normals within an
ulp (Box-Muller's log/sin/cos: Eigen's float32 against numpy's)."""

import numpy as np

from tests.ops.harness import Case

_S = np.array([7, 11], np.int64)
_S64 = np.array([-3, 2**40], np.int64)
_SHAPE, _SHAPE5 = np.array([2, 3], np.int32), np.array([5], np.int32)


def _lit(value, dtype=None):
    return lambda *_: np.asarray(value, dtype)


CASES = [
    Case("StatelessRandomUniform", [_SHAPE, _S], _lit([[0.7251373529434204, 0.07715070247650146, 0.5419409275054932], [0.26232099533081055, 0.5479346513748169, 0.3882409334182739]], np.float32), const_inputs=[0], rtol=0, atol=0),
    Case("StatelessRandomUniform", [_SHAPE5, _S64], _lit([0.609805040316808, 0.7476304657934467, 0.32043400199397887, 0.5294954628483293, 0.27512523293027424]), attrs={"dtype": "float64"}, const_inputs=[0],
         rtol=0, atol=0, id="StatelessRandomUniform-f64"),
    Case("StatelessRandomNormal", [_SHAPE, _S], _lit([[0.3736024796962738, 0.7093726396560669, 1.103570818901062], [-0.08560418337583542, 0.7084914445877075, -0.8373997807502747]], np.float32), const_inputs=[0], rtol=2.5e-7, atol=0),
    Case("StatelessRandomNormal", [_SHAPE5, _S64], _lit([-0.9944911773072073, -0.014807300007557188, -0.2780016745687902, -1.4828597238514523, 1.563958525197221]), attrs={"dtype": "float64"}, const_inputs=[0],
         rtol=0, atol=0, id="StatelessRandomNormal-f64"),
    Case("StatelessTruncatedNormal", [_SHAPE, _S], _lit([[0.3736024796962738, 0.7093726396560669, 1.103570818901062], [-0.08560418337583542, 0.11584892868995667, -0.8514097929000854]], np.float32), const_inputs=[0], rtol=2.5e-7, atol=0),
    Case("StatelessTruncatedNormal", [_SHAPE5, _S64], _lit([-0.9944911773072073, -0.014807300007557188, 0.7270441955997637, 0.3855545477822938, 1.4710077765644205]), attrs={"dtype": "float64"}, const_inputs=[0],
         rtol=0, atol=0, id="StatelessTruncatedNormal-f64"),
    Case("StatelessRandomUniformInt", [np.array([6], np.int32), np.array([7, 11], np.int32), np.int32(-5), np.int32(9)],
         _lit([4, -4, -3, -1, 6, 4], np.int32), const_inputs=[0]),
    Case("StatelessRandomUniformFullInt", [np.array([4], np.int32), _S], _lit([-6914749377162718899, 3936589988564917842, 3040406804523000505, -9010414080390895701], np.int64),
         attrs={"dtype": "int64"}, const_inputs=[0]),
    Case("StatelessRandomUniformFullInt", [np.array([4], np.int32), _S], _lit([3478966605, 2685001747, 3603258962, 916558780], np.uint32),
         attrs={"dtype": "uint32"}, const_inputs=[0], id="StatelessRandomUniformFullInt-uint32"),
    Case("StatelessRandomGetKeyCounterAlg", [_S], lambda s: [np.array([6232233517653123107], np.uint64),
         np.array([0, 17336993267840886171], np.uint64), np.int32(1)]),
    Case("StatelessRandomGetKeyCounterAlg", [np.array([-7, 11], np.int32)], lambda s: [np.array([15442613171476168854], np.uint64),
         np.array([0, 10009476460426641528], np.uint64), np.int32(1)], id="StatelessRandomGetKeyCounterAlg-int32"),
]  # fmt: skip
