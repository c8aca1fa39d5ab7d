"""Sessions and memory: the session transcripts, memory files, file checkpoints and rewind."""
