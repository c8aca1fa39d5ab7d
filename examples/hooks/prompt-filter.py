#!/usr/bin/env python3
"""UserPromptSubmit filter: refuse prompts that carry secrets; remind of a policy otherwise.

A Claude Code hook: works unchanged with Claude Code and with agentloop. A
prompt holding something that looks like a key or a private key is refused
with decision "block" (the prompt is erased, the reason shown to the user);
a prompt that mentions production gets a reminder added to the model's context.
"""
import json
import re
import sys

SECRETS = [
    (r"\bsk-(ant-)?[A-Za-z0-9_\-]{20,}", "an API key"),
    (r"\bAKIA[0-9A-Z]{16}\b", "an AWS access key id"),
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "a private key"),
    (r"\bgh[pousr]_[A-Za-z0-9]{36,}\b", "a GitHub token"),
]


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except ValueError:
        print("prompt-filter: the event on stdin is not JSON", file=sys.stderr)
        return 1
    prompt = event.get("prompt", "")
    if not isinstance(prompt, str):
        return 0
    for pattern, what in SECRETS:
        if re.search(pattern, prompt):
            json.dump({"decision": "block", "reason": f"The prompt looks like it contains {what}; it was not sent. Remove the secret and try again."}, sys.stdout)
            return 0
    if re.search(r"\bprod(uction)?\b", prompt, re.I):
        json.dump(
            {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "Policy: never run commands against production from this session; propose them instead.",
                }
            },
            sys.stdout,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
