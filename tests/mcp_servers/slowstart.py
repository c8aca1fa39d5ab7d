"""pyserver.py after a delay: an MCP server that takes ``argv[1]`` seconds to start."""

import runpy
import sys
import time
from pathlib import Path

time.sleep(float(sys.argv[1]))
runpy.run_path(str(Path(__file__).with_name("pyserver.py")), run_name="__main__")
