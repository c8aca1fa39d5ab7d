"""A held secret is redacted in the shapes a hex dump, a JSON or C escape and base32 give it, and variables that
hold a credential inside other text stay out of children.

The shapes (``agent/secret_shapes.py``): ``xxd``, ``hexdump -C`` and ``od -tx1`` print a file's bytes in hex with
spaces and offsets, 16 to a line, so a token read that way shows its hex by lines (each line holds a piece of it);
JSON writes a character as ``\\u0067`` and C as ``\\x67``, at will; ``base32`` shifts by five-byte groups. The
environment (``config/credentials.py``): a credential may sit inside a value whose name says nothing
(``GIT_CONFIG_VALUE_0=AUTHORIZATION: basic ...``, a connection string's ``Password=...;``), or under a name ending
``_PW`` or holding ``CRED``; each stays out of Bash, hooks and MCP servers unless ``allowedEnvVars`` names it.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox.child_env import Redactor, secret_env_values
from agentloop.config.credentials import child_environment
from agentloop.testing import ScriptedModel, reply

TOKEN = "ghp_R3dT0kenForTests0123456789abcdefXYZ"
MARK = "[redacted: GITHUB_TOKEN]"


def _shapes() -> dict[str, str]:
    raw = TOKEN.encode()
    out = {
        "JSON-escaped": "".join(f"\\u{ord(c):04x}" for c in TOKEN),
        "JSON-escaped, upper-case hex": "".join(f"\\u{ord(c):04X}" for c in TOKEN),
        "partly JSON-escaped": "\\u0067hp_" + TOKEN[4:],
        "C-escaped": "".join(f"\\x{b:02x}" for b in raw),
        "hex bytes apart": " ".join(f"{b:02x}" for b in raw),
        "hex in pairs": " ".join(raw.hex()[i:i + 4] for i in range(0, len(raw) * 2, 4)),
        "a 0x list": ", ".join(f"0x{b:02X}" for b in raw),
    }
    for k in range(5):
        out[f"base32 at offset {k}"] = base64.b32encode(b"a" * k + raw + b"tail").decode()
    return out


@pytest.mark.parametrize("shape", list(_shapes()))
def test_a_secret_escaped_or_dumped_is_redacted(shape: str) -> None:
    out = Redactor({"GITHUB_TOKEN": TOKEN}).text(f"before {_shapes()[shape]} after")
    assert MARK in out, (shape, out)
    assert out.startswith("before ") and out.endswith(" after"), out


def test_ordinary_hex_and_escapes_are_left_alone() -> None:
    """Negative control: hex, escapes and base32 of other text are not redacted."""
    r = Redactor({"GITHUB_TOKEN": TOKEN})
    other = b"an ordinary sentence of forty characters"
    for text in (" ".join(f"{b:02x}" for b in other), "".join(f"\\u{c:04x}" for c in other), base64.b32encode(other).decode()):
        assert r.text(text) == text


@pytest.mark.parametrize("dump", [["xxd"], ["xxd", "-g1"], ["hexdump", "-C"], ["od", "-An", "-tx1"]])
def test_a_dump_of_a_token_file_shows_no_line_of_its_hex(tmp_path: Path, dump: list[str]) -> None:
    """Each full line of the dump holds a piece of the token: no 10 bytes of it stay in hex or as text."""
    f = tmp_path / "tok.env"
    f.write_text(f"GITHUB_TOKEN={TOKEN}\n")
    try:
        shown = subprocess.run([*dump, str(f)], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        pytest.skip(f"{dump[0]} is not installed")
    out = Redactor({"GITHUB_TOKEN": TOKEN}).text(shown)
    assert MARK in out, out
    digits = "".join(c for c in out.lower() if c in "0123456789abcdef")
    for i in range(len(TOKEN) - 9):
        assert TOKEN[i:i + 10].encode().hex() not in digits, (TOKEN[i:i + 10], out)
        assert TOKEN[i:i + 10] not in out, out


def test_bash_printing_a_token_file_escaped_or_dumped_shows_none_of_it(tmp_path: Path) -> None:
    """Through the agent: ``xxd``, ``od``, ``base32``, JSON and C escapes of a file holding the user's token."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "tok.txt").write_text(TOKEN)
    cmd = ("xxd -g1 tok.txt; od -An -tx1 tok.txt; base32 tok.txt; "
           "python3 -c 'print(\"\".join(\"\\\\u%04x\" % ord(c) for c in open(\"tok.txt\").read()))'; "
           "python3 -c 'print(\"\".join(\"\\\\x%02x\" % b for b in open(\"tok.txt\",\"rb\").read()))'")
    model = ScriptedModel([reply("", [("Bash", {"command": cmd})]), reply("done")])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN}
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert out.count(MARK) >= 4, out
    digits = "".join(c for c in out.lower() if c in "0123456789abcdef")
    assert TOKEN[:10].encode().hex() not in digits and TOKEN[-10:].encode().hex() not in digits, out
    assert "\\u0067" not in out and "\\x67\\x68" not in out, out


