#!/usr/bin/env bash
# Audit log: append one JSON line per hook event (tool calls, prompts, session
# start/end) to $CLAUDE_PROJECT_DIR/.audit.jsonl, or to $AUDIT_LOG (not under
# .claude/: agentloop runs a project's hooks in its sandbox, where .claude/ is read-only).
# A Claude Code hook: works unchanged with Claude Code and with agentloop.
# It never blocks; if it cannot write the log it says so on stderr (exit 1,
# a non-blocking error), unless configured with "onFailure": "block".
set -u
log="${AUDIT_LOG:-${CLAUDE_PROJECT_DIR:-.}/.audit.jsonl}"
mkdir -p "$(dirname "$log")" 2>/dev/null
event="$(cat)"
line="$(printf '%s' "$event" | python3 -c '
import json, sys, datetime
e = json.load(sys.stdin)
inp = e.get("tool_input") or {}
rec = {
    "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "session_id": e.get("session_id"),
    "event": e.get("hook_event_name"),
    "tool": e.get("tool_name"),
    "command": (inp.get("command") or "")[:500] if isinstance(inp, dict) else None,
    "file": inp.get("file_path") if isinstance(inp, dict) else None,
    "prompt": (e.get("prompt") or "")[:500] or None,
}
print(json.dumps({k: v for k, v in rec.items() if v is not None}))
')" || { echo "audit-log: could not parse the event" >&2; exit 1; }
printf '%s\n' "$line" >> "$log" || { echo "audit-log: cannot write $log" >&2; exit 1; }
exit 0
