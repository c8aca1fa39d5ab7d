"""An editor's side of ACP made with the protocol's TypeScript SDK (``drive.mjs``), and the schema check of every message."""
