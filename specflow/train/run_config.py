"""A training run's configuration, remembered in its logdir (``LOGDIR/run.json``).

The spec (its path and a hash of its text) and the command-line flags that change what is
trained (``--seed``, ``--set``) are written when a run starts. Later commands on the logdir use
them, as TensorFlow's Estimator keeps its config with its model_dir: ``train --resume`` and
``eval`` inherit flags not given again, and a flag given with another value is an error naming
both (a warning with ``--force``); ``train`` without ``--resume`` continues a run of the same
spec and flags, and refuses a different one unless ``--overwrite``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

from specflow.errors import Location, SpecflowError, TrainingError

FILENAME = "run.json"
# What a run writes into its logdir; --overwrite removes only these (never the user's other files).
_RUN_FILE = re.compile(r"^(checkpoint|run\.json|early_stopping\.json|model\.ckpt-\d+\..*|events\.out\.tfevents\..*|\.specflow\.lock)$")


@dataclass
class RunConfig:
    spec: str  # the spec's path as given
    spec_sha256: str
    seed: int | None = None
    set: list[str] = field(default_factory=list)
    # The hash of what the YAML says (its parsed tree): an edit of comments or layout alone
    # leaves it as it was. Empty in a run.json written before it existed.
    spec_content_sha256: str = ""

    def same_spec(self, other: RunConfig) -> bool:
        if not (self.spec_sha256 and other.spec_sha256) or self.spec_sha256 == other.spec_sha256:
            return True
        return bool(self.spec_content_sha256) and self.spec_content_sha256 == other.spec_content_sha256

    def flags(self) -> str:
        parts = ([f"--seed {self.seed}"] if self.seed is not None else []) + [f"--set {s}" for s in self.set]
        return " ".join(parts) or "no --seed/--set"


def _spec_bytes(path: Path) -> bytes | None:
    """The spec's bytes, read no further than the spec loader's size limit (None: unreadable or
    over it; load_spec reports that)."""
    from specflow.schema.yaml_loader import MAX_BYTES

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_BYTES else None


def spec_hash(path: Path) -> str:
    data = _spec_bytes(path)
    return "" if data is None else hashlib.sha256(data).hexdigest()


def content_hash(path: Path) -> str:
    """sha256 of the spec's parsed YAML tree as canonical JSON ("" when it does not parse: the
    spec's own loading reports that). Parsed by the spec loader, with its limits: PyYAML's own
    safe_load expanded a "billion laughs" spec here, and `train` hung before any error."""
    from specflow.schema.yaml_loader import load_yaml

    data = _spec_bytes(path)
    if data is None:
        return ""
    try:
        tree, _ = load_yaml(data.decode("utf-8"), str(path))
        text = json.dumps(tree, sort_keys=True, default=repr)
    except (SpecflowError, UnicodeDecodeError, TypeError, ValueError, RecursionError):
        return ""
    return hashlib.sha256(text.encode()).hexdigest()


def current(spec: Path, seed: int | None, sets: list[str] | None) -> RunConfig:
    return RunConfig(spec=str(spec), spec_sha256=spec_hash(spec), seed=seed, set=list(sets or []),
                     spec_content_sha256=content_hash(spec))


def read(logdir: Path) -> RunConfig | None:
    p = Path(logdir) / FILENAME
    try:
        data = json.loads(p.read_text())
        return RunConfig(spec=str(data["spec"]), spec_sha256=str(data["spec_sha256"]),
                         seed=None if data.get("seed") is None else int(data["seed"]),
                         set=[str(s) for s in data.get("set") or []],
                         spec_content_sha256=str(data.get("spec_content_sha256") or ""))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TrainingError(f"unreadable run configuration ({e}); remove it or use --overwrite",
                            location=Location(str(p))) from None


def write(logdir: Path, cfg: RunConfig) -> None:
    from specflow.io.atomic_write import write_atomically

    Path(logdir).mkdir(parents=True, exist_ok=True)
    text = json.dumps(asdict(cfg), indent=2) + "\n"
    write_atomically(Path(logdir) / FILENAME, lambda f: f.write(text.encode()))


def differences(stored: RunConfig, given: RunConfig, *, inherit: bool) -> list[str]:
    """What differs, one phrase each. With ``inherit`` (``--resume``, ``eval``) a flag not given
    again is the stored one, so only flags given with another value differ."""
    diffs = []
    if not stored.same_spec(given):
        same_path = os.path.abspath(stored.spec) == os.path.abspath(given.spec)
        diffs.append(f"the spec {given.spec} {'has changed since' if same_path else 'is not the spec of'} "
                     f"the run (which began with {stored.spec})")
    if given.seed != stored.seed and not (inherit and given.seed is None):
        diffs.append(f"--seed {_show(given.seed)} differs from the run's --seed {_show(stored.seed)}")
    if given.set != stored.set and not (inherit and not given.set):
        diffs.append(f"--set {_show_sets(given.set)} differs from the run's --set {_show_sets(stored.set)}")
    return diffs


def merged(stored: RunConfig, given: RunConfig) -> RunConfig:
    """The stored run's flags where ``given`` leaves them out."""
    return RunConfig(spec=given.spec, spec_sha256=given.spec_sha256,
                     seed=given.seed if given.seed is not None else stored.seed,
                     set=given.set or list(stored.set), spec_content_sha256=given.spec_content_sha256)


