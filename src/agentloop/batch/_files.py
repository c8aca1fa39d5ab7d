"""A run's files in the batch directory, their anchors, and the batch anchor.

Layout of ``DIR``::

    runs/<name>.jsonl           a finished run's transcript (hash chain)
    runs/<name>.jsonl.anchor.json  its anchor (``agentloop.audit.anchor``): size, last hash, Merkle root
    runs/<name>.jsonl.partial.<pid>  a run in progress (or cut short); never trusted
    manifest.jsonl              one line per task, in task-file order
    ledger.jsonl                the fleet ledger's journal (``agentloop.batch.ledger``)
    batch.anchor.json           the Merkle root over the runs' leaves (below)

``<name>`` is the task id escaped (``file_stem``): lower-case letters, digits,
``_`` and ``-`` stay; every other character (``.``, capitals) becomes ``%XX``.
A stem therefore holds no dot, so the first dot of a file name ends the id's
part and no id can name another's transcript, anchor or partial file (``x``
and ``x.jsonl.partial.7`` are ``x.jsonl`` and ``x%2Ejsonl%2Epartial%2E7.jsonl``),
and ids differing only in case differ on case-blind file systems too. A stem
that would pass 160 bytes is cut and ends in ``~`` and 32 hex digits of the
id's SHA-256 (``~`` is never left as itself, so it cannot be forged).

A run is finished only when its transcript was renamed from ``.partial`` and
its anchor written; the rename is atomic, so a kill at any instant leaves
either a finished run or one that the next invocation redoes.

The batch anchor's leaves, in task-file order over runs with a transcript, are
the canonical JSON (RFC 8785) of ``{"id", "last_hash", "root", "size"}``:
its root is an RFC 9162 Merkle root, so one signature over the batch anchor
covers every run. Changing this layout changes every batch root.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from typing import Any

import orjson

from ..audit.anchor import Anchor, AnchorError, anchor_path_for
from ..audit.merkle import MerkleTree, merkle_root
from ..canonical import canonical
from ..transcript import verify_file

__all__ = ["ANCHOR_FORMAT", "Tree", "batch_leaf", "check_run", "merkle_root_hex", "paths", "run_anchor", "write_json_atomic"]

ANCHOR_FORMAT = 1


def Tree() -> MerkleTree:  # noqa: N802 - kept short: the batch's one kind of tree
    """A new incremental RFC 9162 Merkle tree, hung on a writer as a listener."""
    return MerkleTree()


def merkle_root_hex(leaves: Iterable[bytes]) -> str:
    return merkle_root(leaves).hex()


def run_anchor(tree: MerkleTree, last_hash: str) -> dict[str, Any]:
    """A run's anchor, in the format of ``agentloop anchor`` (``agentloop verify FILE --anchor``)."""
    return Anchor.from_tree(tree, last_hash).to_json()


def batch_leaf(task_id: str, anchor: dict[str, Any]) -> bytes:
    return canonical({"id": task_id, "last_hash": anchor["last_hash"], "root": anchor["root"], "size": anchor["size"]})


def write_json_atomic(path: str, obj: Any, *, fsync: bool = False) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)


def write_bytes_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
    os.replace(tmp, path)


_KEEP = re.compile(r"[^a-z0-9_-]")
_MAX_STEM = 160


def file_stem(task_id: str) -> str:
    """The part of a task's file names that stands for its id: one-to-one, dot-free (above)."""
    stem = _KEEP.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), task_id)
    if len(stem) > _MAX_STEM:
        stem = stem[: _MAX_STEM - 33] + "~" + hashlib.sha256(task_id.encode()).hexdigest()[:32]
    return stem


def transcript_name(task_id: str) -> str:
    """The transcript's path relative to ``DIR`` (as the manifest gives it)."""
    return os.path.join("runs", f"{file_stem(task_id)}.jsonl")


def paths(out_dir: str, task_id: str) -> tuple[str, str, str]:
    """The transcript, its anchor, and the in-progress file of a task (``.<pid>`` is added)."""
    base = os.path.join(out_dir, transcript_name(task_id))
    return base, anchor_path_for(base), f"{base}.partial"


