"""Limits before allocation and strict names (issue 15, items 7, 8, 10): each hostile or broken
spec is one located error line from ``specflow validate``, never a traceback, a hang or an
allocation."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format
from typer.testing import CliRunner

from specflow.cli import app
from specflow.errors import SpecflowError
from specflow.graph.limits import MAX_TENSOR_BYTES_ENV
from specflow.io.npy import NpyError, load_array_file
from specflow.schema.loader import load_spec_text

HEAD = "specflow: 1\nname: m\ninputs:\n  x: {dtype: float32, shape: [null, 3]}\n  ids: {dtype: int32, shape: [null]}\n"


def _error(body: str, head: str = HEAD) -> str:
    with pytest.raises(SpecflowError) as err:
        load_spec_text(head + body, "m.yaml")
    return err.value.format()


@pytest.mark.parametrize(("body", "message"), [
    ("variables:\n  w: {shape: [100000, 100000], initializer: zeros}\nnodes:\n  y: {op: Identity, inputs: [w]}\n",
     "m.yaml:7:3: variables.w: variable 'w' of float32[100000, 100000] would take 40,000,000,000 bytes (37.3 GiB), "
     "over the per-tensor limit of 8,589,934,592 bytes (8.0 GiB"),
    ("nodes:\n  e: {layer: embedding, inputs: [ids], input_dim: 10000000000, output_dim: 4}\n",
     "m.yaml:7:3: nodes.e: variable 'e/embeddings' of float32[10000000000, 4] would take 160,000,000,000 bytes"),
    ("nodes:\n  f: {op: Fill, dims: [100000, 100000], value: 1.0}\n",
     "m.yaml:7:3: node 'f': output 0 of Fill, float32[100000, 100000], would take 40,000,000,000 bytes"),
    ("variables:\n  w: {shape: [1180591620717411303424, 3], initializer: zeros}\n",
     "m.yaml:7:15: variables.w.shape.0: dimension 1180591620717411303424 is out of range (the largest is 2^63-1)"),
    ("nodes:\n  r: {op: Range, inputs: [], start: 0, limit: 1000000000000, delta: 1}\n",
     "nodes.r.limit: input 'limit' of Range: 1000000000000 is out of range for int32"),
    ("nodes:\n  s: {op: Sum, inputs: [x], axis: 1180591620717411303424}\n",
     "nodes.s.axis: input 'reduction_indices' of Sum: 1180591620717411303424 is out of range for int64"),
    ("nodes:\n  g: {op: GatherV2, inputs: [x], indices: 9223372036854775808, axis: 0}\n",  # numpy's uint64:
     "nodes.g.indices: input 'indices' of GatherV2: 9223372036854775808 is out of range for int64"),  # was -2**63
    ("nodes:\n  s: {op: Unpack, inputs: [x], num: 1180591620717411303424, axis: 0}\n",
     "attr 'num' of Unpack must be an int64 (1180591620717411303424 is out of range)"),
    ("nodes:\n  s: {op: Unpack, inputs: [x], num: 10000000000, axis: 0}\n",
     "m.yaml:7:3: nodes.s: Unpack: num=10000000000 outputs is more than the limit of 1048576"),
])  # fmt: skip
def test_limits_are_located_errors(body, message):
    text = _error(body)
    assert message in text, text


def test_the_limit_is_configurable(monkeypatch):
    body = "variables:\n  w: {shape: [1000, 1000], initializer: zeros}\nnodes:\n  y: {op: Identity, inputs: [w]}\n"
    load_spec_text(HEAD + body, "m.yaml")  # 4 MB: fine by default
    monkeypatch.setenv(MAX_TENSOR_BYTES_ENV, "1000000")
    assert "over the per-tensor limit of 1,000,000 bytes" in _error(body)


@pytest.mark.parametrize(("head", "message"), [
    ('specflow: 1\nname: "m\\n"\ninputs:\n  x: {dtype: float32, shape: [2]}\n', "name: bad name 'm\\n'"),
    ('specflow: 1\nname: m\ninputs:\n  "x\\n": {dtype: float32, shape: [2]}\n', "bad name 'x\\n'"),
])  # fmt: skip
def test_names_with_a_trailing_newline_are_refused_on_one_line(head, message):
    text = _error("nodes:\n  y: {op: Identity, inputs: [x]}\n", head)
    assert message in text and "\n" not in text, text


def test_validate_dev_zero_reads_only_up_to_the_limit():
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "validate", "/dev/zero"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "file is too large" in r.stderr, r.stderr


def _npy(header: bytes) -> bytes:
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def _declared(shape, data=b"\0" * 16) -> bytes:
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


@pytest.mark.parametrize(("content", "message"), [
    (_declared((10**12,)), "declares float32[1000000000000] (4,000,000,000,000 bytes) but the file holds 16"),
    (_declared((2**62, 2**62)), "but the file holds 16"),
    (_npy(b"{'descr': 'xx'}   \n"), "malformed header"),
    (_npy(b"{" * 20000), "malformed header"),
    (_npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (-5,), }   \n"), "malformed header"),
    (_npy(b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }   \n") + b"\0" * 8, "Python objects"),
    (b"\x93NUMPY\x09\x00", "malformed header"),
    (b"not numpy at all", "malformed header"),
    (b"", "malformed header"),
], ids=["terabytes", "overflowing", "bad-descr", "huge-header", "negative", "object", "version", "garbage", "empty"])  # fmt: skip
def test_malformed_or_enormous_npy_headers_are_refused_before_allocating(tmp_path, content, message):
    path = tmp_path / "x.npy"
    path.write_bytes(content)
    with pytest.raises(NpyError) as err:
        load_array_file(path)
    assert message in str(err.value)
    spec = tmp_path / "m.yaml"
    spec.write_text(HEAD + "nodes:\n  y: {op: Identity, inputs: [x]}\n")
    r = CliRunner().invoke(app, ["run", str(spec), "--fetch", "y", "--feed", f"x={path}"])
    assert r.exit_code == 1 and "not a readable .npy file" in r.output


def test_npz_members_are_checked_too(tmp_path):
    path = tmp_path / "d.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", _declared((10**12,)))
    with pytest.raises(NpyError, match="member 'x.npy': the header declares"):
        load_array_file(path)
    good = tmp_path / "g.npz"
    np.savez(good, a=np.arange(3), b=np.ones((2, 2), np.float32))
    got = load_array_file(good)
    assert sorted(got) == ["a", "b"] and got["b"].shape == (2, 2)
    np.save(tmp_path / "a.npy", np.arange(5))
    assert load_array_file(tmp_path / "a.npy").tolist() == [0, 1, 2, 3, 4]


def test_batch_size_larger_than_the_data_is_an_error(tmp_path):
    from specflow.train.loop import Trainer, TrainOptions
    from tests.train.test_loop import DROPOUT_SPEC

    spec = load_spec_text(DROPOUT_SPEC.replace("batch_size: 32", "batch_size: 100000"), str(tmp_path / "m.yaml"))
    with pytest.raises(SpecflowError, match="train.data.batch_size: batch_size 100000 is larger than the training "
                                            "data \\(1437 examples after the split\\)"):
        Trainer(spec, TrainOptions(logdir=tmp_path / "run", steps=1)).run()
    assert not os.path.exists(tmp_path / "run" / "checkpoint")
