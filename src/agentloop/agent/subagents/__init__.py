"""Sub-agents: Claude Code's Agent tool, a child run under the parent's budget."""
