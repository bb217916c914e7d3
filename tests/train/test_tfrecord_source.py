"""The ``tfrecord`` data source (specflow/train/tfrecord_source.py): digits written as TFRecord
files of tf.train.Examples load as the builtin arrays, train exactly as the same arrays from an
npz file do, shard by file on a cluster, and bad sources are located errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from specflow.errors import SpecError, SpecflowError
from specflow.io.tfrecord import write_records
from specflow.schema.loader import load_spec
from specflow.train.data import load_source, select, split
from specflow.train.loop import Listener, Trainer, TrainOptions
from specflow.train.sharding import FILE_INDEX, ShardBatches, shard
from tests.ops.cases_parse import example
from tests.schema.spec_errors import error_lines

ROOT = Path(__file__).resolve().parents[2]
FEATURES = {"x": {"dtype": "float32", "shape": [64], "key": "image"}, "y": {"dtype": "int64", "key": "label"}}


def _write_digits(out: Path) -> list[Path]:
    """models/data/make_digits_tfrecord.py's files (example i in file i % 4)."""
    spec = importlib.util.spec_from_file_location("make_digits", ROOT / "models" / "data" / "make_digits_tfrecord.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.write_digits(out)


@pytest.fixture(scope="module")
def digits_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("digits") / "data" / "digits_tfrecord"
    _write_digits(out)
    return out.parent.parent


def test_digits_tfrecord_loads_as_the_builtin_arrays(digits_dir):
    got = load_source({"tfrecord": "data/digits_tfrecord/*.tfrecord.gz", "compression_type": "GZIP",
                       "features": FEATURES}, digits_dir)
    committed = load_source({"tfrecord": "data/digits_tfrecord/*.tfrecord.gz", "compression_type": "GZIP",
                             "features": FEATURES}, ROOT / "models")  # the example's files are these
    np.testing.assert_array_equal(committed["x"], got["x"])
    want = load_source({"builtin": "digits"})
    interleaved = np.concatenate([np.arange(k, 1797, 4) for k in range(4)])  # file k holds examples k, k+4, ...
    np.testing.assert_array_equal(got["x"], want["x"][interleaved])
    np.testing.assert_array_equal(got["y"], want["y"][interleaved])
    assert got["x"].dtype == np.float32 and got["y"].dtype == np.int64
    np.testing.assert_array_equal(np.bincount(got[FILE_INDEX]), [450, 449, 449, 449])
    assert list(select(got, {"images": "x"})) == ["images"]


class Losses(Listener):
    def __init__(self):
        self.losses: dict[int, float] = {}

    def on_step(self, step, loss, steps_per_sec):
        self.losses[step] = loss


def test_training_from_tfrecords_equals_training_from_the_same_arrays(tmp_path, digits_dir):
    text = (ROOT / "models" / "digits_tfrecord.yaml").read_text().replace("steps: 2000", "steps: 30")
    tf_spec = tmp_path / "tf.yaml"
    tf_spec.write_text(text.replace("data/digits_tfrecord", str(digits_dir / "data" / "digits_tfrecord")))
    arrays = load_source({"tfrecord": str(digits_dir / "data/digits_tfrecord/*.tfrecord.gz"), "compression_type": "GZIP",
                          "features": FEATURES})
    np.savez(tmp_path / "same.npz", x=arrays["x"], y=arrays["y"])
    npz_spec = tmp_path / "npz.yaml"
    start, end = text.index("    source:"), text.index("    feeds:")
    npz_spec.write_text(text[:start] + "    source: {npz: same.npz}\n" + text[end:])
    runs = []
    for spec in (tf_spec, npz_spec):
        rec = Losses()
        result = Trainer(load_spec(spec), TrainOptions(logdir=tmp_path / spec.stem), rec).run()
        assert result.step == 30
        runs.append(rec.losses)
    assert len(runs[0]) > 1 and runs[0] == runs[1]


def test_shards_are_whole_files_when_there_are_enough():
    files = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0])
    arrays = {"x": np.arange(9)}
    assert list(shard(arrays, 0, 2, files)["x"]) == [0, 2, 4, 6, 8]  # files 0 and 2
    assert list(shard(arrays, 1, 4, files)["x"]) == [1, 5]  # file 1
    # fewer files than shards: records by index, as for any other source
    assert list(shard(arrays, 1, 5, files)["x"]) == [1, 6]
    b = ShardBatches(arrays, 1, 2, batch_size=2, shuffle=False, files=files)
    assert sorted(b.arrays["x"]) == [1, 3, 5, 7]
    with pytest.raises(SpecError, match="shard 2 of 2 does not exist"):
        shard(arrays, 2, 2, files)


def test_split_keeps_file_indices_aligned(digits_dir):
    arrays = load_source({"tfrecord": "data/digits_tfrecord/*.tfrecord.gz", "compression_type": "GZIP",
                          "features": FEATURES}, digits_dir)
    train, test = split(arrays, 0.2, seed=2)
    for part in (train, test):
        assert len(part[FILE_INDEX]) == len(part["x"])


