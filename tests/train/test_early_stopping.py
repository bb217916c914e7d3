"""train.early_stopping's verdicts against Keras's EarlyStopping callback, recorded as literals."""

import math

import pytest

from specflow.schema.train_config import EarlyStoppingConfig
from specflow.train.early_stopping import judge

SEQS = {"a": [1.0, 0.9, 0.95, 0.8, 0.85, 0.86, 0.87, 0.7], "b": [0.5, 0.6, 0.4, 0.41, 0.39, 0.395, 0.3945, 0.394]}
# Keras 3 (TF 2.21)'s EarlyStopping.on_epoch_end over SEQS: (patience, min_delta, mode, the epoch it stopped at).
KERAS_STOPS = {
    "a": [(0, 0.0, "min", 2), (0, 0.0, "max", 1), (0, 0.01, "min", 2), (0, 0.01, "max", 1), (1, 0.0, "min", 2),
          (1, 0.0, "max", 1), (1, 0.01, "min", 2), (1, 0.01, "max", 1), (2, 0.0, "min", 5), (2, 0.0, "max", 2),
          (2, 0.01, "min", 5), (2, 0.01, "max", 2), (3, 0.0, "min", 6), (3, 0.0, "max", 3), (3, 0.01, "min", 6),
          (3, 0.01, "max", 3)],
    "b": [(0, 0.0, "min", 1), (0, 0.0, "max", 2), (0, 0.01, "min", 1), (0, 0.01, "max", 2), (1, 0.0, "min", 1),
          (1, 0.0, "max", 2), (1, 0.01, "min", 1), (1, 0.01, "max", 2), (2, 0.0, "min", 6), (2, 0.0, "max", 3),
          (2, 0.01, "min", 4), (2, 0.01, "max", 3), (3, 0.0, "min", 7), (3, 0.0, "max", 4), (3, 0.01, "min", 5),
          (3, 0.01, "max", 4)],
}


@pytest.mark.parametrize("name", sorted(KERAS_STOPS))
def test_stops_where_keras_stops(name):
    evals = list(enumerate(SEQS[name]))
    for patience, min_delta, mode, stop in KERAS_STOPS[name]:
        cfg = EarlyStoppingConfig(metric="v", mode=mode, patience=patience, min_delta=min_delta)
        assert judge(cfg, evals).stopped_at == stop, (patience, min_delta, mode)


def test_a_nan_evaluation_is_no_improvement_and_auto_reads_the_name():
    cfg = EarlyStoppingConfig(metric="val_loss", patience=1)
    v = judge(cfg, [(10, 1.0), (20, math.nan)])
    assert (v.stopped_at, v.best, v.best_step) == (20, 1.0, 10)
    assert EarlyStoppingConfig(metric="accuracy").direction() == "max"
    assert EarlyStoppingConfig(metric="objective").direction() is None


def test_the_summary_before_any_periodic_evaluation_says_so(tmp_path):
    """A run shorter than eval.every_steps said "loss: no finite value yet" beside a finite
    final eval loss: none had been judged, not none finite."""
    from specflow.train.early_stopping import EarlyStoppingHook

    cfg = EarlyStoppingConfig(metric="loss")
    assert EarlyStoppingHook(cfg, None, tmp_path, []).summary() == "loss: no periodic evaluation yet"
    assert EarlyStoppingHook(cfg, None, tmp_path, [(500, math.nan)]).summary() == "loss: no finite value yet"
    assert EarlyStoppingHook(cfg, None, tmp_path, [(500, 0.5), (1000, 0.25)]).summary() == "best loss 0.2500 at step 1000"
