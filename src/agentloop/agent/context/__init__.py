"""Context management: compaction, and the runtime's own budgeted model calls (summaries, loop checks)."""
