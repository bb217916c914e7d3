"""Device names: ``/job:NAME/replica:N/task:N/device:TYPE:N``, every part optional.

Parsing, merging, matching and compatibility are pure functions on :class:`DeviceSpec`.
Short forms ``/cpu:0``, ``/gpu:1``, ``cpu:0`` and ``/device:GPU:*`` are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from specflow.errors import DeviceError

_PART = re.compile(r"^(job|replica|task|device):(.+)$|^(cpu|gpu):(\*|\d+)$", re.IGNORECASE)
_JOB_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DeviceSpec:
    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None  # upper case: "CPU", "GPU"
    device_index: int | None = None

    @classmethod
    def parse(cls, text: str) -> DeviceSpec:
        """Parse a full or partial device name; DeviceError explains what is malformed."""
        if text is None:
            return cls()
        s = text.strip()
        if not s:
            return cls()
        fields: dict = {}
        body = s[1:] if s.startswith("/") else s
        for part in body.split("/"):
            m = _PART.fullmatch(part)
            if not m:
                raise DeviceError(
                    f"malformed device '{text}': cannot parse '{part}' "
                    "(expected /job:NAME/replica:N/task:N/device:TYPE:N, e.g. /device:GPU:0 or /cpu:0)"
                )
            if m.group(3):  # cpu:0 / gpu:*
                cls._set(fields, "device_type", m.group(3).upper(), text)
                idx = m.group(4)
                cls._set(fields, "device_index", None if idx == "*" else int(idx), text)
                continue
            key, value = m.group(1).lower(), m.group(2)
            if key == "job":
                if not _JOB_NAME.fullmatch(value):
                    raise DeviceError(f"malformed device '{text}': bad job name '{value}'")
                cls._set(fields, "job", value, text)
            elif key in ("replica", "task"):
                if not value.isdigit():
                    raise DeviceError(f"malformed device '{text}': {key} must be a number, got '{value}'")
                cls._set(fields, key, int(value), text)
            else:  # device:TYPE:N or device:TYPE or device:TYPE:*
                tparts = value.split(":")
                if len(tparts) > 2 or not re.fullmatch(r"[A-Za-z_]+", tparts[0]):
                    raise DeviceError(f"malformed device '{text}': bad device '{value}'")
                cls._set(fields, "device_type", tparts[0].upper(), text)
                if len(tparts) == 2 and tparts[1] != "*":
                    if not tparts[1].isdigit():
                        raise DeviceError(f"malformed device '{text}': device index must be a number")
                    cls._set(fields, "device_index", int(tparts[1]), text)
        return cls(**fields)

    @staticmethod
    def _set(fields: dict, key: str, value, text: str) -> None:
        if key in fields and fields[key] != value:
            raise DeviceError(f"malformed device '{text}': {key} given twice")
        fields[key] = value

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            idx = "*" if self.device_index is None else str(self.device_index)
            out += f"/device:{self.device_type}:{idx}"
        return out

    __str__ = to_string

    @property
    def is_fully_specified(self) -> bool:
        return None not in (self.job, self.replica, self.task, self.device_type, self.device_index)

    def is_compatible_with(self, other: DeviceSpec) -> bool:
        """True when no field is set differently in the two specs."""
        for f in ("job", "replica", "task", "device_type", "device_index"):
            a, b = getattr(self, f), getattr(other, f)
            if a is not None and b is not None and a != b:
                return False
        return True

    def merge(self, other: DeviceSpec) -> DeviceSpec:
        """Fields of ``other`` fill or override ours (TF's DeviceSpec.make_merged_spec)."""
        updates = {
            f: getattr(other, f)
            for f in ("job", "replica", "task", "device_type", "device_index")
            if getattr(other, f) is not None
        }
        return replace(self, **updates)

    def matches(self, full: DeviceSpec) -> bool:
        """True when ``full`` (a concrete device) satisfies this (partial) constraint."""
        return self.is_compatible_with(full)

    def replace(self, **kw) -> DeviceSpec:
        return replace(self, **kw)


def canonical_device(text: str) -> str:
    """The canonical spelling of a device string (raises DeviceError if malformed)."""
    return DeviceSpec.parse(text).to_string()
