"""The terminal agent: sessions, built-in tools, permissions, hooks, memory, context."""
