"""Batch runs: many tasks, local worker processes or a Ray cluster, one fleet budget.

``load_tasks`` reads and checks a task file; ``run_batch`` runs it into a
directory (transcripts, anchors, ``manifest.jsonl``, ``batch.anchor.json``);
``verify_batch`` checks such a directory from its files alone.
"""

from __future__ import annotations

from .ledger import FleetLedger, TaskLedger
from .runner import BatchReport, run_batch, sign_batch_anchor, verify_batch
from .tasks import DEFAULT_TOOLSETS, Task, TaskFileError, load_tasks, parse_tasks

__all__ = [
    "DEFAULT_TOOLSETS",
    "BatchReport",
    "FleetLedger",
    "Task",
    "TaskFileError",
    "TaskLedger",
    "load_tasks",
    "parse_tasks",
    "run_batch",
    "sign_batch_anchor",
    "verify_batch",
]
