"""The `train:` section: defaults, optimizers, schedules, data sources, and the checks against
the lowered model (each error at file:line:col). The broken corpus has more (broken/train_*)."""

from pathlib import Path

import pytest

from specflow.errors import SpecflowError
from specflow.schema.json_schema import spec_json_schema
from specflow.schema.loader import load_spec, load_spec_text
from specflow.schema.train_config import (
    OPTIMIZERS,
    SCHEDULES,
    CheckpointConfig,
    CosineSchedule,
    CsvSource,
    TrainConfig,
)
from specflow.schema.yaml_loader import load_yaml
from tests.schema.spec_errors import error_lines

MODELS = Path(__file__).resolve().parents[2] / "models"

MODEL = """\
specflow: 1
name: m
inputs:
  x: {dtype: float32, shape: [null, 64]}
  y: {dtype: int64, shape: [null]}
  keep: {dtype: float32, shape: [], default: 1.0}
nodes:
  logits: {layer: dense, inputs: [x], units: 10}
  xent: {op: SparseSoftmaxCrossEntropyWithLogits, inputs: [logits, y]}
  loss: {op: Mul, inputs: [{op: Mean, inputs: ["xent:0"]}, keep]}
  count: {op: Size, inputs: [x], out_type: int64}
  correct: {op: Equal, inputs: [{op: ArgMax, inputs: [logits], axis: 1, output_type: int64}, y]}
train:
"""


def load(train: str):
    return load_spec_text(MODEL + train, "m.yaml")


def errors_of(train: str) -> list[str]:
    return error_lines(load, train)


MINIMAL = {"loss": "loss", "optimizer": {"sgd": {}}, "data": {"source": {"builtin": "digits"}, "feeds": {"x": "x"}}}


def test_defaults():
    t = TrainConfig.model_validate(MINIMAL)
    assert (t.steps, t.clip_global_norm, t.eval, t.nan_guard) == (1000, None, None, True)
    d = t.data
    assert (d.batch_size, d.shuffle, d.seed, d.epochs, d.split, d.capacity) == (32, True, 0, None, None, 8)
    assert t.checkpoints.model_dump() == {"every_steps": 500, "every_secs": None, "keep": 5, "keep_every_hours": None}
    assert t.summaries.model_dump() == {"every_steps": 100, "scalars": [], "histograms": [], "graph": True}
    assert t.optimizer.name == "sgd" and t.optimizer.params == {"learning_rate": 0.01, "weight_decay": 0.0}
    assert d.source_dict() == {"builtin": "digits"}
    assert TrainConfig.model_validate(MINIMAL).checkpoints is not t.checkpoints  # no shared defaults