def check_run(out_dir: str, task_id: str, digest: str) -> dict[str, Any] | None:
    """The facts of a finished run of this exact task, or None if it must be (re)done.

    Finished means: the transcript and its anchor exist, the chain verifies,
    the anchor matches the file (size, last hash, Merkle root), the last record
    is a ``stop`` other than ``interrupted``, and the run was of a task with
    this digest (an edited task is redone).
    """
    tpath, apath, _ = paths(out_dir, task_id)
    try:
        with open(apath, "rb") as f:
            anchor = Anchor.from_json(orjson.loads(f.read())).to_json()
        with open(tpath, "rb") as f:
            lines = f.read().split(b"\n")
    except (OSError, orjson.JSONDecodeError, AnchorError):
        return None
    if lines[-1] != b"":
        return None
    lines = lines[:-1]
    report = verify_file(tpath)
    if not report.ok or report.count != len(lines) or not lines:
        return None
    tree = Tree()
    for line in lines:
        tree.append(line)
    if anchor.get("size") != len(lines) or anchor.get("last_hash") != report.last_hash or anchor.get("root") != tree.root().hex():
        return None
    first = orjson.loads(lines[0])
    last = orjson.loads(lines[-1])
    if first.get("kind") != "run_start" or last.get("kind") != "stop":
        return None
    cfg = first["payload"].get("config", {}) if isinstance(first.get("payload"), dict) else {}
    meta = cfg.get("meta", {}) if isinstance(cfg, dict) else {}
    info = meta.get("batch", {}) if isinstance(meta, dict) else {}
    if not isinstance(info, dict) or info.get("task") != task_id or info.get("task_sha256") != digest:
        return None
    stop = last["payload"]
    if not isinstance(stop, dict) or stop.get("reason") == "interrupted":
        return None
    return {
        "stop_reason": stop.get("reason"),
        "spent_micros": int(stop.get("spent_micros", 0)),
        "tokens": int(stop.get("tokens", 0)),
        "steps": int(stop.get("steps", 0)),
        "error": stop.get("error"),
        "records": len(lines),
        "root": anchor["root"],
        "last_hash": report.last_hash,
        "attempt": int(info.get("attempt", 1)),
        "retried": bool(info.get("retried", int(info.get("attempt", 1)) > 1)),
        "refused": any(b'"kind":"ledger_refusal"' in line for line in lines[-3:]),
    }


def partials_by_stem(out_dir: str) -> dict[str, list[str]]:
    """The ``.partial.<pid>`` files in ``runs/``, by file stem: one listing for the whole batch."""
    runs = os.path.join(out_dir, "runs")
    found: dict[str, list[str]] = {}
    try:
        names = os.listdir(runs)
    except OSError:
        return found
    for name in names:
        stem, _, rest = name.partition(".")
        if rest.startswith("jsonl.partial.") and rest[14:].isdigit():
            found.setdefault(stem, []).append(os.path.join(runs, name))
    return found


def partial_spend(paths: list[str]) -> tuple[int, int]:
    """Spend and tokens recorded by attempts that were cut short (their last ``budget``
    records), whose files are then removed: the task is about to be redone."""
    total = total_tokens = 0
    for path in paths:
        spent = tokens = 0
        try:
            with open(path, "rb") as f:
                for line in f:
                    if b'"kind":"budget"' not in line:
                        continue
                    try:
                        rec = orjson.loads(line)
                        spent = int(rec["payload"]["spent_micros"])
                        tokens = int(rec["payload"]["tokens"])
                    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                        continue
            os.remove(path)
        except OSError:
            pass
        total += spent
        total_tokens += tokens
    return total, total_tokens


def remove_partials(out_dir: str, task_id: str) -> None:
    """Remove this task's ``.partial.<pid>`` files, and no other task's."""
    for path in partials_by_stem(out_dir).get(file_stem(task_id), []):
        try:
            os.remove(path)
        except OSError:
            pass


def write_run_anchor(path: str, anchor: dict[str, Any]) -> None:
    """The same bytes as ``anchor.write_anchor``, renamed into place, without its fsync:
    the transcripts are flushed, not fsynced, so a kill loses neither and a power cut
    may lose both (the run is then redone)."""
    write_bytes_atomic(path, canonical(Anchor.from_json(anchor).to_json()) + b"\n")
