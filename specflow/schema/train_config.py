"""The ``train:`` section of a spec as pydantic models (the grammar is in the language doc).

Everything here is checked on the section alone: types, bounds, exactly one optimizer, the
schedule kind, the data source kind and the fields it provides. References to the model (the
loss, feeds, summaries, eval metrics) are checked after lowering, in ``train_checks.py``.

Values keep the grammar's names so the training layer can use them directly:
``OptimizerConfig.name`` / ``.params`` for ``make_optimizer``, a learning rate that is a float or
a schedule model (``model_dump()`` gives the mapping), ``DataConfig.source_dict()`` for
``load_source``.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from specflow.errors import did_you_mean
from specflow.schema import models
from specflow.schema.models import Ident, Name, Reference, StrictModel
from specflow.schema.validation_errors import custom_error, line_errors, raise_errors, show

# YAML 1.1 (PyYAML) reads `1e-7` as a string; YAML 1.2 and every user mean a number.
_EXP_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def _yaml12_float(v: Any) -> Any:
    return float(v) if isinstance(v, str) and _EXP_FLOAT.fullmatch(v) else v


# NaN and infinity (`.nan`, or a typo like `1e400`) are refused: no option means them.
Float = Annotated[float, BeforeValidator(_yaml12_float), Field(allow_inf_nan=False)]
Positive = Annotated[Float, Field(gt=0)]
NonNegative = Annotated[Float, Field(ge=0)]
Beta = Annotated[Float, Field(ge=0, lt=1)]  # a decay rate of a moving average
Fraction = Annotated[Float, Field(ge=0, le=1)]
PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]


def _fail(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


def _one_kind(data: dict, kinds: dict, what: str) -> str:
    """The one key of ``data`` that names a kind in ``kinds`` (a data source, a schedule)."""
    present = [k for k in data if k in kinds]
    if len(present) != 1:
        got = f"got {' and '.join(repr(k) for k in present)}" if present else "got none"
        raise _fail(f"{what}_kind", f"a {what} needs exactly one of {', '.join(kinds)} ({got})")
    return present[0]


# --- learning-rate schedules --------------------------------------------------------------------


class _Schedule(StrictModel):
    """Any schedule may warm up linearly from 0 over ``warmup_steps``; its decay starts there."""

    warmup_steps: NonNegInt = 0


class ConstantSchedule(_Schedule):
    schedule: Literal["constant"]
    value: Positive


class ExponentialSchedule(_Schedule):
    """initial * decay_rate ** (step / decay_steps), the exponent floored when ``staircase``."""

    schedule: Literal["exponential"]
    initial: Positive
    decay_steps: PosInt
    decay_rate: Positive
    staircase: bool = False


class CosineSchedule(_Schedule):
    """Cosine decay from ``initial`` to ``initial * alpha`` over ``decay_steps``."""

    schedule: Literal["cosine"]
    initial: Positive
    decay_steps: PosInt
    alpha: Fraction = 0.0


class PiecewiseSchedule(_Schedule):
    """``values[i]`` until step ``boundaries[i]``, then the next; one more value than boundaries."""

    schedule: Literal["piecewise"]
    boundaries: list[NonNegInt]
    values: list[Positive]

    @model_validator(mode="after")
    def _consistent(self):
        errors = [
            custom_error("bad_boundaries", f"boundaries must increase: {b} follows {a}", ("boundaries", i + 1), b)
            for i, (a, b) in enumerate(zip(self.boundaries, self.boundaries[1:]))
            if b <= a
        ]
        if len(self.values) != len(self.boundaries) + 1:
            msg = f"expected {len(self.boundaries) + 1} values (one more than boundaries), got {len(self.values)}"
            errors.append(custom_error("bad_values", msg, ("values",), self.values))
        raise_errors("PiecewiseSchedule", errors)
        return self


class PolynomialSchedule(_Schedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end (Keras's PolynomialDecay; ``cycle``
    restarts at each multiple of decay_steps)."""

    schedule: Literal["polynomial"]
    initial: Positive
    decay_steps: PosInt
    end: NonNegative = 0.0001
    power: Positive = 1.0
    cycle: bool = False


class InverseTimeSchedule(_Schedule):
    """initial / (1 + decay_rate * step / decay_steps), the quotient floored when ``staircase``."""

    schedule: Literal["inverse_time"]
    initial: Positive
    decay_steps: PosInt
    decay_rate: Positive
    staircase: bool = False


