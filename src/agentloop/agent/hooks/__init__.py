"""Hooks in Claude Code's protocol: running them, their payloads, and Stop hooks that keep a turn going."""
