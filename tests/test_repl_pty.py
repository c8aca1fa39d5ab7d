"""The REPL driven in a pseudo-terminal as a person would, against the local fake provider.

pexpect gives the program a real pty; pyte renders what it draws (and answers
its cursor-position queries, as a terminal does); the assertions read the
screen.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from agentloop.agent.session.store import sessions_dir
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records, verify_file

sys.path.insert(0, os.path.dirname(__file__))
from _pty import AGENTLOOP, Term, env_for  # noqa: E402

PROMPT = r"(?m)^>\s*$"


@pytest.fixture()
def proj(proj):  # type: ignore[no-untyped-def]
    """The shared project folder (conftest.py) with one small file."""
    (proj / "hello.txt").write_text("greetings from hello.txt\n")
    return proj


def model_args(fp: FakeProvider) -> list[str]:
    return ["--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1"]


def user_texts(body: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


def test_a_session_typed_at_the_prompt_streams_runs_tools_and_survives_ctrl_c_and_resume(tmp_path, proj):
    home = str(tmp_path / "home")
    script = {"replies": [
        {"text": "Let me check the greeting file for you.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}],
         "chunk_size": 4, "chunk_delay": 0.4},
        {"text": "The file greets you.", "chunk_size": 6},
        {"text": "Sleeping now.", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "Welcome back, the greeting was read earlier."},
    ]}
    with FakeProvider(script) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(r"new session (\d{8}-\d{6}-[0-9a-f]{6})")
            sid = re.search(r"new session (\S+)", t.text()).group(1)  # type: ignore[union-attr]
            t.wait_for(PROMPT)
            t.wait_for(r"openai:gpt-4o-mini · 0 in / 0 out · context 0% · \$0\.000000 / \$5\.000000 \(0%\) · session " + sid)  # status bar, default cap

            # A prompt: the answer appears piece by piece, then the tool call, then the rest.
            t.type("what does hello.txt say?")
            t.wait_for(r"Let me c")
            partial = t.text()
            # "for you." is seven chunks of 0.4 s later: only a stall of ~3 s could see both at once
            assert "for you." not in partial, "the text is shown as it streams, not at the end"
            t.wait_for(r"⏺ Read\(hello\.txt\)")
            t.wait_for(r"⎿ Read 1 line")  # what the call did, not its first numbered line
            t.wait_for(r"The file greets you\.")
            t.wait_for(r"cost \$0\.\d+ this turn \(\d+ in / \d+ out\) · session \$0\.\d+ / \$5\.000000 · context \d+%")
            t.wait_for(PROMPT)

            m = t.mark()
            t.type("/cost")
            t.wait_for(r"tokens: \d+ in / \d+ out", after=m)
            t.wait_for(r"Read: 1 ok, 0 failed", after=m)
            t.wait_for(r"spend: \$0\.\d+ of \$5\.000000 · spend cap \$5\.000000 \(the default", after=m)

            m = t.mark()
            t.type("/sessions")
            t.wait_for(sid + r"\s+\S+ \S+\s+1\s+\$0\.\d+\s+ok\s+what does hello\.txt say\?", after=m)

            # A slow tool: asked for permission, allowed, then Ctrl+C in the middle of it.
            m = t.mark()
            t.type("now sleep")
            t.wait_for(r"Allow Bash\(sleep 30\)\?.*\[y\]es", after=m)
            t.type("y")
            t.wait_for(r"⏺ Bash\(sleep 30\)", after=m)
            time.sleep(1.0)
            t0 = time.monotonic()
            t.child.sendintr()
            t.wait_for(r"⏹ interrupted", after=m)
            t.wait_for(PROMPT)
            assert time.monotonic() - t0 < 20, "Ctrl+C stopped the 30 s command at once"

            # Ctrl+C twice at the prompt (the one in the turn only stopped it): save and exit, no traceback.
            t.child.sendintr()
            t.wait_for(r"\(Ctrl\+C again or Ctrl\+D to exit\)", after=m)
            t.child.sendintr()
            t.wait_for(r"session " + sid + r" saved; resume with: agentloop --resume " + sid)
            status, sig = t.wait_exit()
            assert (status, sig) == (0, None)
            assert "Traceback" not in t.text()
        finally:
            t.kill()

        path = os.path.join(sessions_dir(str(proj), home), f"{sid}.jsonl")
        assert verify_file(path).ok
        recs = list(read_records(path))
        assert [r.payload["reason"] for r in recs if r.kind == "stop"] == ["no_tool_calls", "interrupted"]
        assert recs[-1].kind == "session_end"

        # Resume it: the conversation goes on in the same chain.
        t = Term([*model_args(fp), "--resume", sid], cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(r"resumed session " + sid)
            t.wait_for(PROMPT)
            t.type("hello again")
            t.wait_for(r"Welcome back, the greeting was read earlier\.")
            t.wait_for(PROMPT)
            t.type("/exit")
            assert t.wait_exit() == (0, None)
        finally:
            t.kill()
        last = fp.requests[-1]["body"]
        assert user_texts(last) == ["what does hello.txt say?", "now sleep", "hello again"]
        tool_msgs = [m for m in last["messages"] if m["role"] == "tool"]
        assert "interrupted" in tool_msgs[-1]["content"], "the interrupted call was answered before going on"
    report = verify_file(path)
    assert report.ok
    recs = list(read_records(path))
    assert [r.payload["reason"] for r in recs if r.kind == "stop"] == ["no_tool_calls", "interrupted", "no_tool_calls"]
    assert [r.payload["source"] for r in recs if r.kind == "session_start"] == ["startup", "resume"]


def test_ctrl_d_saves_and_exits_and_history_is_kept(tmp_path, proj):
    home = str(tmp_path / "home")
    with FakeProvider({"replies": [{"text": "first reply"}, {"text": "second reply"}, {"text": "third reply"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(PROMPT)
            t.type("the very first prompt")
            t.wait_for("first reply")
            t.wait_for(PROMPT)
            # Multi-line input: a trailing backslash continues the prompt on the next line.
            t.type("line one \\")
            t.type("line two")
            t.wait_for("second reply")
            t.wait_for(PROMPT)
            # Alt+Enter (Esc, Enter) inserts a newline instead of sending.
            t.child.send("alpha")
            t.child.send("\x1b\r")
            time.sleep(0.2)
            t.type("beta")
            t.wait_for("third reply")
            t.wait_for(PROMPT)
            t.child.sendeof()
            assert t.wait_exit() == (0, None)
            assert "saved; resume with" in t.text()
        finally:
            t.kill()
        assert user_texts(fp.requests[1]["body"])[-1] == "line one \nline two"
        assert user_texts(fp.requests[2]["body"])[-1] == "alpha\nbeta"
    hist = open(os.path.join(home, "history"), encoding="utf-8").read()
    assert "the very first prompt" in hist


def test_tab_completes_slash_commands_and_workspace_paths(tmp_path, proj):
    home = str(tmp_path / "home")
    (proj / "docs").mkdir()
    (proj / "docs" / "guide.md").write_text("# Guide\nstep one\n")
    with FakeProvider({"replies": [{"text": "noted the guide"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(PROMPT)
            m = t.mark()
            t.child.send("/cos")
            t.child.send("\t")
            t.wait_for(r"> /cost", after=m)
            t.child.send("\r")
            t.wait_for(r"tokens: 0 in / 0 out", after=m)
            t.wait_for(PROMPT)
            m = t.mark()
            t.child.send("read @doc")
            t.child.send("\t")
            t.wait_for(r"> read @docs/", after=m)
            t.child.send("gu\t")
            t.wait_for(r"> read @docs/guide\.md", after=m)
            t.child.send("\r")
            t.wait_for(r"attached docs/guide\.md", after=m)
            t.wait_for("noted the guide")
            t.type("/exit")
            t.wait_exit()
        finally:
            t.kill()
        sent = user_texts(fp.requests[-1]["body"])[-1]
    assert '<file path="docs/guide.md">\n# Guide\nstep one\n' in sent


def test_sigterm_at_the_prompt_saves_and_exits_143(tmp_path, proj):
    home = str(tmp_path / "home")
    with FakeProvider({"replies": [{"text": "ok then"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(r"new session (\S+)")
            sid = re.search(r"new session (\S+)", t.text()).group(1)  # type: ignore[union-attr]
            t.wait_for(PROMPT)
            t.type("hi")
            t.wait_for("ok then")
            t.wait_for(PROMPT)
            t.child.kill(signal.SIGTERM)
            assert t.wait_exit() == (143, None)
            assert "Traceback" not in t.text()
        finally:
            t.kill()
    recs = list(read_records(os.path.join(sessions_dir(str(proj), home), f"{sid}.jsonl")))
    assert recs[-1].kind == "session_end" and recs[-1].payload["reason"] == "sigterm"


def test_no_color_is_honoured_and_colour_is_used_otherwise(tmp_path, proj):
    home = str(tmp_path / "home")
    colour = re.compile(rb"\x1b\[[0-9;]*(3[0-7]|38;|1;3)[0-9;]*m")
    for no_color in (True, False):
        script = {"replies": [{"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}]}, {"text": "done"}]}
        with FakeProvider(script) as fp:
            env = env_for(home)
            if not no_color:
                env.pop("NO_COLOR")
            t = Term(model_args(fp), cwd=str(proj), env=env)
            try:
                t.wait_for(PROMPT)
                t.type("read it")
                t.wait_for("done")
                t.type("/exit")
                t.wait_exit()
            finally:
                t.kill()
        found = colour.search(t.raw)
        if no_color:
            assert found is None, f"colour escape {found.group(0)!r} despite NO_COLOR"  # type: ignore[union-attr]
        else:
            assert found is not None, "negative control: without NO_COLOR the tool line is coloured"


def test_without_a_terminal_the_repl_reads_lines_and_writes_plain_text(tmp_path, proj):
    home = str(tmp_path / "home")
    script = {"replies": [
        {"text": "", "tool_calls": [{"name": "Write", "arguments": {"file_path": "new.txt", "content": "x"}}]},
        {"text": "could not write"},
    ]}
    with FakeProvider(script) as fp:
        env = env_for(home)
        p = subprocess.run([AGENTLOOP, *model_args(fp)], input="please write\n/cost\n/permissions\n@../outside.txt hi\n", cwd=proj, env=env,
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "\x1b[" not in out
    assert "⏺ Write(new.txt)" in out and "not granted" in out and "could not write" in out
    assert "Write: 0 ok, 1 failed" in out
    assert "mode: default" in out
    assert not (proj / "new.txt").exists()


def test_mentions_outside_the_workspace_are_refused(tmp_path, proj):
    from agentloop.cli.repl import expand_mentions

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (proj / "link.txt").symlink_to(secret)
    sibling = tmp_path / "proj-evil"
    sibling.mkdir()
    (sibling / "x.txt").write_text("evil")
    roots = [str(proj)]
    for mention in ("@../secret.txt", f"@{secret}", "@link.txt", "@../proj-evil/x.txt"):
        text, attached, refused = expand_mentions(f"look at {mention}", str(proj), roots)
        assert attached == [] and "TOP SECRET" not in text and "evil" not in text.replace("proj-evil", "")
        assert refused and "outside the workspace" in refused[0]
    text, attached, refused = expand_mentions("see @hello.txt, and @nothing.txt", str(proj), roots)
    assert attached == [os.path.realpath(proj / "hello.txt")] and refused == []
    assert '<file path="hello.txt">\ngreetings from hello.txt\n' in text and "@nothing.txt" in text
    _, attached, refused = expand_mentions("@hello.txt", str(proj), roots, refuse=lambda p: "reading it is denied")
    assert attached == [] and "denied" in refused[0]


def test_a_read_deny_rule_also_blocks_a_mention(tmp_path, proj):
    home = str(tmp_path / "home")
    (proj / "secrets").mkdir()
    (proj / "secrets" / "key.txt").write_text("sk-hidden")
    (proj / ".agentloop").mkdir()
    (proj / ".agentloop" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secrets/**)"]}}))
    with FakeProvider({"replies": [{"text": "fine"}]}) as fp:
        p = subprocess.run([AGENTLOOP, *model_args(fp)], input="show @secrets/key.txt\n/permissions\n", cwd=proj, env=env_for(home),
                           capture_output=True, text=True, timeout=60)
        sent = user_texts(fp.requests[-1]["body"])[-1]
    assert "sk-hidden" not in sent
    assert "reading it is denied" in p.stdout
    settings = os.path.join(".agentloop", "settings.json")  # relative to the working directory when inside it
    assert f"deny  Read(./secrets/**)   ({settings})" in p.stdout, "/permissions names each rule and its file"


def test_ctrl_c_during_a_streaming_answer_stops_it_and_the_next_prompt_works(tmp_path, proj):
    home = str(tmp_path / "home")
    long_text = "This answer streams very slowly, word after word, for a long time " * 4
    script = {"replies": [{"text": long_text, "chunk_size": 3, "chunk_delay": 0.1}, {"text": "Short and quick."}]}
    with FakeProvider(script) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(PROMPT)
            t.type("talk slowly")
            t.wait_for("This answer str")
            t.child.sendintr()
            t.wait_for("⏹ interrupted")
            assert "for a long time This answer streams very slowly, word after word, for a long time" not in t.text()
            t.wait_for(PROMPT)
            m = t.mark()
            t.type("and now?")
            t.wait_for("Short and quick.", after=m)
            t.type("/exit")
            assert t.wait_exit() == (0, None)
        finally:
            t.kill()
        sent = user_texts(fp.requests[-1]["body"])
    assert sent == ["talk slowly", "and now?"]


def test_slash_commands_without_a_terminal(tmp_path, proj):
    home = str(tmp_path / "home")
    (proj / ".agentloop" / "commands").mkdir(parents=True)
    (proj / ".agentloop" / "commands" / "review.md").write_text("---\ndescription: review a file\n---\nReview $ARGUMENTS with care.\n")
    (proj / ".agentloop" / "skills" / "haiku").mkdir(parents=True)
    (proj / ".agentloop" / "skills" / "haiku" / "SKILL.md").write_text("---\nname: haiku\ndescription: answer in a haiku\n---\nWrite five, seven, five.\n")
    script = {"replies": [{"text": "reviewed"}, {"text": "in a new session"}, {"text": "skilled"}, {"text": "back again"}]}
    with FakeProvider(script) as fp:
        lines = "\n".join([
            "/help", "/review src/app.py", "/model openai:gpt-4.1-mini", "/model", "/clear", "fresh start",
            "/haiku autumn", "/sessions", "/resume", "where were we?", "/nonsense", "/compact", "/mcp", "/exit", "never read",
        ]) + "\n"
        p = subprocess.run([AGENTLOOP, *model_args(fp)], input=lines, cwd=proj, env=env_for(home), capture_output=True, text=True, timeout=90)
        reqs = [r["body"] for r in fp.requests]
    out = p.stdout
    assert p.returncode == 0, p.stderr
    assert "/review — review a file" in out and "/haiku — skill: answer in a haiku" in out
    assert user_texts(reqs[0])[-1].strip() == "Review src/app.py with care."
    assert reqs[0]["model"] == "gpt-4o-mini" and reqs[1]["model"] == "gpt-4.1-mini"
    assert "model: openai:gpt-4.1-mini" in out
    assert user_texts(reqs[1]) == ["fresh start"], "/clear started a new conversation"
    assert "Write five, seven, five." in user_texts(reqs[2])[-1] and "autumn" in user_texts(reqs[2])[-1]
    assert "Skill" in [t["function"]["name"] for t in reqs[0]["tools"]], "skills are offered as a tool too"
    # /resume without an id goes back to the other (first) session.
    assert [u.strip() for u in user_texts(reqs[3])] == ["Review src/app.py with care.", "where were we?"]
    assert "unknown command /nonsense" in out
    assert "Traceback" not in out + p.stderr
    assert "never read" not in json.dumps(reqs), "nothing after /exit is read"


def test_one_ctrl_c_at_an_idle_prompt_only_warns_and_a_second_exits(tmp_path, proj):
    home = str(tmp_path / "home")
    with FakeProvider({"replies": [{"text": "still here"}]}) as fp:
        t = Term(model_args(fp), cwd=str(proj), env=env_for(home))
        try:
            t.wait_for(PROMPT)
            t.child.sendintr()
            t.wait_for(r"\(Ctrl\+C again or Ctrl\+D to exit\)")
            m = t.mark()
            t.type("are you there?")
            t.wait_for("still here", after=m)
            # a fresh prompt below the answer (the first Ctrl+C left a bare ">" line above,
            # which would match at once, while the turn may still be finishing)
            t.wait_for(PROMPT, after=m + 1)
            m = t.mark()
            t.child.sendintr()
            t.wait_for(r"\(Ctrl\+C again or Ctrl\+D to exit\)", after=m)
            assert t.child.isalive(), "a prompt in between disarmed the first press"
            t.child.sendintr()
            assert t.wait_exit() == (0, None)
        finally:
            t.kill()


def _colour_turn(tmp_path, proj, replies, prompt, waits, extra_args=()):  # type: ignore[no-untyped-def]
    """One turn on a colour terminal (no NO_COLOR): waits for each pattern in order; returns the screen's text and raw bytes."""
    with FakeProvider({"replies": replies}) as fp:
        env = env_for(str(tmp_path / "home"))
        env.pop("NO_COLOR")
        t = Term([*model_args(fp), *extra_args], cwd=str(proj), env=env)
        try:
            t.wait_for(PROMPT)
            m = t.mark()
            t.type(prompt)
            for pattern in [*waits, r"cost \$"]:
                t.wait_for(pattern, after=m)
            shown = t.text(after=m)
            t.type("/exit")
            t.wait_exit()
        finally:
            t.kill()
    return shown, t.raw