def test_defaults_and_a_list_of_files(tmp_path):
    write_records(tmp_path / "a.tfrecord", [example(v=[1.0, 2.0], w=[3]), example(v=[3.0, 4.0])])
    write_records(tmp_path / "b.tfrecord", [example(v=[5.0, 6.0], w=[4])], "GZIP")
    feats = {"v": {"dtype": "float32", "shape": [2]}, "w": {"dtype": "int64", "default": -1}}
    d = load_source({"tfrecord": ["a.tfrecord"], "features": feats}, tmp_path)
    np.testing.assert_array_equal(d["w"], [3, -1])
    with pytest.raises(SpecError, match=r"b\.tfrecord: not a readable uncompressed|b\.tfrecord: record 0"):
        load_source({"tfrecord": ["a.tfrecord", "b.tfrecord"], "features": feats}, tmp_path)
    write_records(tmp_path / "b.tfrecord", [example(v=[5.0, 6.0], w=[4])])
    d = load_source({"tfrecord": ["b.tfrecord", "a.tfrecord"], "features": feats}, tmp_path)
    np.testing.assert_array_equal(d["v"], [[5, 6], [1, 2], [3, 4]])
    np.testing.assert_array_equal(d[FILE_INDEX], [0, 1, 1])


def test_load_errors_name_the_file(tmp_path):
    write_records(tmp_path / "a.tfrecord", [example(v=[1.0]), example(w=[2])])
    feats = {"v": {"dtype": "float32"}}
    with pytest.raises(SpecError, match=r"a\.tfrecord: example 1: required feature 'v' is missing") as e:
        load_source({"tfrecord": "a.tfrecord", "features": feats}, tmp_path)
    assert e.value.path == "train.data.source.features"
    with pytest.raises(SpecError, match=r"no files match .*nothing-\*\.tfrecord"):
        load_source({"tfrecord": "nothing-*.tfrecord", "features": feats}, tmp_path)
    with pytest.raises(SpecError, match="data file not found: .*missing.tfrecord") as e:
        load_source({"tfrecord": ["a.tfrecord", "missing.tfrecord"], "features": feats}, tmp_path)
    assert e.value.path == "train.data.source.tfrecord[1]"
    data = bytearray((tmp_path / "a.tfrecord").read_bytes())
    data[-1] ^= 1
    (tmp_path / "a.tfrecord").write_bytes(bytes(data))
    with pytest.raises(SpecError, match=r"a\.tfrecord: record 1 \(offset \d+\) is corrupt"):
        load_source({"tfrecord": "a.tfrecord", "features": feats}, tmp_path)
    with pytest.raises(SpecError, match="unknown option 'compression'"):
        load_source({"tfrecord": "a.tfrecord", "features": feats, "compression": "GZIP"}, tmp_path)


MODEL = """\
specflow: 1
name: m
inputs:
  x: {dtype: float32, shape: [null, 4]}
  y: {dtype: int64, shape: [null]}
nodes:
  logits: {layer: dense, inputs: [x], units: 3}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}
  loss: {op: Mean, inputs: ["xent:0"]}
train:
  loss: loss
  optimizer: {sgd: {}}
  data:
    feeds: {x: x, y: y}
    source:
"""


def _load(source: str, tmp_path: Path):
    p = tmp_path / "m.yaml"
    p.write_text(MODEL + source)
    return load_spec(p)


@pytest.mark.parametrize("source, message", [
    ("      tfrecord: a.tfrecord\n      features: {x: {dtype: float64, shape: [4]}, y: {dtype: int64}}\n",
     "m.yaml:17:29: train.data.source.features.x.dtype: expected one of 'float32' or 'int64', got 'float64'"),
    ("      tfrecord: a.tfrecord\n      features: {x: {dtype: float32, shape: [4]}}\n",
     "m.yaml:14:22: train.data.feeds.y: the source has no field 'y'; fields: x"),
    ("      tfrecord: []\n      features: {x: {dtype: float32}}\n",
     "m.yaml:16:17: train.data.source.tfrecord: the value should have at least 1 item"),
    ("      tfrecord: a.tfrecord\n      features: {x: {dtype: float32}, y: {dtype: int64}, _file_index: {dtype: int64}}\n",
     "'_file_index' is reserved"),
    ("      tfrecord: a.tfrecord\n      compression_type: LZ4\n      features: {x: {dtype: float32}, y: {dtype: int64}}\n",
     "m.yaml:17:25: train.data.source.compression_type: expected one of '', 'ZLIB' or 'GZIP', got 'LZ4'"),
])  # fmt: skip
def test_schema_errors_are_located(tmp_path, source, message):
    lines = error_lines(_load, source, tmp_path)
    assert any(message in line for line in lines), lines


def test_schema_accepts_a_glob_string_and_lists_the_fields(tmp_path):
    spec = _load("      tfrecord: d/*.tfrecord\n      features: {x: {dtype: float32, shape: [4]}, y: {dtype: int64}}\n",
                 tmp_path)  # fmt: skip
    src = spec.train.data.source_dict()
    assert src["tfrecord"] == ["d/*.tfrecord"] and src["compression_type"] == ""
    assert spec.train.data.source.fields() == {"x": ("float32", [None, 4]), "y": ("int64", [None])}
    with pytest.raises(SpecflowError, match="no files match"):
        Trainer(spec, TrainOptions(logdir=tmp_path / "log")).run()
