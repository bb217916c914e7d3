"""TensorBoard event files, read back with TensorBoard's own readers."""

import resource
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

import specflow
from specflow.errors import SpecflowError
from specflow.io.summaries import SummaryError, SummaryWriter, default_bucket_limits
from specflow.io.tf_graph import from_tf_graph_def, to_tf_graph_def

MODEL = Path(__file__).parents[2] / "models" / "digits_mlp.yaml"
DBL_MAX = sys.float_info.max


def accumulator(logdir) -> EventAccumulator:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def test_scalars_read_back(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalars({"loss": 1.0 / (step + 1), "accuracy": np.float32(step / 10)}, step)
            w.add_scalar("learning_rate", np.array(0.01), step)
        w.add_scalar("steps_per_sec", 123.5, 4)
    acc = accumulator(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["accuracy", "learning_rate", "loss", "steps_per_sec"]
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(5))
    assert [e.value for e in loss] == pytest.approx([1.0 / (s + 1) for s in range(5)], rel=1e-6)
    assert acc.Scalars("steps_per_sec")[0].value == 123.5
    assert all(e.wall_time > 0 for e in loss)


def test_scalars_reach_the_scalars_dashboard(tmp_path):
    # `tensorboard --logdir` reads through the plugin accumulator, which migrates simple_value.
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 0.5, 3)
    acc = plugin_event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert "loss" in acc.PluginTagToContent("scalars")
    (event,) = acc.Tensors("loss")
    assert event.step == 3 and tensor_util.make_ndarray(event.tensor_proto) == 0.5


def test_default_buckets_match_tensorflow():
    limits = default_bucket_limits()
    pos = limits[limits > 0]
    assert limits[len(limits) // 2] == 0.0 and np.array_equal(limits[: len(pos)], -pos[::-1])
    assert pos[0] == 1e-12 and pos[1] == 1e-12 * 1.1 and pos[-1] == DBL_MAX and pos[-2] < 1e20 <= pos[-2] * 1.1
    assert np.all(np.diff(limits) > 0) and len(limits) == 2 * len(pos) + 1


def test_histogram_counts_match_numpy_over_the_same_edges(tmp_path):
    rng = np.random.default_rng(0)
    limits = default_bucket_limits()
    values = np.concatenate([rng.normal(0, 3, 2000), [0.0, 0.0, limits[900], -limits[100], 1e-300]])
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("hidden/kernel", values.astype(np.float32).reshape(5, -1), 7)
    (event,) = accumulator(tmp_path).Histograms("hidden/kernel")
    h = event.histogram_value
    x = values.astype(np.float32).astype(np.float64)
    assert event.step == 7 and h.num == x.size and (h.min, h.max) == (x.min(), x.max())
    assert h.sum == pytest.approx(x.sum()) and h.sum_squares == pytest.approx(np.dot(x, x))
    assert set(h.bucket_limit) <= set(limits.tolist()) and sum(h.bucket) == x.size
    lows = [-np.inf] + list(h.bucket_limit[:-1])
    expected = [np.count_nonzero((x >= lo) & (x < hi)) for lo, hi in zip(lows, h.bucket_limit)]
    assert list(h.bucket) == expected
    # Empty runs are collapsed as TF does: no two empty buckets in a row.
    assert not any(a == b == 0 for a, b in zip(h.bucket, h.bucket[1:]))


def test_empty_histogram_and_non_finite_values(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("empty", np.zeros(0), 0)
        with pytest.raises(SummaryError, match="'bad'.*NaN or Inf"):
            w.add_histogram("bad", np.array([1.0, np.nan]), 0)
    (event,) = accumulator(tmp_path).Histograms("empty")
    h = event.histogram_value
    assert (h.num, list(h.bucket_limit), list(h.bucket)) == (0, [DBL_MAX], [0])


def test_graph_reads_back(tmp_path):
    g = specflow.load_spec(MODEL).graph_def
    with SummaryWriter(tmp_path) as w:
        w.add_graph(g)
    graph = accumulator(tmp_path).Graph()
    assert graph == to_tf_graph_def(g)
    assert [n.name for n in from_tf_graph_def(graph)] == [n.name for n in g]


def test_bad_values_and_closed_writer(tmp_path):
    w = SummaryWriter(tmp_path)
    with pytest.raises(SummaryError, match="one number"):
        w.add_scalar("loss", np.ones(3), 0)
    w.close()
    w.close()  # twice is harmless
    with pytest.raises(SummaryError, match=f"{tmp_path}.* is closed"):
        w.add_scalar("loss", 1.0, 1)


def test_unwritable_logdir_is_a_specflow_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(SpecflowError, match=str(blocker)):
        SummaryWriter(blocker / "run")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_full_disk_surfaces_as_summary_error(tmp_path):
    # A file-size limit makes writes fail with EFBIG, as a full disk fails them with ENOSPC.
    w = SummaryWriter(tmp_path, flush_secs=0)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write, keep the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, limit[1]))
    try:
        with pytest.raises(SummaryError, match=str(tmp_path)):
            for step in range(100):
                w.add_histogram("h", np.arange(step, step + 500.0), step)
                w.flush()
        with pytest.raises(SummaryError, match="File too large"):  # later calls report it too
            w.add_scalar("loss", 1.0, 0)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    w.close()  # returns, does not hang


def test_event_records_checksummed_in_c_as_tensorboard_does(tmp_path):
    """Records are framed with google_crc32c's masked CRC (TensorBoard's pure-Python one took
    ~0.3 ms a KB); the CRCs are TensorBoard's, checked on every record when read back."""
    import os
    import struct

    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    from tensorboard.summary.writer import record_writer

    for data in (b"", b"\x00" * 8, os.urandom(1), os.urandom(3000)):
        assert record_writer.masked_crc32c(data) == masked_crc32c(data)
    assert record_writer.masked_crc32c is not masked_crc32c
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", np.arange(1000, dtype=np.float32), 1)
    raw = next(tmp_path.glob("events.out.tfevents.*")).read_bytes()
    pos = 0
    while pos < len(raw):  # each record: length, its crc, data, the data's crc (as TF frames it)
        (n,) = struct.unpack_from("<Q", raw, pos)
        assert struct.unpack_from("<I", raw, pos + 8)[0] == masked_crc32c(raw[pos:pos + 8])
        assert struct.unpack_from("<I", raw, pos + 12 + n)[0] == masked_crc32c(raw[pos + 12:pos + 12 + n])
        pos += 16 + n
    assert pos == len(raw)
