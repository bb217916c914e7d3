"""The chief prepares the model; the other replicas wait until it is ready (TF's SessionManager).

- ready check: one ``VarIsInitializedOp`` per variable (checkpointed variables, optimizer slots,
  sync's gradient slots and tags), each placed with its variable on its ps task; a replica
  fetches them all in one step, and the names of the false ones are what TF's
  ``report_uninitialized_variables`` reports. The model is ready when that list is empty.
- prepare (the chief, ``prepare_session``): with a checkpoint, restore it (every checkpointed
  variable assigned on its own ps, ``sharded_checkpoint.py``), then initialize only the
  variables no checkpoint holds (sync's slots: TF's ``local_init_op``); without one, the init op.
  Restore writes each variable's final value directly and the rest are initialized after it, so
  "every variable initialized" means the chief is done: a replica never starts on initial
  values a restore is about to overwrite.
- wait (every replica before its first step, and again after a recovery): poll the check with a
  short backoff (2 ms doubling to 50 ms), so the wait ends within one poll of the chief's last
  assignment rather than after TF's fixed 30 s ``recovery_wait_secs``. A ps that was lost and
  recreated has no variables: the check fails again until the chief restored them.
"""

from __future__ import annotations

import time

from specflow.errors import RuntimeFailure

FIRST_POLL_S, MAX_POLL_S = 0.002, 0.05


class Readiness:
    def __init__(self, b, variables, local=()):
        """``variables``: every VariableInfo a step needs; ``local``: those no checkpoint holds
        (initialized after a restore)."""
        self.names = [v.name for v in variables]
        with b.root_scope(), b.no_control_dependencies(), b.name_scope("ready"):
            self.flags = [b.add_op("VarIsInitializedOp", [v.handle], name=f"{v.name}/is_initialized").name
                          for v in variables]
            self.local_init = (b.add_op("NoOp", [], name="local_init", control_inputs=[v.assign for v in local]).name
                               if local else None)  # fmt: skip

    def uninitialized(self, session) -> list[str]:
        """The variables not initialized yet (all of them on a fresh or recreated ps)."""
        flags = session.run(self.flags)
        return [n for n, ok in zip(self.names, flags) if not bool(ok)]

    def prepare(self, session, init_op: str, restore=None) -> None:
        """The chief's half: ``restore(session)`` (a checkpoint's restore) then the local init,
        or the init op when there is nothing to restore."""
        if restore is None:
            session.run([], targets=[init_op])
            return
        restore(session)
        if self.local_init is not None:
            session.run([], targets=[self.local_init])

    def wait(self, session_of, stop=None, timeout_s: float | None = None) -> float:
        """Block until the model is ready; returns the seconds waited. ``session_of()`` gives the
        replica's current session (recovery may replace it); ``stop`` (an Event) ends the wait
        early. A failed check (a task lost) raises, for the caller to recover as from a step."""
        t0 = time.monotonic()
        poll = FIRST_POLL_S
        while True:
            if not self.uninitialized(session_of()):
                return time.monotonic() - t0
            if stop is not None and stop.is_set():
                return time.monotonic() - t0
            if timeout_s is not None and time.monotonic() - t0 > timeout_s:
                raise RuntimeFailure(f"the model was not ready after {timeout_s:g}s (the chief has not "
                                     "initialized or restored the variables)")  # fmt: skip
            time.sleep(poll)
            poll = min(poll * 2, MAX_POLL_S)
