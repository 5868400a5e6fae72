"""The crash-exploration engine: run an agent crash-free, crash it at its fault points (one by one, or in
schedules), recover, and judge what came out against durable execution's invariants (spec REC-*, PLG-*).

It imports no pytest: the pytest plugin (``pytest_durable``), the ``durable`` command and the conformance kit
all drive this one engine. Modules, bottom up:

* ``scenario``: a crash scenario (a schedule of :class:`~reference_runtime.CrashAt` selectors, a mismatch mode,
  reconcilers on or off);
* ``ledger``: the side-effect ledger (PLG-3); ``world``: fakes made fresh for every run (PLG-8);
  ``journal``: golden journals (PLG-2); ``clock``: freezegun virtual time (PLG-6);
* ``verdict``: what a crash run must keep against the crash-free run (REC-3, REC-4, REC-6, PLG-3);
* ``snapshot_start``: sweep scenarios started from snapshots of the crash-free run (PLG-16, PLG-17);
* ``sweep``: learn the fault points, run scenarios through any runner, sweep every point;
* ``strategies``: Hypothesis strategies of crash schedules (PLG-5; Hypothesis is imported only by it);
* ``harness``: :class:`~reference_runtime.exploration.harness.DurableHarness`, what the ``durable`` fixture
  hands a test; ``stats``: its per-test counters; ``fresh_process``: runs in new interpreters (PLG-2).

Nothing is imported here: ``import reference_runtime.exploration.sweep`` loads what a sweep needs and no more.
"""