@pytest.mark.parametrize(
    "name, params",
    [
        ("sgd", {"learning_rate": 0.01, "weight_decay": 0.0}),
        ("momentum", {"learning_rate": 0.01, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0}),
        ("adam", {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "weight_decay": 0.0}),
        ("adamw", {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "weight_decay": 0.004}),
        ("rmsprop", {"learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7, "centered": False, "weight_decay": 0.0}),
        ("adagrad", {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7, "weight_decay": 0.0}),
    ],
)
def test_optimizer_defaults(name, params):
    for given in ({}, None):  # `adam: {}` and `adam:` (null) both take the defaults
        opt = TrainConfig.model_validate({**MINIMAL, "optimizer": {name: given}}).optimizer
        assert opt.name == name and opt.params == params
    assert list(OPTIMIZERS) == ["sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad"]


def test_yaml_exponent_floats_are_numbers():
    # PyYAML reads `1e-8` as a string; the train section takes it as the number users mean.
    spec = load("  loss: loss\n  optimizer: {adam: {learning_rate: 3e-4, epsilon: 1e-8}}\n"
                "  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n")
    assert spec.train.optimizer.params["learning_rate"] == 3e-4 and spec.train.optimizer.params["epsilon"] == 1e-8


@pytest.mark.parametrize(
    "schedule",
    [
        {"schedule": "constant", "value": 0.1},
        {"schedule": "exponential", "initial": 0.1, "decay_steps": 100, "decay_rate": 0.96, "staircase": True},
        {"schedule": "cosine", "initial": 0.1, "decay_steps": 1000, "alpha": 0.1, "warmup_steps": 50},
        {"schedule": "piecewise", "boundaries": [100, 200], "values": [0.1, 0.01, 0.001]},
    ],
)
def test_schedules(schedule):
    opt = TrainConfig.model_validate({**MINIMAL, "optimizer": {"momentum": {"learning_rate": schedule}}}).optimizer
    lr = opt.params["learning_rate"]  # a plain mapping, defaults filled
    assert isinstance(opt.config.learning_rate, SCHEDULES[schedule["schedule"]])
    assert lr["warmup_steps"] == schedule.get("warmup_steps", 0)
    assert {k: lr[k] for k in schedule} == schedule


def test_schedule_defaults():
    lr = TrainConfig.model_validate(
        {**MINIMAL, "optimizer": {"sgd": {"learning_rate": {"schedule": "cosine", "initial": 0.1, "decay_steps": 10}}}}
    ).optimizer.config.learning_rate
    assert isinstance(lr, CosineSchedule) and (lr.alpha, lr.warmup_steps) == (0.0, 0)


def test_sources():
    def source(src):
        return TrainConfig.model_validate({**MINIMAL, "data": {"source": src, "feeds": {"x": "x"}}}).data

    assert source({"npz": "d.npz"}).source_dict() == {"npz": "d.npz"}
    assert source({"npy": {"x": "a.npy", "y": "b.npy"}}).source_dict() == {"npy": {"x": "a.npy", "y": "b.npy"}}
    csv = source({"csv": "d.csv"}).source
    assert isinstance(csv, CsvSource) and csv.model_dump() == {"csv": "d.csv", "label_column": "label", "header": True,
                                                                   "label_dtype": "int64"}
    assert source({"csv": "d.csv", "header": False, "label_column": 0}).source.label_column == 0


def test_digits_mlp_train_section():
    t = load_spec(MODELS / "digits_mlp.yaml").train
    assert t.loss == "loss" and t.steps == 2000 and t.optimizer.name == "adam"
    assert t.data.feeds == {"images": "x", "labels": "y"} and t.data.batch_size == 64 and t.data.split.test == 0.2
    assert t.checkpoints == CheckpointConfig(every_steps=200, keep=5)
    assert t.summaries.histograms == ["hidden/kernel"] and t.eval.metrics == ["accuracy", "loss"]


def test_models_without_train_section():
    assert load_spec(MODELS / "two_tower.yaml").train is None


def test_good_references_pass():
    spec = load(
        "  loss: loss\n  optimizer: {sgd: {learning_rate: 0.1}}\n"
        "  data: {source: {csv: d.csv, label_column: digit}, feeds: {x: x, y: y}, split: {test: 0.1}}\n"
        "  summaries: {scalars: [loss, count], histograms: [logits/kernel, logits/bias]}\n"
        "  eval: {metrics: [\"loss:0\", count]}\n"
    )
    # `keep` has a default, so the loss needs no feed for it.
    assert spec.train.summaries.scalars == ["loss", "count"]


def test_loss_through_a_function_call():
    with pytest.raises(SpecflowError, match=r"loss 'block2' has shape \[\?, 64\]; expected a scalar"):
        load_spec(MODELS / "residual_mlp.yaml", overrides=[
            "train={loss: block2, optimizer: {sgd: }, data: {source: {builtin: digits}, feeds: {images: x, labels: y}}}"
        ])


@pytest.mark.parametrize(
    "train, expected",
    [
        (
            "  loss: correct\n  optimizer: {sgd: }\n  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n",
            ["m.yaml:14:9: train.loss: loss 'correct' is bool; expected a float scalar"],
        ),
        (
            "  loss: loss\n  optimizer: {sgd: }\n  data: {source: {builtin: digits}, feeds: {x: y, y: x}}\n",
            [
                "m.yaml:16:48: train.data.feeds.x: input 'x' is float32 [?, 64] but source field 'y' is int64 [?]",
                "m.yaml:16:54: train.data.feeds.y: input 'y' is int64 [?] but source field 'x' is float32 [?, 64]",
            ],
        ),
        (
            "  loss: loss\n  optimizer: {sgd: }\n  data: {source: {builtin: digits}, feeds: {x: x, y: label}}\n",
            ["m.yaml:16:54: train.data.feeds.y: the source has no field 'label'; fields: x, y"],
        ),
        (
            "  loss: loss\n  optimizer: {sgd: }\n  data: {source: {npy: {x: a.npy}}, feeds: {x: x}, split: {test: 0.5}}\n"
            "  eval: {metrics: [correct, xent, missing]}\n",
            [
                "m.yaml:16:44: train.data.feeds: input 'y' is needed by the loss 'loss' but is not fed",
                "m.yaml:17:20: train.eval.metrics.0: metric 'correct' is bool; expected an integer or float scalar",
                "m.yaml:17:29: train.eval.metrics.1: metric 'xent' has shape [?]; expected a scalar — reduce it with Mean",
                "m.yaml:17:35: train.eval.metrics.2: metric 'missing' names no tensor of the model",
            ],
        ),
        (
            "  loss: loss\n  optimizer: {sgd: {learning_rate: {schedule: cosin, initial: 0.1}}}\n"
            "  data: {source: {csv: d.csv, npz: d.npz}, feeds: {x: x}, capacity: 0}\n",
            [
                "m.yaml:15:47: train.optimizer.sgd.learning_rate.schedule: unknown schedule 'cosin' (did you mean 'cosine'?); "
                "known: constant, exponential, cosine, piecewise, polynomial, inverse_time",
                "m.yaml:16:18: train.data.source: a data source needs exactly one of builtin, npz, npy, csv, tfrecord (got 'csv' and 'npz')",
                "m.yaml:16:69: train.data.capacity: must be >= 1, got 0",
            ],
        ),
        (
            "  loss: loss\n  optimizer: {adam: {learning_rate: true, beta_2: 1}}\n"
            "  data: {source: {csv: d.csv, header: false}, feeds: {x: x}}\n  steps: 0\n",
            [
                "m.yaml:15:37: train.optimizer.adam.learning_rate: expected a number or a schedule mapping, got true",
                "m.yaml:15:51: train.optimizer.adam.beta_2: must be < 1, got 1",
                "m.yaml:16:18: train.data.source.label_column: a file without a header has no column named 'label': "
                "give label_column as a 0-based index",
                "m.yaml:17:10: train.steps: must be >= 1, got 0",
            ],
        ),
        (
            "  loss: loss\n  optimizer: {}\n  data: {source: {builtin: digits}, feeds: {}}\n  clip_global_norm: -1\n",
            [
                "m.yaml:15:14: train.optimizer: choose an optimizer: one of sgd, momentum, adam, adamw, rmsprop, adagrad",
                "m.yaml:16:44: train.data.feeds: the mapping should have at least 1 item after validation, not 0",
                "m.yaml:17:21: train.clip_global_norm: must be > 0, got -1",
            ],
        ),
    ],
)
def test_errors(train, expected):
    assert errors_of(train) == expected


def test_json_schema_has_train_section():
    jsonschema = pytest.importorskip("jsonschema")
    schema = spec_json_schema()
    train = schema["$defs"]["TrainConfig"]
    assert set(train["required"]) == {"loss", "optimizer", "data"}
    assert set(schema["$defs"]["OptimizerConfig"]["properties"]) == set(OPTIMIZERS)
    validator = jsonschema.Draft202012Validator(schema)
    tree, _ = load_yaml((MODELS / "digits_mlp.yaml").read_text(), "m.yaml")
    assert list(validator.iter_errors(tree)) == []
    tree["train"]["optimizer"] = {"adma": {}}
    assert list(validator.iter_errors(tree))
    tree["train"]["optimizer"] = {"adam": {}, "sgd": {}}
    assert list(validator.iter_errors(tree))


def test_non_finite_numbers_are_refused():
    """`learning_rate: .nan` (or a typo like 1e400, read as infinity), an infinite decay rate,
    momentum or weight decay were accepted: every step then made the weights NaN."""
    data = "  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n"
    assert errors_of("  loss: loss\n  optimizer: {sgd: {learning_rate: .nan}}\n" + data) == [
        "m.yaml:15:36: train.optimizer.sgd.learning_rate: expected a finite number, got nan"]
    assert errors_of("  loss: loss\n  optimizer: {adam: {learning_rate: 1e400}}\n" + data) == [
        "m.yaml:15:37: train.optimizer.adam.learning_rate: expected a finite number, got inf"]
    assert errors_of("  loss: loss\n  optimizer: {momentum: {momentum: .inf, weight_decay: .inf, learning_rate: "
                     "{schedule: exponential, initial: 1, decay_steps: 3, decay_rate: .inf}}}\n" + data
                     + "  clip_global_norm: .inf\n  checkpoints: {every_secs: .inf}\n") == [
        "m.yaml:15:36: train.optimizer.momentum.momentum: expected a finite number, got inf",
        "m.yaml:15:56: train.optimizer.momentum.weight_decay: expected a finite number, got inf",
        "m.yaml:15:141: train.optimizer.momentum.learning_rate.decay_rate: expected a finite number, got inf",
        "m.yaml:17:21: train.clip_global_norm: expected a finite number, got inf",
        "m.yaml:18:29: train.checkpoints.every_secs: expected a finite number, got inf",
    ]


def test_a_loss_no_trainable_variable_reaches_is_refused_by_validate():
    """`loss` computed from the labels alone validated; `train` then failed with
    "node 'loss': the loss 'loss' does not depend on any trainable variable", no line."""
    data = "  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n"
    text = MODEL.replace("  correct:", "  label_mean: {op: Mean, inputs: [{op: Cast, inputs: [y], DstT: float32}]}\n"
                         "  correct:") + "  loss: label_mean\n  optimizer: {sgd: }\n" + data
    assert error_lines(load_spec_text, text, "m.yaml") == [
        "m.yaml:15:9: train.loss: the loss 'label_mean' depends on no trainable variable: training would change nothing"]


def test_names_the_training_graph_takes_are_reserved():
    """A node (or variable) named `global_step` or `train_init` validated; `train` then failed
    with "node 'global_step': duplicate node name 'global_step'", no line."""
    train = "  loss: loss\n  optimizer: {sgd: }\n  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n"
    text = MODEL.replace("  correct:", "  global_step: {op: Size, inputs: [x]}\n  train_init: {op: Size, inputs: [x]}\n"
                         "  correct:") + train
    assert error_lines(load_spec_text, text, "m.yaml") == [
        "m.yaml:12:3: nodes.global_step: 'global_step' is the name of training's step counter; name the node "
        "otherwise",
        "m.yaml:13:3: nodes.train_init: 'train_init' is the name of training's initializer op; name the node otherwise",
    ]
    load_spec_text(text.split("train:\n")[0], "m.yaml")  # without a train: section the names are free


def test_a_scalar_summary_tagged_learning_rate_is_refused():
    """`summaries: {scalars: [learning_rate]}` naming a node of the model was written under the
    tag of training's own learning-rate summary, which replaced it: the node's value was lost."""
    train = ("  loss: loss\n  optimizer: {sgd: }\n  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n"
             "  summaries: {scalars: [loss, learning_rate]}\n")
    text = MODEL.replace("  correct:", "  learning_rate: {op: Mean, inputs: [x]}\n  correct:") + train
    assert error_lines(load_spec_text, text, "m.yaml") == [
        "m.yaml:18:31: train.summaries.scalars.1: the scalar summary 'learning_rate' would be written under the tag "
        "of training's own learning-rate summary; name the node otherwise"]


def test_keras_sgd_momentum_says_where_momentum_is():
    """`sgd: {momentum: 0.9}` (Keras's SGD(momentum=0.9)) was a bare 'unknown field'."""
    lines = errors_of("  loss: loss\n  optimizer: {sgd: {learning_rate: 0.1, momentum: 0.9, nesterov: true}}\n"
                      "  data: {source: {builtin: digits}, feeds: {x: x, y: y}}\n")
    assert lines == [
        "m.yaml:15:41: train.optimizer.sgd.momentum: unknown field for sgd (Keras's SGD(momentum=...) is the momentum "
        "optimizer here: {momentum: {learning_rate: ..., momentum: 0.9}})",
        "m.yaml:15:56: train.optimizer.sgd.nesterov: unknown field for sgd (Keras's SGD(nesterov=...) is the momentum "
        "optimizer here: {momentum: {learning_rate: ..., momentum: 0.9, nesterov: true}})"]
