"""``python -m agentloop``: the same command line as the ``agentloop`` script."""

from agentloop.cli.main import main

raise SystemExit(main())
