"""The inputs TensorFlow 2.21 refuses (tests/ops/data/tf_tfops.json's ``error`` entries, written by
scripts/make_tfops_fixtures.py) are refused by specflow too: one line naming the node, no
traceback."""

import pytest

from specflow.errors import SpecflowError
from specflow.ops import all_ops
from specflow.ops.eval import evaluate_op
from tests.ops.cases_tfops import ENTRIES, decode

REFUSED = [e for e in ENTRIES if "error" in e]


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
def test_refused_as_tf_refuses(entry):
    assert entry["op"] in all_ops()  # (an unknown op is refused too, but not for the input's sake)
    with pytest.raises(SpecflowError) as err:
        evaluate_op(entry["op"], [decode(i) for i in entry["inputs"]], **entry["attrs"])
    message = str(err.value)
    assert "\n" not in message and "eval" in message, message


def test_every_refusal_is_checked():
    assert len(REFUSED) >= 15
