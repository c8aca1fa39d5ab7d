"""A held secret is caught in the shapes a command or a URL gives it, everywhere it could leave.

Shapes: as is, reversed (``rev``), base64 at each of the three byte offsets
and its URL-safe alphabet, wrapped at 76 columns as ``base64`` prints it, hex in
either case (``xxd -p``, wrapped), %-encoded wholly or partly (``%67hp_...``).
Where: tool output (real Bash), the URL WebFetch is asked to open (refused
before anything is sent), an image block Read builds from a file with image
magic (judged by its bytes). And the variables that carry credentials by
convention stay out of children unless ``allowedEnvVars`` names them.
Negative controls: text that only resembles a secret is left alone.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.agent import Agent
from agentloop.agent.sandbox.child_env import Redactor, secret_env_values
from agentloop.agent.secret_shapes import PIECE
from agentloop.config.credentials import child_environment
from agentloop.testing import ScriptedModel, reply

TOKEN = "ghp_R3dT0kenForTests0123456789abcdefXYZ"
MARK = "[redacted: GITHUB_TOKEN]"
OTHER = "s3cr3t>>>???~~~>>>???~~~end"


def _shapes(secret: str) -> dict[str, str]:
    raw = secret.encode()
    out = {"plain": secret, "reversed": secret[::-1], "hex": raw.hex(), "HEX": raw.hex().upper(),
           "url-encoded": "".join(f"%{b:02x}" for b in raw), "partly %-encoded": "%67" + secret[1:],
           "quote_plus": urllib.parse.quote_plus(secret + " x"),
           "wrapped base64": base64.encodebytes(b"A" * 50 + raw).decode(),
           "wrapped hex": "\n".join((b"Q" * 7 + raw).hex()[i:i + 60] for i in range(0, 100, 60))}
    for k, pre in enumerate((b"", b"a", b"ab")):
        out[f"base64 at offset {k}"] = base64.b64encode(pre + raw + b"tail").decode()
        out[f"url-safe base64 at offset {k}"] = base64.urlsafe_b64encode(pre + b"\xfb\xff" + raw).decode()
    return out


@pytest.mark.parametrize("shape", list(_shapes(TOKEN)))
def test_each_shape_of_a_held_secret_is_redacted(shape: str) -> None:
    text = f"before {_shapes(TOKEN)[shape]} after"
    out = Redactor({"GITHUB_TOKEN": TOKEN}).text(text)
    assert MARK in out, (shape, out)
    assert out.startswith("before ") and out.endswith(" after")


def test_what_only_resembles_a_secret_is_left_alone() -> None:
    r = Redactor({"GITHUB_TOKEN": TOKEN})
    other = "ghp_AnotherTokenEntirely9876543210fedcba"  # shares no run of PIECE characters with TOKEN
    for text in (other, base64.b64encode(other.encode()).decode(), other.encode().hex(), TOKEN[:PIECE - 1],
                 TOKEN[10:19] + " " + TOKEN[19:28], "%67%68%70 plain"):
        assert r.text(text) == text


@pytest.mark.parametrize("cut", [(0, 20), (20, None), (5, 15), (13, 30), (len(TOKEN) - PIECE, None)])
def test_a_piece_of_a_held_secret_is_redacted_with_the_run_around_it(cut: tuple[int, int | None]) -> None:
    """``cut -c``/``head -c``/a slice: PIECE characters of the secret in one run are the secret, and the
    whole run of word characters around them goes (a half glued to other text shows no part of itself)."""
    piece = TOKEN[cut[0]:cut[1]]
    for text in (f"x {piece} y", f"x zz{piece}zz y", f"x {piece}\n{TOKEN[::-1][:3]} y"):
        out = Redactor({"GITHUB_TOKEN": TOKEN}).text(text)
        assert MARK in out and piece not in out, (text, out)
        assert out.startswith("x ") and out.rstrip().endswith("y"), out
        assert "zz" not in out  # the run holding the piece went whole


def test_an_ordinary_word_inside_a_held_value_is_not_redacted_elsewhere() -> None:
    r = Redactor({"DB_PASSWORD": "password-Horse-battery-staple-42"})
    text = "the password field, a Horse, battery-staple, 42"
    assert r.text(text) == text
    assert r.text("x password-Horse-battery y") == "x [redacted: DB_PASSWORD] y"


def test_a_secret_that_is_a_files_path_is_redacted_whole_but_not_by_its_pieces() -> None:
    """``GOOGLE_APPLICATION_CREDENTIALS`` names a key file: the path itself is held, but the folders in it are
    in every path beside it (``HOME``, the workspace), which must stay readable."""
    path = "/tmp/pytest-of-root/pytest-12/test_x0/creds.json"
    r = Redactor({"GOOGLE_APPLICATION_CREDENTIALS": path})
    beside = "HOME=/tmp/pytest-of-root/pytest-12/test_x0/home"
    assert r.text(beside) == beside
    assert r.text(f"key at {path}") == "key at [redacted: GOOGLE_APPLICATION_CREDENTIALS]"


def test_redaction_stays_linear_on_ten_megabytes() -> None:
    secrets = {f"K{i}_TOKEN": f"tok_{i:02d}_" + os.urandom(16).hex() for i in range(20)}
    r = Redactor(secrets)
    line = os.urandom(2000).hex() + "\n" + "%41 some words and %2F percent signs 0123456789abcdef\n" * 40
    big = (line * ((10 << 20) // len(line) + 1))[: 10 << 20]
    hit = base64.b64encode(b"x" + secrets["K7_TOKEN"].encode()).decode()
    big = big[: 5 << 20] + hit + big[5 << 20 :]
    t0 = time.process_time()
    out = r.text(big)
    took = time.process_time() - t0
    assert "[redacted: K7_TOKEN]" in out and hit not in out
    assert took < 3.0, f"10 MB took {took:.2f} s of CPU"


def test_bash_printing_a_token_file_in_every_shape_shows_none_of_them(tmp_path: Path) -> None:
    """The red team's reads: a token in a file, printed through base64, xxd, rev, od-free hex and a URL quote."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "tok.txt").write_text(TOKEN)
    cmd = ("base64 tok.txt; base64 -w0 <(printf x; cat tok.txt); echo; xxd -p tok.txt; rev tok.txt; echo; "
           "cut -c1-19 tok.txt; cut -c20- tok.txt; head -c 12 tok.txt; echo; "
           "python3 -c 'import urllib.parse;print(urllib.parse.quote(open(\"tok.txt\").read(), safe=\"\"))'; "
           "python3 -c 'import base64;print(base64.urlsafe_b64encode(b\"ab\"+open(\"tok.txt\",\"rb\").read()).decode())'")
    model = ScriptedModel([reply("", [("Bash", {"command": cmd})]), reply("done")])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN}
    a = Agent(cwd=str(proj), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
    out = str([m for m in res.messages if m.get("role") == "tool"][0]["content"])
    assert out.count(MARK) >= 9, out
    for name, shape in {**_shapes(TOKEN), "first cut": TOKEN[:19], "second cut": TOKEN[19:]}.items():
        assert shape.strip() not in out, name


class _Server(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        _Server.seen.append(self.path)
        body = b"hello"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: Any) -> None:
        pass


def test_webfetch_refuses_a_url_holding_a_secret_in_any_shape(tmp_path: Path) -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    b64 = base64.b64encode(b"k=" + TOKEN.encode()).decode()
    b64_2 = base64.b64encode(b"k=" + OTHER.encode()).decode()  # "+" and "/" in it, %-encoded in the query
    urls = [f"{base}/a?t={urllib.parse.quote(b64, safe='')}", f"{base}/b?t=%67{TOKEN[1:]}",
            f"{base}/c?t={TOKEN.encode().hex()}", f"{base}/d?t={TOKEN[::-1]}",
            f"{base}/e?t={urllib.parse.quote(b64_2, safe='')}", f"{base}/fine?q=weather"]
    model = ScriptedModel([reply("", [("WebFetch", {"url": u, "prompt": "p"}) for u in urls]), reply("done")])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN, "SERVICE_TOKEN": OTHER}
    a = Agent(cwd=str(tmp_path), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions")
    try:
        res = a.ask("go")
    finally:
        a.close()
        srv.shutdown()
    tools = [m for m in res.messages if m.get("role") == "tool"]
    assert [t["ok"] for t in tools] == [False, False, False, False, False, True], tools
    assert all("holds a secret" in str(t["content"]) for t in tools[:5])
    assert _Server.seen == ["/fine?q=weather"]  # nothing else reached the server


def test_an_image_whose_bytes_hold_a_secret_is_withheld(tmp_path: Path) -> None:
    """Read returns a file with PNG magic as an image block; its bytes, not its header, decide."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    (tmp_path / "leak.png").write_bytes(png + f"GITHUB_TOKEN={TOKEN}\n".encode())
    (tmp_path / "fine.png").write_bytes(png + b"just pixels")
    model = ScriptedModel([reply("", [("Read", {"file_path": "leak.png"}), ("Read", {"file_path": "fine.png"})]), reply("done")])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN}
    a = Agent(cwd=str(tmp_path), home=str(tmp_path / "al"), env=env, model=model)
    try:
        res = a.ask("go")
    finally:
        a.close()
    leak, fine = [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"], separators=(",", ":"))
                  for m in res.messages if m.get("role") == "tool"]
    assert "image withheld" in leak and '"type":"image"' not in leak, leak
    assert base64.b64encode(TOKEN.encode()).decode()[:20] not in leak
    assert '"type":"image"' in fine, fine


CONVENTIONAL = {"MYSQL_PWD": "mysql-pass-123456", "GH_PAT": "github_pat_0123456789", "SMTP_PASS": "smtp-pass-123456",
                "NPM_AUTH": "npm-auth-0123456789", "DATABASE_URL": "postgres://app:db-pass-123456@db:5432/app",
                "HTTPS_PROXY": "http://proxyuser:proxy-pass-123456@proxy:3128", "BASIC_AUTH_USER": "someone",
                "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwcm9qZWN0In0.c2lnbmF0dXJl", "SESSION_COOKIE": "sid=0123456789",
                "SLACK_WEBHOOK_URL": "https://hooks.example/services/T0/B0/0123456789",
                "SENTRY_DSN": "https://0123456789abcdef0123@o1.ingest.example/1",
                "BUILD_HELPER": "ghp_R3dT0kenForTests0123456789abcdefXYZ",  # a credential by its shape, whatever its name
                "DEPLOY_NOTE": "eyJhbGciOiJIUzI1NiJ9.eyJhIjoiYmJiYmJiYiJ9.x"}
ORDINARY = {"PWD": "/work", "GIT_AUTHOR_NAME": "Ann", "SSH_AUTH_SOCK": "/run/agent.sock", "PATH": "/usr/bin",
            "REDIS_URL": "redis://cache:6379/0", "BYPASS_CACHE": "1", "https_proxy": "http://proxy:3128",
            "REPO_URL": "ssh://git@github.com/o/r.git", "XDG_SESSION_ID": "3", "SKETCH": "sk-short"}


def test_variables_carrying_credentials_by_convention_stay_out_of_children() -> None:
    env = child_environment({**CONVENTIONAL, **ORDINARY})
    assert not set(CONVENTIONAL) & set(env), env
    assert {k: env.get(k) for k in ORDINARY} == ORDINARY
    assert child_environment(CONVENTIONAL, allowed=["MYSQL_PWD", "DATABASE_URL"]) == {
        "MYSQL_PWD": CONVENTIONAL["MYSQL_PWD"], "DATABASE_URL": CONVENTIONAL["DATABASE_URL"]}
    held = secret_env_values(CONVENTIONAL)
    assert "db-pass-123456" in held.values() and "proxy-pass-123456" in held.values()  # redacted if printed
    assert "mysql-pass-123456" in held.values() and "github_pat_0123456789" in held.values()
    assert "0123456789abcdef0123" in held.values()  # the DSN's key, redacted on its own if printed
    assert CONVENTIONAL["BUILD_HELPER"] in held.values() and CONVENTIONAL["DEPLOY_NOTE"] in held.values()


def test_bash_does_not_inherit_them(tmp_path: Path) -> None:
    names = "|".join([*CONVENTIONAL, *ORDINARY])
    model = ScriptedModel([reply("", [("Bash", {"command": f"env | grep -E '^({names})=' | cut -d= -f1 | sort | tr '\\n' ' '; echo END"})]),
                           reply("done")])
    env = {**CONVENTIONAL, **ORDINARY, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    a = Agent(cwd=str(tmp_path), home=str(tmp_path / "al"), env=env, model=model, permission_mode="bypassPermissions",
              sandbox="danger-full-access")
    try:
        res = a.ask("go")
    finally:
        a.close()
    seen = str([m for m in res.messages if m.get("role") == "tool"][0]["content"]).split()
    assert not set(CONVENTIONAL) & set(seen), seen
    assert {"GIT_AUTHOR_NAME", "REDIS_URL", "https_proxy"} <= set(seen), seen
