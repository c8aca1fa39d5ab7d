"""Permission rules, and the Bash reader that applies them to command lines."""