SCHEDULES: dict[str, type[_Schedule]] = {
    "constant": ConstantSchedule,
    "exponential": ExponentialSchedule,
    "cosine": CosineSchedule,
    "piecewise": PiecewiseSchedule,
    "polynomial": PolynomialSchedule,
    "inverse_time": InverseTimeSchedule,
}
ScheduleConfig = Annotated[
    ConstantSchedule | ExponentialSchedule | CosineSchedule | PiecewiseSchedule | PolynomialSchedule
    | InverseTimeSchedule, Field(discriminator="schedule")
]


def _parse_learning_rate(v: Any) -> float | _Schedule:
    v = _yaml12_float(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            raise _fail("not_finite", f"expected a finite number, got {show(v)}")
        if v <= 0:
            raise _fail("not_positive", f"must be > 0, got {show(v)}")
        return float(v)
    if not isinstance(v, dict):
        raise _fail("bad_learning_rate", f"expected a number or a schedule mapping, got {show(v)}")
    kind = v.get("schedule")
    if not isinstance(kind, str) or kind not in SCHEDULES:
        known = ", ".join(SCHEDULES)
        if kind is None:
            raise_errors("LearningRate", [custom_error("missing_schedule", f"a schedule mapping needs 'schedule:' (one of {known})", (), v)])
        what = f"unknown schedule {show(kind)}" + did_you_mean(kind, SCHEDULES) if isinstance(kind, str) else f"expected a schedule name, got {show(kind)}"
        raise_errors("LearningRate", [custom_error("unknown_schedule", f"{what}; known: {known}", ("schedule",), kind)])
    return SCHEDULES[kind].model_validate(v)


def _dump_learning_rate(v: float | _Schedule) -> float | dict[str, Any]:
    return v.model_dump() if isinstance(v, _Schedule) else v


LearningRate = Annotated[
    float | ScheduleConfig,
    PlainValidator(_parse_learning_rate, json_schema_input_type=float | ScheduleConfig),
    PlainSerializer(_dump_learning_rate),
]


# --- optimizers -----------------------------------------------------------------------------------
# Every optimizer takes weight_decay: decoupled, var -= lr * weight_decay * var (Keras 3, AdamW).


class SGDConfig(StrictModel):
    learning_rate: LearningRate = 0.01
    weight_decay: NonNegative = 0.0


class MomentumConfig(StrictModel):
    learning_rate: LearningRate = 0.01
    momentum: NonNegative = 0.9
    nesterov: bool = False
    weight_decay: NonNegative = 0.0


class AdamConfig(StrictModel):
    learning_rate: LearningRate = 0.001
    beta_1: Beta = 0.9
    beta_2: Beta = 0.999
    epsilon: Positive = 1e-7
    amsgrad: bool = False  # Keras's: the update divides by the running maximum of v
    weight_decay: NonNegative = 0.0


class AdamWConfig(AdamConfig):
    weight_decay: NonNegative = 0.004


class RMSPropConfig(StrictModel):
    learning_rate: LearningRate = 0.001
    rho: Beta = 0.9
    momentum: NonNegative = 0.0
    epsilon: Positive = 1e-7
    centered: bool = False
    weight_decay: NonNegative = 0.0


class AdagradConfig(StrictModel):
    learning_rate: LearningRate = 0.001
    initial_accumulator_value: NonNegative = 0.1
    epsilon: Positive = 1e-7
    weight_decay: NonNegative = 0.0


OPTIMIZERS: dict[str, type[StrictModel]] = {
    "sgd": SGDConfig,
    "momentum": MomentumConfig,
    "adam": AdamConfig,
    "adamw": AdamWConfig,
    "rmsprop": RMSPropConfig,
    "adagrad": AdagradConfig,
}


_KERAS_ELSEWHERE = {
    "clipnorm": "train.clip_norm", "clipvalue": "train.clip_value", "global_clipnorm": "train.clip_global_norm",
    "ema_momentum": "not supported", "use_ema": "not supported",
}


class OptimizerConfig(BaseModel):
    """``{adam: {learning_rate: 0.001}}``: exactly one optimizer key; ``adam: null`` or
    ``adam: {}`` takes every default."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"minProperties": 1, "maxProperties": 1})
    sgd: SGDConfig | None = None
    momentum: MomentumConfig | None = None
    adam: AdamConfig | None = None
    adamw: AdamWConfig | None = None
    rmsprop: RMSPropConfig | None = None
    adagrad: AdagradConfig | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _exactly_one(cls, data: Any, handler):
        if not isinstance(data, dict):
            return handler(data)
        errors = []
        for key, value in data.items():
            if key not in OPTIMIZERS:
                msg = f"unknown optimizer {show(key)}" + did_you_mean(str(key), OPTIMIZERS) + "; known: " + ", ".join(OPTIMIZERS)
                errors.append(custom_error("unknown_field", msg, (key,), value))
        chosen = [k for k in data if k in OPTIMIZERS]
        if len(chosen) > 1:
            msg = f"choose exactly one optimizer, got {len(chosen)}: {', '.join(chosen)}"
            errors.append(custom_error("two_optimizers", msg, (), data))
        elif not chosen and not errors:
            errors.append(custom_error("no_optimizer", "choose an optimizer: one of " + ", ".join(OPTIMIZERS), (), data))
        known = {k: {} if data[k] is None else data[k] for k in chosen}
        if isinstance(known.get("sgd"), dict):  # Keras's SGD(momentum=..., nesterov=...): say where it is here
            for field in ("momentum", "nesterov"):
                if field in known["sgd"]:
                    known["sgd"] = {k: v for k, v in known["sgd"].items() if k != field}
                    msg = (f"unknown field for sgd (Keras's SGD({field}=...) is the momentum optimizer here: "
                           f"{{momentum: {{learning_rate: ..., momentum: 0.9{', nesterov: true' if field == 'nesterov' else ''}}}}})")
                    errors.append(custom_error("unknown_field", msg, ("sgd", field), data["sgd"][field]))
        # Keras's optimizer arguments that are train: keys here.
        for opt in chosen:
            if not isinstance(known[opt], dict):
                continue
            for field, where in _KERAS_ELSEWHERE.items():
                if field in known[opt]:
                    known[opt] = {k: v for k, v in known[opt].items() if k != field}
                    msg = f"unknown field for {opt} (Keras's {field}=... is {where} here)"
                    errors.append(custom_error("unknown_field", msg, (opt, field), data[opt][field]))
        if not errors:
            return handler(known)
        try:
            handler(known)
        except ValidationError as e:
            errors = line_errors(e) + errors
        raise_errors(cls.__name__, errors)

    @property
    def name(self) -> str:
        """The optimizer's key: ``"adam"``."""
        return next(k for k in OPTIMIZERS if getattr(self, k) is not None)

    @property
    def config(self) -> StrictModel:
        return getattr(self, self.name)

    @property
    def params(self) -> dict[str, Any]:
        """Plain parameters with defaults filled; ``learning_rate`` a float or a schedule mapping."""
        params = self.config.model_dump()
        if params.get("amsgrad") is False:  # only when asked: plain Adam's parameters as before it existed
            del params["amsgrad"]
        return params


# --- data ---------------------------------------------------------------------------------------

# Each builtin dataset's fields: name -> (dtype, shape); None is the example dimension.
BUILTIN_DATASETS: dict[str, dict[str, tuple[str, list[int | None]]]] = {
    "digits": {"x": ("float32", [None, 64]), "y": ("int64", [None])},
}
# A CSV file gives x = every other column as float32 and y = the label column as int64 (or its label_dtype).
CSV_FIELDS: dict[str, tuple[str, list[int | None]]] = {"x": ("float32", [None, None]), "y": ("int64", [None])}


def _check_builtin(v: str) -> str:
    if v not in BUILTIN_DATASETS:
        msg = f"unknown builtin dataset {show(v)}" + did_you_mean(v, BUILTIN_DATASETS) + "; available: " + ", ".join(BUILTIN_DATASETS)
        raise _fail("unknown_dataset", msg)
    return v


class BuiltinSource(StrictModel):
    builtin: Annotated[str, AfterValidator(_check_builtin), Field(json_schema_extra={"enum": list(BUILTIN_DATASETS)})]

    def fields(self) -> dict[str, tuple[str, list[int | None]] | None]:
        return dict(BUILTIN_DATASETS[self.builtin])


class NpzSource(StrictModel):
    """``{npz: data.npz}``: one field per array, by name (path relative to the spec file)."""

    npz: str

    def fields(self) -> None:
        return None  # known only once the file is opened


class NpySource(StrictModel):
    """``{npy: {x: a.npy, y: b.npy}}``: one field per file (paths relative to the spec file)."""

    npy: Annotated[dict[Ident, str], Field(min_length=1)]

    def fields(self) -> dict[str, tuple[str, list[int | None]] | None]:
        return {k: None for k in self.npy}


class CsvSource(StrictModel):
    """``{csv: data.csv, label_column: label, header: true, label_dtype: int64}``; without a
    header the label column is a 0-based column index; ``label_dtype: float32`` reads the label
    as a real number (a regression target) instead of a class index."""

    csv: str
    label_column: str | NonNegInt = "label"
    header: bool = True
    label_dtype: Literal["int64", "float32"] = "int64"  # float32: a regression target

    @model_validator(mode="after")
    def _label_without_header(self):
        if not self.header and isinstance(self.label_column, str):
            msg = f"a file without a header has no column named {show(self.label_column)}: give label_column as a 0-based index"
            raise_errors("CsvSource", [custom_error("bad_label_column", msg, ("label_column",), self.label_column)])
        return self

    def fields(self) -> dict[str, tuple[str, list[int | None]] | None]:
        return {**CSV_FIELDS, "y": (self.label_dtype, [None])}


def _one_or_list(v: Any) -> Any:
    return [v] if isinstance(v, str) else v


_PATH_SCHEMA = {"type": "string", "minLength": 1}
_PATHS_SCHEMA = {"anyOf": [_PATH_SCHEMA, {"type": "array", "items": _PATH_SCHEMA, "minItems": 1}]}


class TFRecordFeature(StrictModel):
    """One field of a TFRecord source: a feature of every tf.train.Example, of a fixed shape."""

    dtype: Literal["float32", "int64"]
    shape: list[NonNegInt] = []  # per example; [] a scalar
    key: str | None = None  # the feature's name in the Examples (default: the field's name)
    default: Float | None = None  # for examples without the feature (default: it is required)


class TFRecordSource(StrictModel):
    """``{tfrecord: [a.tfrecord, data/*.tfrecord], features: {x: {dtype: float32, shape: [64]}}}``:
    tf.train.Example records of TFRecord files (paths or globs relative to the spec file, read in
    the order given, each glob sorted), one field per feature."""

    tfrecord: Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_one_or_list), Field(min_length=1),
                        WithJsonSchema(_PATHS_SCHEMA)]  # fmt: skip
    features: Annotated[dict[Ident, TFRecordFeature], Field(min_length=1)]
    compression_type: Literal["", "ZLIB", "GZIP"] = ""

    @model_validator(mode="after")
    def _reserved(self):
        if "_file_index" in self.features:  # train/sharding.py's FILE_INDEX: each record's file
            msg = "'_file_index' is reserved (each record's file index, for sharding); name the field otherwise"
            raise_errors("TFRecordSource", [custom_error("reserved_field", msg, ("features", "_file_index"), None)])
        return self

    def fields(self) -> dict[str, tuple[str, list[int | None]] | None]:
        return {name: (f.dtype, [None, *f.shape]) for name, f in self.features.items()}


