"""Permission rules, the Bash reader that applies them to command lines, and folder trust."""