CARRIERS = {
    "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0MTIz",
    "GIT_CONFIG_PARAMETERS": "'http.extraheader=Authorization: Bearer s3cr3tBearerValue'",
    "EXTRA_HEADERS": "Proxy-Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
    "CONNECTION_STRING": "Server=db;User Id=app;Password=conn-pass-123456;",
    "NETRC_TEXT": "machine example.com login bob password netrc-pass-123",
    "LDAP_BIND_PW": "ldap-pass-123456",
    "ARTIFACTORY_CREDS": "deployer:art-pass-123456",
}
KEPT = {"EDITOR": "vim", "DESCRIPTION": "a basic setup", "PWD": "/home/u/proj", "GIT_AUTHOR_NAME": "Bob",
        "PASSWORD_STORE_DIR_HINT_PATH": "/x", "LESS": "-R"}


def test_a_credential_inside_a_value_or_under_a_conventional_name_stays_out_of_children() -> None:
    env = child_environment({**CARRIERS, **KEPT})
    assert not set(CARRIERS) & set(env), env
    assert {k: env.get(k) for k in KEPT if k != "PASSWORD_STORE_DIR_HINT_PATH"} == {
        k: v for k, v in KEPT.items() if k != "PASSWORD_STORE_DIR_HINT_PATH"}
    assert child_environment(CARRIERS, allowed=["GIT_CONFIG_VALUE_0"]) == {"GIT_CONFIG_VALUE_0": CARRIERS["GIT_CONFIG_VALUE_0"]}
    held = secret_env_values(CARRIERS)  # allowed back in, each is redacted if printed
    assert set(CARRIERS.values()) <= set(held.values()), held


def test_a_call_that_would_send_a_held_secret_off_the_machine_is_refused(tmp_path: Path) -> None:
    """WebSearch's query and an MCP tool's arguments leave the machine, as WebFetch's URL does: a held secret in
    them, in any shape (base64, hex with spaces, %-encoded, JSON-escaped), refuses the call before it runs. The
    negative controls: the same tools with ordinary arguments run, and Bash (which stays here) is not refused."""
    import json

    from mcp_servers.helpers import PY, PYSERVER

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"py": {"command": PY, "args": [PYSERVER]}}}))
    shapes = [base64.b64encode(b"q=" + TOKEN.encode()).decode(), " ".join(f"{b:02x}" for b in TOKEN.encode()),
              "".join(f"%{b:02x}" for b in TOKEN.encode()), "\\u0067hp_" + TOKEN[4:]]
    calls = [("mcp__py__echo", {"text": f"note {s}"}) for s in shapes]
    calls += [("WebSearch", {"query": f"docs {shapes[0]}"}), ("mcp__py__echo", {"text": "plain words"}),
              ("Bash", {"command": "echo bash-ran"})]
    model = ScriptedModel([reply("", [c]) for c in calls] + [reply("done")])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN}
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions", trust=True)
    try:
        res = a.ask("go")
    finally:
        a.close()
    results = [str(m["content"]) for m in res.messages if m.get("role") == "tool"]
    assert len(results) == len(calls), results
    for r in results[:5]:
        assert "was not run: an argument holds a secret (GITHUB_TOKEN" in r, results
    assert "plain words" in results[5] and "bash-ran" in results[6], results


def test_a_background_commands_log_on_disk_holds_no_held_secret_even_printed_in_two_parts(tmp_path: Path) -> None:
    """A background command's output is written to its log (``tool-results/``) redacted, by whole lines, so a token
    printed in two writes a second apart is redacted whole on disk; ordinary output, and a last line without its
    newline, are written as printed (the negative control)."""
    import time

    from agentloop.agent.tools.background import BackgroundShells

    shells = BackgroundShells(str(tmp_path / "spill"))
    shells.redact = Redactor({"GITHUB_TOKEN": TOKEN}).text
    cmd = f"echo plain line; printf '%s' {TOKEN[:20]}; sleep 1; printf '%s\\n' {TOKEN[20:]}; printf 'no newline'"
    sid = shells.start(cmd, cwd=str(tmp_path), argv=["bash", "-c", cmd], env=None, launcher=None)
    deadline = time.monotonic() + 30
    while "running" in shells.output(sid).splitlines()[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    on_disk = (tmp_path / "spill" / f"background-{sid}.log").read_bytes()
    assert on_disk == f"plain line\n{MARK}\nno newline".encode(), on_disk
    shells.close()
