"""Writes the 8x8 digits as TFRecord files of tf.train.Example protos, as a TensorFlow input
pipeline would hold them, for ``models/digits_tfrecord.yaml``: ``digits_tfrecord/digits-0000k-of-00004.tfrecord.gz``
next to this script, example ``i`` in file ``i % 4`` with features ``image`` (64 floats in [0, 1])
and ``label`` (an int64). TensorFlow reads the files with ``tf.data.TFRecordDataset`` and
``tf.io.parse_example`` unchanged.

The files are GZIP-compressed (``compression_type: GZIP`` in the spec, as TensorFlow writes
them with ``TFRecordOptions("GZIP")``): about 70 KB in all, committed so the example runs from a
fresh clone. ``python models/data/make_digits_tfrecord.py`` writes them again.
"""

from pathlib import Path

from specflow.io.extra_protos import Example
from specflow.io.tfrecord import TFRecordWriter
from specflow.train.data import load_source

HERE = Path(__file__).resolve().parent


def write_digits(out: Path, shards: int = 4) -> list[Path]:
    arrays = load_source({"builtin": "digits"})
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"digits-{k:05d}-of-{shards:05d}.tfrecord.gz" for k in range(shards)]
    writers = [TFRecordWriter(p, "GZIP") for p in paths]
    for i, (x, y) in enumerate(zip(arrays["x"], arrays["y"])):
        e = Example()
        e.features.feature["image"].float_list.value.extend(x.tolist())
        e.features.feature["label"].int64_list.value.append(int(y))
        writers[i % shards].write(e.SerializeToString())
    for w in writers:
        w.close()
    return paths


if __name__ == "__main__":
    for p in write_digits(HERE / "digits_tfrecord"):
        print(p)
