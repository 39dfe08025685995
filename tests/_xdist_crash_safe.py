"""pytest-xdist's ``--dist loadgroup`` scheduler, made safe when a worker crashes.

xdist 3.8.0 (the newest release on PyPI) hangs for ever after a worker dies under ``loadgroup``
(pytest-dev/pytest-xdist#1323, #1327, #1363; the fixes are merged but not released):

- ``remove_node`` puts the dead worker's whole workload back on the queue, finished groups
  included; a finished group is then sent as an empty batch that never completes;
- a replacement worker that gets the last group is never told to shut down, so it waits for
  a next test that never comes and does not run the one it holds;
- the test the worker died on is run again (pytest-dev/pytest-xdist#1371), and a test that kills
  its interpreter kills the replacement too.

CI then stops at its time limit with no summary, as it did once at 99 % of this suite. This
scheduler fixes the three: the test that crashed is reported failed once (xdist's
``handle_crashitem``) and not rerun, only groups with tests left go back on the queue, and a
worker that gets the last of the work is told to finish."""
from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling


class CrashSafeLoadGroupScheduling(LoadGroupScheduling):
    def remove_node(self, node):
        workload = self.assigned_work.pop(node)
        pending = [(scope, unit) for scope, unit in workload.items() if not all(unit.values())]
        if not pending:
            return None
        crashitem = next(nodeid for _, unit in pending for nodeid, done in unit.items() if not done)
        for scope, unit in pending:
            if crashitem in unit:
                unit[crashitem] = True  # reported failed by xdist; run again it would crash again
            if not all(unit.values()):
                self.workqueue[scope] = unit
                self.workqueue.move_to_end(scope, last=False)  # the interrupted group goes next
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem

    def _reschedule(self, node) -> None:
        super()._reschedule(node)
        if not self.workqueue and not node.shutting_down:
            node.shutdown()  # it holds the last of the work: let it run its final test and finish