def _show(seed: int | None) -> str:
    return "(none)" if seed is None else str(seed)


def _show_sets(sets: list[str]) -> str:
    return " --set ".join(sets) if sets else "(none)"


def latest_step(logdir: Path) -> int | None:
    """The step of the run's latest checkpoint, read from its state file (None: no checkpoint)."""
    from specflow.io.checkpoint import CheckpointManager

    latest = CheckpointManager(Path(logdir)).latest()
    if latest is None:
        return None
    m = re.search(r"-(\d+)$", str(latest))
    return int(m.group(1)) if m else None


def _uncleared(logdir: Path) -> list[str]:
    """The run files in ``logdir`` that ``clear`` leaves (symlinks, directories: not this run's
    to delete) but that would still make the logdir hold a run (a ``checkpoint`` state or event
    files), so the fresh trainer would refuse it after the old run's own files were gone."""
    return sorted(p.name for p in Path(logdir).iterdir()
                  if (p.name == "checkpoint" or p.name.startswith("events.out.tfevents."))
                  and (p.is_symlink() or not p.is_file()))


def clear(logdir: Path) -> list[str]:
    """Remove a previous run's files (``--overwrite``): checkpoints, state, events, run.json and
    eval/'s events; anything else in the logdir is the user's and stays."""
    removed = []
    for d in (Path(logdir), Path(logdir) / "eval"):
        if not d.is_dir() or d.is_symlink():  # eval/ linked elsewhere: not this run's to clear
            continue
        for p in d.iterdir():
            if p.is_file() and not p.is_symlink() and _RUN_FILE.match(p.name) and p.name != ".specflow.lock":
                p.unlink()
                removed.append(str(p))
    return removed


@dataclass
class TrainPlan:
    config: RunConfig  # the flags to train with
    resume: bool  # restore the latest checkpoint
    warnings: list[str] = field(default_factory=list)
    record: bool = False  # begin() must (re)write run.json; with fresh: after clearing the old run
    fresh: bool = False


