"""benchmarks/peers.py's specflow side runs, and its ONNX row agrees with onnxruntime: the
script is run by hand against TensorFlow and PyTorch, so this keeps it from rotting."""

import numpy as np
import pytest

from benchmarks import peers


def test_cnn_and_rnn_steps_time_on_specflow_alone():
    results, threads = peers.measure(["cnn", "rnn"], {"specflow"}, rounds=1, batches=(4,))
    assert list(results) == ["CNN step, batch 4", "RNN step (8-step while loop), batch 64"]
    for sides in results.values():
        seconds, ratio = sides["specflow"]
        assert seconds > 0 and ratio == 1.0
    assert "inter_op_threads=1" in threads[1]


def test_inference_matches_specflows_onnx_export_on_onnxruntime(capsys):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    # infer_rows checks the probabilities of every side against specflow's before timing.
    results, _ = peers.measure(["infer"], {"specflow", "ort"}, rounds=1)
    assert set(results) == {"CNN inference, batch 1", "CNN inference, batch 256"}
    assert all(r["ort"][0] > 0 for r in results.values())
    peers.print_table(results)
    assert "ort<=2.0x" in capsys.readouterr().out


def test_a_disagreeing_side_stops_the_run():
    with pytest.raises(SystemExit, match="tf disagrees"):
        peers._close("row", {"specflow": np.zeros(3), "tf": np.ones(3)})


def test_the_loop_rows_time_on_specflow_alone():
    results, _ = peers.measure(["loop"], {"specflow"}, rounds=1)
    assert list(results) == ["RNN step (8 steps, trip count fed), batch 64", "Fixed point while loop (8 trips), 64x16"]
    assert all(r["specflow"][0] > 0 for r in results.values())


def test_spread_alternating_times_every_process_on_every_row():
    from benchmarks import peers_spread

    result = peers_spread.spread_alternating(rounds=2, sides=["specflow"], processes=2, batches=(4,))
    assert list(result) == ["CNN step, batch 4"]
    medians = result["CNN step, batch 4"]["specflow"]
    assert len(medians) == 2 and all(m > 0 for m in medians)