SOURCES: dict[str, type[StrictModel]] = {"builtin": BuiltinSource, "npz": NpzSource, "npy": NpySource, "csv": CsvSource,
                                         "tfrecord": TFRecordSource}  # fmt: skip
DataSource = BuiltinSource | NpzSource | NpySource | CsvSource | TFRecordSource


def _parse_source(v: Any) -> DataSource:
    if isinstance(v, tuple(SOURCES.values())):
        return v
    if not isinstance(v, dict):
        raise _fail("bad_source", f"expected a mapping with one of {', '.join(SOURCES)}, got {show(v)}")
    return SOURCES[_one_kind(v, SOURCES, "data source")].model_validate(v)


class SplitConfig(StrictModel):
    test: Annotated[Float, Field(gt=0, lt=1)]  # held-out fraction, drawn deterministically under `seed`
    stratify: Ident | None = None  # a field of class labels: hold out that fraction of every class

    @model_validator(mode="before")
    @classmethod
    def _a_bare_fraction(cls, data: Any) -> Any:
        if isinstance(data, (int, float)) and not isinstance(data, bool):  # Keras's validation_split=0.2
            raise _fail("split_fraction", f"expected a mapping, got {show(data)} (write split: {{test: {data}}})")
        return data


class DataConfig(StrictModel):
    source: Annotated[DataSource, PlainValidator(_parse_source, json_schema_input_type=DataSource)]
    feeds: Annotated[dict[Name, Ident], Field(min_length=1)]  # model input -> source field
    batch_size: PosInt = 32
    shuffle: bool = True
    seed: NonNegInt = 0
    epochs: PosInt | None = None  # None: repeat until `steps`
    split: SplitConfig | None = None
    capacity: PosInt = 8  # batches prefetched by the queue

    @model_validator(mode="after")
    def _fields_exist(self):
        fields = self.source.fields()
        if fields is None:
            return self
        errors = [
            custom_error("unknown_source_field", f"the source has no field {show(f)}" + did_you_mean(f, fields) + "; fields: " + ", ".join(fields), ("feeds", name), f)
            for name, f in self.feeds.items()
            if f not in fields
        ]
        raise_errors("DataConfig", errors)
        return self

    def source_dict(self) -> dict[str, Any]:
        """The source as a plain mapping with defaults filled (``{"builtin": "digits"}``)."""
        return self.source.model_dump()


