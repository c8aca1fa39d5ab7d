"""The ``agentloop`` command. Subcommands live in ``cmd_<name>.py`` modules."""
