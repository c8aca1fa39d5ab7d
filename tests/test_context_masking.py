"""Old tool outputs are masked only as the context nears its limit, and a masked output stays readable.

Claude Code keeps tool results in context until the window fills, then compacts; a model
that loses an output it still needs must be able to get it back with Read (the
placeholder names a file in the session's tool-results folder, which Read may read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloop import Budget, TranscriptWriter, run
from agentloop.agent.context.compaction import Compactor
from agentloop.agent.tools.catalog import builtin_registry
from agentloop.agent.tools.workspace import Workspace
from agentloop.conversation import MASK_PREFIX, reapply
from agentloop.events import ModelReply, ModelRequest, ToolCall, Usage
from agentloop.testing import FunctionModel
from agentloop.transcript import read_records


def _files(ws: Path, n: int, size: int) -> list[str]:
    out = []
    for i in range(n):
        p = ws / f"f{i}.txt"
        p.write_text("".join(f"file {i} line {k} {'q' * 60}\n" for k in range(size // 70)))
        out.append(p.read_text())
    return out


def _session(tmp_path: Path, window: int, n: int = 8) -> tuple[list[list[str]], list[str], Any, Compactor]:
    """A model that Reads n files, one a turn; it returns what the tool messages held each turn."""
    ws = tmp_path / "ws"
    ws.mkdir()
    texts = _files(ws, n, 6000)
    spill = tmp_path / "session" / "tool-results"
    reg = builtin_registry(Workspace(str(ws)), spill_dir=str(spill))
    cm = Compactor(window=window, transcript_path=str(tmp_path / "t.jsonl"), spill_dir=str(spill), compact_at=2.0)
    seen: list[list[str]] = []

    def model(req: ModelRequest) -> ModelReply:
        seen.append([str(m["content"]) for m in req.messages if m["role"] == "tool"])
        k = len(seen) - 1
        if k < n:
            return ModelReply(text="", tool_calls=(ToolCall(f"c{k}", "Read", {"file_path": f"f{k}.txt"}),), usage=Usage(10, 5))
        return ModelReply(text="done", usage=Usage(10, 5))

    with TranscriptWriter(tmp_path / "t.jsonl") as w:
        r = run(FunctionModel(model, name="m"), reg, "read them", Budget(max_steps=20), transcript=w, prepare=cm.prepare)
    assert r.stop_reason == "no_tool_calls"
    return seen, texts, reg, cm


def test_nothing_is_masked_while_the_context_is_far_from_full(tmp_path: Path) -> None:
    seen, _, _, _ = _session(tmp_path, window=200_000)  # 8 outputs of 6 KB: about 7% of the window
    assert len(seen[-1]) == 8 and not any(c.startswith(MASK_PREFIX) for c in seen[-1])
    assert not [r for r in read_records(str(tmp_path / "t.jsonl")) if r.kind == "context"]


def test_near_the_limit_old_outputs_are_masked_and_read_back_from_the_file_named(tmp_path: Path) -> None:
    seen, texts, reg, cm = _session(tmp_path, window=16_000)  # 8 x 6 KB of output passes 65% of 16k tokens
    last = seen[-1]
    masked = [c for c in last if c.startswith(MASK_PREFIX)]
    assert masked and len(masked) <= 3 and not any(c.startswith(MASK_PREFIX) for c in last[-5:])
    for i, c in enumerate(last[: len(masked)]):
        path = c.split("; the whole output is saved in ", 1)[1].split(": Read it there", 1)[0]
        got = reg.invoke(ToolCall("r", "Read", {"file_path": path}))
        assert got.ok, got.error
        assert f"file {i} line 0 " in got.content and f"file {i} line 84 " in got.content  # the Read output, whole
    # resume and replay rebuild the same placeholders, file named included, from the records alone
    records = list(read_records(str(tmp_path / "t.jsonl")))
    msgs: list[Any] = [{"role": "tool", "tool_call_id": r.payload["call_id"], "content": r.payload["content"]}
                       for r in records if r.kind == "tool_result"]
    for rec in records:
        reapply(msgs, rec.kind, rec.payload)
    assert [m["content"] for m in msgs] == last