# --- checkpoints, summaries, eval, the section ----------------------------------------------------


class CheckpointConfig(StrictModel):
    every_steps: PosInt | None = 500
    every_secs: Positive | None = None
    keep: PosInt = 5  # the last N checkpoints are kept
    keep_every_hours: Positive | None = None  # ... and one every N hours besides


class SummaryConfig(StrictModel):
    every_steps: PosInt = 100
    scalars: list[Reference] = []
    histograms: list[Reference] = []  # variable names
    graph: bool = True


class EvalConfig(StrictModel):
    """Metrics computed on the held-out split (``data.split``)."""

    every_steps: PosInt = 500
    metrics: Annotated[list[Reference], Field(min_length=1)]


class EarlyStoppingConfig(StrictModel):
    """Keras's EarlyStopping on an eval metric: stop when ``patience`` evaluations in a row after
    the best one did not improve it by more than ``min_delta`` (patience 0, Keras's default: the
    first that does not)."""

    metric: Reference
    mode: Literal["auto", "min", "max"] = "auto"  # auto: min for a loss or error, max for accuracy/auc
    patience: NonNegInt = 0
    min_delta: NonNegative = 0.0

    def direction(self) -> str | None:
        """``min`` or ``max``; None when ``auto`` cannot tell from the metric's name."""
        if self.mode != "auto":
            return self.mode
        name = self.metric.lower()
        if any(w in name for w in ("loss", "error", "mse", "mae", "xent", "entropy", "perplexity")):
            return "min"
        if any(w in name for w in ("acc", "auc", "precision", "recall", "f1")):
            return "max"
        return None