def plan_train(spec: Path, logdir: Path, seed: int | None, sets: list[str] | None, *,
               resume: bool, force: bool, overwrite: bool) -> TrainPlan:
    """Decide what ``specflow train`` does with ``logdir``: start, continue or refuse. Changes
    nothing: ``begin`` does, once the spec has loaded."""
    from specflow.train.loop import has_run

    given = current(spec, seed, sets)
    logdir = Path(logdir)
    if overwrite and resume:
        raise TrainingError("--overwrite starts the run again and --resume continues it: give one")
    if force and not resume:
        raise TrainingError("--force applies to --resume (to resume with a differing --seed/--set); "
                            "to start the run again, use --overwrite")
    stored = read(logdir) if logdir.is_dir() and not overwrite else None  # --overwrite: even a torn one
    trained = latest_step(logdir) is not None if logdir.is_dir() else False
    if overwrite and logdir.is_dir() and (left := _uncleared(logdir)):
        # Checked before anything is removed: clearing the run's own files and then refusing
        # would lose the old run without starting the new one.
        raise TrainingError(f"--overwrite: {logdir} holds {', '.join(left)}, a symlink or directory that is not "
                            "this run's to remove; remove it yourself or choose another --logdir")
    if overwrite or not trained and (stored is not None or not has_run(logdir)):
        # Nothing trained yet (or a first step that failed): there is nothing to continue.
        if resume and stored is None:
            raise TrainingError(f"--resume: {logdir} holds no run to resume")
        config = merged(stored, given) if resume and stored is not None else given
        return TrainPlan(config, False, record=True, fresh=True)
    if stored is None:
        if resume:  # a run from before run.json existed: resume it with the flags given
            return TrainPlan(given, True)
        raise TrainingError(f"{logdir} already holds a training run (of unknown configuration); pass "
                            "--resume to continue it, --overwrite to start again, or choose another --logdir")
    diffs = differences(stored, given, inherit=resume)
    warnings = []
    if diffs:
        if not (resume and force):
            spec_changed = not stored.same_spec(given)
            if resume:
                fix = "pass --force to resume with the new value"
            elif spec_changed:  # --resume alone would refuse the changed spec too
                fix = "pass --resume --force to continue it with the changed spec, --overwrite to start again, " \
                      "or choose another --logdir"
            else:
                fix = "pass --resume to continue it with its own flags, --overwrite to start again, or choose another --logdir"
            raise TrainingError(f"{logdir} holds a run of another configuration: {'; '.join(diffs)}; {fix}")
        warnings = [f"{d}; resuming with the new value (--force)" for d in diffs]
    config = merged(stored, given) if resume else given
    return TrainPlan(config, True, warnings, record=bool(warnings))


def begin(logdir: Path, plan: TrainPlan) -> None:
    """Carry out ``plan``'s changes to the logdir, holding its lock (a live trainer refuses them)."""
    from specflow.train.logdir_lock import LogdirLock

    if not plan.record:
        return
    with LogdirLock(logdir):
        if plan.fresh:
            clear(logdir)
        write(logdir, plan.config)


@contextmanager
def begun(logdir: Path, plan: TrainPlan):
    """``begin(logdir, plan)`` around a run, undone if the run fails before it wrote anything
    but run.json into a logdir it made: a mistake found as training starts (a data file not
    found) leaves no half-made run behind. A run that got further keeps its events. A forced resume
with a changed spec or flags that fails before its first checkpoint puts the run's run.json back."""
    made = not Path(logdir).exists()
    path = Path(logdir) / FILENAME
    before = path.read_bytes() if plan.record and not plan.fresh and path.is_file() else None
    step = latest_step(logdir) if before is not None else None
    begin(logdir, plan)
    try:
        yield
    except BaseException:
        if before is not None and latest_step(logdir) == step:
            # A resume with a changed spec or flags (--force) that failed before it saved (the
            # checkpoint does not fit the changed spec): the run is still the one run.json named.
            from specflow.io.atomic_write import write_atomically

            with suppress(OSError):
                write_atomically(path, lambda f: f.write(before))
        if made:
            with suppress(OSError):
                if set(os.listdir(logdir)) <= {FILENAME, ".specflow.lock"}:
                    for name in (FILENAME, ".specflow.lock"):
                        with suppress(FileNotFoundError):
                            (Path(logdir) / name).unlink()
                    Path(logdir).rmdir()
        raise


def eval_config(spec: Path, logdir: Path, sets: list[str] | None,
                seed: int | None = None) -> tuple[RunConfig, list[str]]:
    """The flags ``specflow eval`` (and ``run --checkpoint``, which also takes ``--seed``)
    evaluates with: the training run's, unless given again with the same value (another value
    is an error: it would evaluate on another split). Returns warnings too (the spec changed
    since training)."""
    given = current(spec, seed, sets)
    stored = read(logdir) if Path(logdir).is_dir() else None
    if stored is None:
        return given, []
    diffs = differences(stored, given, inherit=True)
    flag_diffs = [d for d in diffs if d.startswith("--")]
    if flag_diffs:
        raise TrainingError(f"{logdir} was trained with other flags: {'; '.join(flag_diffs)}; leave them out "
                            "to evaluate with the run's own")
    return merged(stored, given), [d for d in diffs if not d.startswith("--")]
