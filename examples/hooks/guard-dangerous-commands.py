#!/usr/bin/env python3
"""PreToolUse guard: deny Bash commands that destroy data or pipe the network into a shell.

A Claude Code hook (matcher "Bash"): works unchanged with Claude Code and with
agentloop. It answers with hookSpecificOutput.permissionDecision "deny" and a
reason the model reads; anything else it lets through without a decision, so
the normal permission rules still apply.
"""
import json
import re
import sys

DANGEROUS = [
    (r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*\s+-?[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*\s+-?[a-zA-Z]*[rR]|-[a-zA-Z]*[rR][a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*[rR])[a-zA-Z]*\s+(/|~|\$HOME|\*|\.)(\s|$)",
     "recursive forced delete of /, ~, . or *"),
    (r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da)?sh\b", "piping a download into a shell"),
    (r"\bmkfs(\.\w+)?\b", "formatting a filesystem"),
    (r"\bdd\b[^;&|]*\bof=/dev/(sd|nvme|hd|disk)", "writing raw to a disk device"),
    (r":\(\)\s*\{\s*:\|:&\s*\};:", "a fork bomb"),
    (r"\bgit\s+push\b[^;&|]*(--force\b|-f\b)[^;&|]*\b(main|master)\b", "force-pushing main/master"),
    (r"\bchmod\s+(-R\s+)?0?777\s+/(\s|$)", "making / world-writable"),
]


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except ValueError:
        print("guard: the event on stdin is not JSON", file=sys.stderr)
        return 1
    if event.get("tool_name") != "Bash":
        return 0
    command = (event.get("tool_input") or {}).get("command", "")
    if not isinstance(command, str):
        return 0
    for pattern, what in DANGEROUS:
        if re.search(pattern, command):
            json.dump(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": f"Blocked by guard-dangerous-commands: {what}. Find a safer command.",
                    }
                },
                sys.stdout,
            )
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