def test_on_a_colour_terminal_the_answer_streams_and_is_shown_as_markdown(tmp_path, proj):
    text = "# Plan\n\nRead **hello.txt** with `cat` first.\n- one step\n```sh\ncat hello.txt  # **as written**\n```\nAll done."
    shown, raw = _colour_turn(tmp_path, proj, [{"text": text, "chunk_size": 5, "chunk_delay": 0.05}], "plan it", [
        r"Read \*\*hel|Read hel",  # the line is on screen before it is finished
        r"All done\.",
    ])
    assert "Read hello.txt with cat first." in shown and "• one step" in shown
    assert "cat hello.txt  # **as written**" in shown, "a code block is shown as written"
    assert "**hello.txt**" not in shown and "`cat`" not in shown and "```" not in shown and "# Plan" not in shown
    assert re.search(r"(?m)^Plan$", shown)
    assert b"\x1b[1m" in raw, "the emphasis is drawn with the terminal's bold"


def test_on_a_colour_terminal_a_working_line_shows_while_nothing_else_does_and_leaves_no_trace(tmp_path, proj):
    replies = [
        {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "sleep 2"}}], "latency": 1.5},
        {"text": "Slept well.", "latency": 1.5},
    ]
    shown, raw = _colour_turn(tmp_path, proj, replies, "sleep a little", [
        r"⏺ Bash\(sleep 2\)", r"⎿", r"Slept well\.",
    ], extra_args=("--permission-mode", "bypassPermissions"))
    # The working line is on screen for about a second at a time: it is looked for in
    # every byte the terminal got (a stalled test could miss it on screen), in order.
    sent = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode("utf-8", "replace"))
    at = [re.search(p, sent) for p in (r"thinking… \ds · esc to interrupt", r"⏺ Bash\(sleep 2\)", r"running Bash… \ds", r"Slept well\.")]
    assert all(at), at
    assert [m.start() for m in at] == sorted(m.start() for m in at), at  # type: ignore[union-attr]
    assert "thinking…" not in shown and "running Bash…" not in shown, "the working line is erased once output comes"
    assert re.search(r"(?m)^Slept well\.$", shown), "the answer starts at the start of its line"
