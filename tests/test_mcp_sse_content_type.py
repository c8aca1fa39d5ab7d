"""An SSE MCP server that answers without ``text/event-stream`` is agentloop's one line, not the SDK's traceback.

Claude Code MCP docs: an SSE server (``"type": "sse"``) streams Server-Sent
Events; a server that answers with anything else is a server that failed to
start, and that is what the user is told.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import http.server, threading
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html>a login page, not an event stream</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        do_POST = do_GET
        def log_message(self, *a): pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    from agentloop.mcp import McpManager, ServerConfig
    m = McpManager([ServerConfig("web", "sse", url=f"http://127.0.0.1:{srv.server_port}/sse")], environ={}, startup_timeout=60)
    try:
        m.tools()
        for st in m.status():
            print("STATUS", st.name, st.error)
    finally:
        m.close()
""")


def test_an_sse_server_answering_html_is_one_line_and_no_traceback(tmp_path: object) -> None:
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "SSEError" not in p.stderr, p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith("STATUS web")]
    assert "text/event-stream" in line and "text/html" in line
