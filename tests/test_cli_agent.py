"""``agentloop -p``, ``agentloop run`` and ``agentloop sessions`` as a script would use them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from agentloop.conversation import Conversation
from agentloop.testing.fakeprovider import FakeProvider
from agentloop.transcript import read_records, verify_file

AGENTLOOP = os.path.join(os.path.dirname(sys.executable), "agentloop")


@pytest.fixture()
def env(tmp_path):  # type: ignore[no-untyped-def]
    e = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "ANTHROPIC_"))}
    e["AGENTLOOP_HOME"] = str(tmp_path / "home")
    e["NO_COLOR"] = "1"
    return e


@pytest.fixture()
def proj(proj):  # type: ignore[no-untyped-def]
    """The shared project folder (conftest.py) with one small file."""
    (proj / "hello.txt").write_text("hi from the file\n")
    return proj


def agentloop(args, *, cwd, env, input=None, timeout=60):  # type: ignore[no-untyped-def]
    return subprocess.run([AGENTLOOP, *args], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout)


TOOL_THEN_ANSWER = [
    {"text": "Looking.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}], "usage": [100, 10]},
    {"text": "The file says hi.", "usage": [150, 5]},
]


def test_print_text_puts_only_the_answer_on_stdout(tmp_path, proj, env, scripted):
    p = agentloop(["-p", "what does hello.txt say?", "--model", scripted(TOOL_THEN_ANSWER)], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "The file says hi.\n"
    assert "cost $0.000" in p.stderr and "this turn (250 in / 15 out)" in p.stderr


def test_print_json_is_one_result_object(tmp_path, proj, env, scripted):
    p = agentloop(["-p", "x", "--model", scripted(TOOL_THEN_ANSWER), "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert obj["type"] == "result" and obj["subtype"] == "success" and obj["is_error"] is False
    assert obj["result"] == "The file says hi." and obj["num_turns"] == 2
    assert obj["cost_micros"] == 100 + 150 + 2 * 15  # scripted: 1 USD/Mtok in, 2 out
    assert verify_file(obj["transcript"]).ok


def test_print_stream_json_is_one_event_a_line_in_order(tmp_path, proj, env, scripted):
    """Claude Code's stream-json: init, then assistant messages of content blocks and tool
    results as user messages, then the result; text deltas only with --include-partial-messages."""
    p = agentloop(["-p", "x", "--model", scripted(TOOL_THEN_ANSWER), "--output-format", "stream-json",
                   "--include-partial-messages"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "system" and events[0]["subtype"] == "init" and types[-1] == "result"
    assert "Read" in events[0]["tools"]
    order = [t for t in types if t in ("assistant", "user")]
    assert order == ["assistant", "user", "assistant"]
    first = events[types.index("assistant")]["message"]["content"]
    assert [b["type"] for b in first] == ["text", "tool_use"] and first[1]["name"] == "Read"
    deltas = "".join(e["event"]["delta"]["text"] for e in events if e["type"] == "stream_event" and e["event"]["type"] == "content_block_delta"
                     and e["event"]["delta"]["type"] == "text_delta")
    assert deltas == "Looking.The file says hi."
    tr = events[types.index("user")]["message"]["content"][0]
    assert tr["type"] == "tool_result" and tr["is_error"] is False and "hi from the file" in tr["content"]
    assert len({e["session_id"] for e in events}) == 1
    plain = agentloop(["-p", "x", "--model", scripted(TOOL_THEN_ANSWER, "p.json"), "--output-format", "stream-json"], cwd=proj, env=env)
    assert "stream_event" not in plain.stdout  # partial messages only when asked for


def test_run_subcommand_is_the_same_agent(tmp_path, proj, env, scripted):
    p = agentloop(["run", "x", "--model", scripted(TOOL_THEN_ANSWER), "--max-usd", "0.05", "--max-steps", "20", "--output-format", "json"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert obj["result"] == "The file says hi."
    start = next(r for r in read_records(obj["transcript"]) if r.kind == "run_start")
    assert start.payload["config"]["budget"]["max_steps"] == 20
    assert start.payload["config"]["budget"]["max_usd_micros"] == 50_000


def test_a_run_stopped_by_its_budget_exits_1(tmp_path, proj, env, scripted):
    p = agentloop(["-p", "x", "--model", scripted(TOOL_THEN_ANSWER), "--max-steps", "1"], cwd=proj, env=env)
    assert p.returncode == 1
    assert "stopped: step_budget" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-usd", "lots"], "--max-usd lots: not an amount of dollars"),
        (["--max-steps", "0"], "--max-steps 0: must be at least 1"),
        (["--model", "scripted:/no/such.json"], "/no/such.json: cannot read the scripted model"),
        (["--model", "gpt-4o"], "needs a provider"),
        (["--resume", "nope"], "no session 'nope' for this directory"),
        (["--cwd", "/no/such/dir"], "--cwd /no/such/dir: not a directory"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(tmp_path, proj, env, args, message, scripted):
    base = ["-p", "x", "--model", scripted([{"text": "x"}])]
    p = agentloop(base + args, cwd=proj, env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_no_model_configured_says_how_to_configure_one(tmp_path, proj, env):
    p = agentloop(["-p", "x"], cwd=proj, env=env)
    assert p.returncode == 2 and "no model configured" in p.stderr


def test_prompt_from_stdin(tmp_path, proj, env, scripted):
    p = agentloop(["-p", "-", "--model", scripted([{"text": "got it"}]), "--output-format", "json"], cwd=proj, env=env, input="a long prompt\nover lines\n")
    obj = json.loads(p.stdout)
    first = next(r for r in read_records(obj["transcript"]) if r.kind == "run_start")
    assert first.payload["messages"][-1]["content"] == "a long prompt\nover lines\n"


def test_continue_and_resume_append_to_the_same_chain(tmp_path, proj, env, scripted):
    s = scripted([{"text": "one"}])
    first = json.loads(agentloop(["-p", "first", "--model", s, "--output-format", "json"], cwd=proj, env=env).stdout)
    p = agentloop(["-c", "-p", "second", "--model", scripted([{"text": "two"}], "t.json"), "--output-format", "json"], cwd=proj, env=env)
    second = json.loads(p.stdout)
    assert second["session_id"] == first["session_id"] and second["transcript"] == first["transcript"]
    p = agentloop(["--resume", first["session_id"][:15], "-p", "third", "--model", scripted([{"text": "three"}], "u.json"), "--output-format", "json"], cwd=proj, env=env)
    third = json.loads(p.stdout)
    assert third["session_id"] == first["session_id"]
    recs = list(read_records(third["transcript"]))
    last = max(i for i, r in enumerate(recs) if r.kind == "run_start")
    conv = Conversation()  # a later run_start continues the conversation the records before it rebuild
    for r in recs[: last + 1]:
        conv.feed(r.kind, r.payload)
    contents = [m["content"] for m in conv.messages if m["role"] != "system"]
    assert contents == ["first", "one", "second", "two", "third"]
    assert third["session_cost_micros"] == first["cost_micros"] + second["cost_micros"] + third["cost_micros"]
    assert verify_file(third["transcript"]).ok


def test_sessions_lists_this_directory_newest_first(tmp_path, proj, env, scripted):
    agentloop(["-p", "the first prompt", "--model", scripted([{"text": "a"}])], cwd=proj, env=env)
    time.sleep(1.1)
    agentloop(["-p", "the second prompt", "--model", scripted([{"text": "b"}], "b.json")], cwd=proj, env=env)
    p = agentloop(["sessions", "--json"], cwd=proj, env=env)
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["first_prompt"] for r in rows] == ["the second prompt", "the first prompt"]
    assert all(r["verified"] and r["turns"] == 1 for r in rows)
    table = agentloop(["sessions"], cwd=proj, env=env).stdout
    assert "the first prompt" in table and "verified" in table and " ok " in table
    other = tmp_path / "other"
    other.mkdir()
    assert "no sessions" in agentloop(["sessions"], cwd=other, env=env).stdout


def test_a_session_in_use_is_refused_to_a_second_process(tmp_path, proj, env, scripted):
    started = proj / "started"  # in the workspace: Bash's sandbox writes nowhere else
    slow = scripted([{"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": f"touch {started}; sleep 20"}}]}, {"text": "done"}])
    first = json.loads(agentloop(["-p", "x", "--model", scripted([{"text": "a"}], "a.json"), "--output-format", "json"], cwd=proj, env=env).stdout)
    holder = subprocess.Popen(
        [AGENTLOOP, "--resume", first["session_id"], "-p", "y", "--model", slow, "--permission-mode", "bypassPermissions"],
        cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        # the tool has started: the holder writes nothing more until it ends
        # (its model_turn is followed by a budget record, so seeing the turn is not enough)
        while not started.exists():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        size = os.path.getsize(first["transcript"])
        p = agentloop(["--resume", first["session_id"], "-p", "z", "--model", scripted([{"text": "c"}], "c.json")], cwd=proj, env=env)
        assert p.returncode == 2
        assert f"session {first['session_id']} is in use by another agentloop process (pid {holder.pid})" in p.stderr
        assert os.path.getsize(first["transcript"]) == size, "the refused process wrote nothing"
    finally:
        holder.send_signal(signal.SIGTERM)
        out, err = holder.communicate(timeout=30)
    assert holder.returncode == 143, err
    assert "Traceback" not in err
    recs = list(read_records(first["transcript"]))
    assert [r.payload["reason"] for r in recs if r.kind == "stop"][-1] == "interrupted"
    assert recs[-1].kind == "session_end" and recs[-1].payload["reason"] == "sigterm"


def test_print_against_the_fake_provider_streams_over_http(tmp_path, proj, env):
    script = {"replies": [
        {"text": "Reading the file now.", "tool_calls": [{"name": "Read", "arguments": {"file_path": "hello.txt"}}], "chunk_size": 5},
        {"text": "It greets you.", "chunk_size": 3},
    ]}
    with FakeProvider(script) as fp:
        p = agentloop(["-p", "x", "--model", "openai:gpt-4o-mini", "--base-url", fp.url + "/v1", "--output-format", "stream-json",
                       "--include-partial-messages"], cwd=proj, env=env)
        sent = fp.requests
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    texts = [e["event"]["delta"]["text"] for e in events if e["type"] == "stream_event" and e["event"]["type"] == "content_block_delta"
             and e["event"]["delta"]["type"] == "text_delta"]
    assert texts[:3] == ["Readi", "ng th", "e fil"]
    assert events[-1]["result"] == "It greets you."
    assert len(sent) == 2


def test_building_the_cli_loads_no_heavy_module():
    """``agentloop --help`` builds the parser from every cmd_ module: none of
    them, nor the package itself, may import a heavy dependency at import."""
    code = (
        "import sys\n"
        "from agentloop.cli.main import build_parser\n"
        "build_parser()\n"
        "heavy = ['jsonschema', 'asyncio', 'rich', 'prompt_toolkit', 'httpx', 'mcp', 'ray', 'cryptography', 'orjson',\n"
        "         'agentloop.tools', 'agentloop.run', 'agentloop.agent.agent']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "", f"imported while building the parser: {p.stdout.strip()}"


def test_the_package_names_resolve_lazily_and_run_stays_the_function():
    code = (
        "import sys, agentloop\n"
        "assert 'agentloop.tools' not in sys.modules\n"
        "import agentloop.run\n"
        "from agentloop import run, Budget, Registry\n"
        "assert callable(run) and agentloop.run is run, agentloop.run\n"
        "print(sorted(agentloop.__all__) == sorted(n for n in agentloop.__all__ if hasattr(agentloop, n)))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stdout + p.stderr


def test_version_and_help_list_the_agent_and_its_subcommands(tmp_path, env):
    from agentloop import __version__

    v = agentloop(["--version"], cwd=tmp_path, env=env)
    assert (v.returncode, v.stdout) == (0, f"agentloop {__version__}\n")
    h = agentloop(["--help"], cwd=tmp_path, env=env)
    assert h.returncode == 0
    for word in ("-p, --print", '["PROMPT"]', "--resume", "--output-format", "run ", "sessions ", "verify "):
        assert word in h.stdout, word


def test_add_dir_lets_the_file_tools_reach_another_directory(tmp_path, proj, env, scripted):
    other = tmp_path / "shared"
    other.mkdir()
    (other / "data.txt").write_text("shared data\n")
    replies = [{"text": "", "tool_calls": [{"name": "Read", "arguments": {"file_path": str(other / "data.txt")}}]}, {"text": "ok"}]
    outs = []
    for extra in ([], ["--add-dir", str(other)]):
        p = agentloop(["-p", "x", "--model", scripted(replies, f"r{len(extra)}.json"), "--output-format", "stream-json", *extra], cwd=proj, env=env)
        msg = next(json.loads(line) for line in p.stdout.splitlines() if '"tool_result"' in line)
        outs.append(msg["message"]["content"][0])  # Claude Code: a user message with a tool_result block
    assert outs[0]["is_error"] is True and "outside" in outs[0]["content"]
    assert outs[1]["is_error"] is False and "shared data" in outs[1]["content"]


def test_the_repl_warns_near_the_budget_and_stops_a_turn_that_cannot_fit(tmp_path, proj, env, scripted):
    # the cap leaves room for the first call's reservation (the system prompt and the tools' schemas, about
    # 26,000 tokens of bound, and max_tokens 4096: about $0.041) but not for the second after the first's bill
    replies = [{"text": "expensive", "usage": [37_000, 0]}, {"text": "never"}]
    p = subprocess.run([AGENTLOOP, "--model", scripted(replies), "--max-usd", "0.045"], input="one\ntwo\n/cost\n",
                       cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    out = p.stdout
    assert p.returncode == 0, p.stderr
    assert "session $0.037000 / $0.045000" in out, out
    assert "warning: budget is 82% used (warning at 80%)" in out
    assert "stopped: cost_budget" in out and "never" not in out
    assert "spend: $0.037000 of $0.045000" in out


def test_agent_flags_given_before_run_are_kept(tmp_path, proj, env, scripted):
    p = agentloop(["--model", scripted([{"text": "from the top"}]), "--output-format", "json", "run", "x"], cwd=proj, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["result"] == "from the top"
