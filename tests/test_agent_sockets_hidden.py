"""The user's key agents are out of reach of sandboxed commands wherever they listen.

Removing ``SSH_AUTH_SOCK`` from a command's environment does not stop a command that knows the path: an agent
listening in a folder the sandbox shows (``/var/tmp``, a project folder, an added directory) answered a
sandboxed ``connect``. The sockets and ticket caches the environment names (``SSH_AUTH_SOCK``,
``GPG_AGENT_INFO``, ``GNOME_KEYRING_CONTROL``, ``DOCKER_HOST=unix://``, ``KRB5CCNAME=FILE:``) are now hidden.

Claude Code's sandboxing page (https://code.claude.com/docs/en/sandboxing, "Network isolation" and
"Security limitations"): Unix sockets such as the Docker socket can grant access beyond the sandbox, so they
are reachable only when the user allows them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from _plantkit import planting_ground, sandboxed
from agentloop.agent.sandbox import bubblewrap as sbx

_path, _why = sbx.probe()
needs_sandbox = pytest.mark.skipif(_path is None and os.environ.get("AGENTLOOP_REQUIRE_SANDBOX") != "1",
                                   reason=f"no sandbox here: {_why}")

CONNECT = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('CONNECTED', sys.argv[1])"


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from planting_ground(monkeypatch, "agentloop-sock-test-")


def listening(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen(4)
    return s


@needs_sandbox
def test_an_agent_socket_named_by_the_environment_cannot_be_reached_where_the_sandbox_shows_its_folder(place: Path) -> None:
    agents = {"SSH_AUTH_SOCK": place / "ssh-agent.sock", "GPG_AGENT_INFO": place / "S.gpg-agent",
              "DOCKER_HOST": place / "docker.sock"}
    other = place / "proj" / "app.sock"  # negative control: a socket nothing names is the project's own
    socks = [listening(p) for p in [*agents.values(), other]]
    env = {"SSH_AUTH_SOCK": str(agents["SSH_AUTH_SOCK"]), "GPG_AGENT_INFO": f"{agents['GPG_AGENT_INFO']}:0:1",
           "DOCKER_HOST": f"unix://{agents['DOCKER_HOST']}"}
    (place / "proj" / "c.sh").write_text("".join(f"python3 -c \"{CONNECT}\" {p} 2>&1 | tail -1\n"
                                                 for p in [*agents.values(), other]))
    try:
        (out,) = sandboxed(place, ["bash c.sh"], env)
    finally:
        for s in socks:
            s.close()
    assert f"CONNECTED {other}" in out, out
    reached = [k for k, p in agents.items() if f"CONNECTED {p}" in out]
    assert not reached, f"reachable from the sandbox: {reached}"


def test_the_paths_the_environment_names_for_agents() -> None:
    env = {"SSH_AUTH_SOCK": "/a/s", "GPG_AGENT_INFO": "/b/S.gpg-agent:123:1", "DOCKER_HOST": "unix:///c/d.sock",
           "KRB5CCNAME": "FILE:/e/krb5cc", "GNOME_KEYRING_CONTROL": "/f/keyring", "PATH": "/usr/bin"}
    assert sbx.agent_socket_paths(env) == ["/a/s", "/b/S.gpg-agent", "/c/d.sock", "/e/krb5cc", "/f/keyring"]
    assert sbx.agent_socket_paths({"DOCKER_HOST": "tcp://h:2375", "KRB5CCNAME": "KCM:", "SSH_AUTH_SOCK": "rel"}) == []