class DistributedConfig(StrictModel):
    """How ``specflow train --cluster`` trains (between-graph replication, one replica per worker)."""

    mode: Literal["async", "sync"] = "async"
    replicas_to_aggregate: PosInt | None = None  # sync: gradients averaged per step (default: every worker)
    placement: Literal["greedy", "round_robin"] = "greedy"  # variables over the ps tasks
    health_timeout_s: Positive = 3.0  # a task dead or silent this long is lost and recovered


class TrainConfig(StrictModel):
    loss: Reference
    optimizer: OptimizerConfig
    clip_global_norm: Positive | None = None  # all gradients by their global norm (tf.clip_by_global_norm)
    clip_norm: Positive | None = None  # each gradient by its own L2 norm (Keras's clipnorm)
    clip_value: Positive | None = None  # elementwise to [-v, v] (Keras's clipvalue)
    data: DataConfig
    steps: PosInt = 1000
    checkpoints: CheckpointConfig = Field(default_factory=CheckpointConfig)
    summaries: SummaryConfig = Field(default_factory=SummaryConfig)
    eval: EvalConfig | None = None
    nan_guard: bool = True
    early_stopping: EarlyStoppingConfig | None = None
    distributed: DistributedConfig | None = None

    @model_validator(mode="after")
    def _eval_needs_split(self):
        clips = [k for k in ("clip_global_norm", "clip_norm", "clip_value") if getattr(self, k) is not None]
        if len(clips) > 1:
            msg = f"at most one of clip_global_norm, clip_norm and clip_value (as Keras's), got {' and '.join(clips)}"
            raise_errors("TrainConfig", [custom_error("two_clips", msg, (clips[1],), getattr(self, clips[1]))])
        if self.eval is not None and self.data.split is None:
            msg = "eval needs a held-out split: add split: {test: 0.2} to data"
            raise_errors("TrainConfig", [custom_error("eval_without_split", msg, ("eval",), None)])
        stop = self.early_stopping
        if stop is not None:
            metrics = self.eval.metrics if self.eval is not None else []
            if stop.metric not in metrics:
                msg = (f"early stopping watches an eval metric: '{stop.metric}' is not in train.eval.metrics"
                       + (f" ({', '.join(metrics)})" if metrics else " (add eval: {every_steps: N, metrics: [...]})")
                       + did_you_mean(stop.metric, metrics))
                raise_errors("TrainConfig", [custom_error("early_stopping_metric", msg, ("early_stopping", "metric"), stop.metric)])
            if stop.direction() is None:
                msg = f"say whether '{stop.metric}' should fall or rise: mode: min or mode: max"
                raise_errors("TrainConfig", [custom_error("early_stopping_mode", msg, ("early_stopping", "mode"), stop.mode)])
        return self


# ModelSpec names TrainConfig, which builds on models.py's types: resolve it now.
models.ModelSpec.model_rebuild(_types_namespace={"TrainConfig": TrainConfig})
