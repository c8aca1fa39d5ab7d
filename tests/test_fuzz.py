"""Fuzzing the parsers: every input ends in a result or in the documented error.

Three engines per target:

- hypothesis, for structure (random JSON shapes, schemas, chunk splits);
- a seeded mutation loop over a small corpus of valid inputs (bit flips,
  byte inserts and deletes, truncation, splicing, repeated blocks, big
  numbers and deep nesting), which is fast enough for 100,000 inputs a
  target in the long variant (``AGENTLOOP_LONG=1``);
- atheris (libFuzzer), coverage-guided, on the same check functions, one
  process a target (``tests/atheris_fuzz.py``): 5,000 inputs a target here,
  100,000 in the long variant.

"No hang" is checked by timing every input: none may take over
``SLOW_SECONDS`` (atheris: libFuzzer's ``-timeout``). The counts go to
``$AGENTLOOP_HARDENING_STATS`` when set.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentloop.agent.hooks.runner import HookAnswer, HookOutputError, parse_hook_output
from agentloop.agent.permissions.bash_reader import ShellSyntax, crude_pieces, units
from agentloop.agent.permissions.rules import Rule, RuleError, parse_rule
from agentloop.audit.repair import RepairRefused, repair_file
from agentloop.batch.tasks import TaskFileError, parse_tasks
from agentloop.events import ToolCall, ToolResult
from agentloop.mcp.config import ConfigError, parse_servers, read_object
from agentloop.providers.sse import SSEDecoder, parse_events
from agentloop.tools import InvalidToolSchema, Registry, tool
from agentloop.transcript import TranscriptError, TranscriptWriter, read_tail, verify_lines

LONG = os.environ.get("AGENTLOOP_LONG") == "1"
MUTATIONS = 100_000 if LONG else 1_500
EXAMPLES = 3_000 if LONG else 60
SLOW_SECONDS = 10.0  # a hang is forever; this machine is shared, so a slow input is not one
STATS = os.environ.get("AGENTLOOP_HARDENING_STATS")


def record_stat(key: str, value: int) -> None:
    if not STATS:
        return
    data = json.loads(Path(STATS).read_text()) if os.path.exists(STATS) else {}
    data[key] = data.get(key, 0) + value
    Path(STATS).write_text(json.dumps(data, indent=1, sort_keys=True))


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LONG)

# --- the mutation engine ----------------------------------------------------------

INTERESTING = [b"\x00", b"\xff", b"\n", b"\r", b"\r\n", b"{", b"}", b"[", b"]", b'"', b"\\", b"\\u0000", b"\\ud800",
               b"1e999", b"-0", b"99999999999999999999999", b"NaN", b"null", b"true", b"\xe2\x80\xa8", b"\xc3", b":", b"*",
               b"(", b")", b"$", b"${", b"~", b"/", b"../", b"**", b"data:", b"event:", b"\n\n", b",", b"\t", b" "]


def mutate(rng: random.Random, seed: bytes, corpus: list[bytes]) -> bytes:
    b = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        pos = rng.randint(0, len(b))
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[pos:pos] = rng.choice(INTERESTING)
        elif op == 2 and b:
            del b[pos : pos + rng.randint(1, 16)]
        elif op == 3:
            del b[pos:]
        elif op == 4:
            other = rng.choice(corpus)
            j = rng.randint(0, len(other))
            b[pos:] = other[j:]
        elif op == 5 and b:
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        elif op == 6:
            blk = bytes(b[pos : pos + rng.randint(1, 32)])
            b[pos:pos] = blk * rng.randint(1, 50)
        elif op == 7:
            b[pos:pos] = b"[" * rng.randint(1, 3000)
        else:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(b)


def fuzz_loop(name: str, corpus: list[bytes], check: Callable[[bytes], None], n: int = MUTATIONS, seed: int = 0) -> int:
    rng = random.Random(f"{name}:{seed}")
    worst = 0.0
    for i in range(n):
        data = corpus[i % len(corpus)] if i < len(corpus) else mutate(rng, rng.choice(corpus), corpus)
        t0 = time.perf_counter()
        try:
            check(data)
        except AssertionError:
            raise
        except BaseException as exc:
            raise AssertionError(f"{name}: input {data[:300]!r}... escaped as {type(exc).__name__}: {exc}") from exc
        dt = time.perf_counter() - t0
        if dt > worst:
            worst = dt
            assert dt < SLOW_SECONDS, f"{name}: input {data[:300]!r} took {dt:.1f}s"
    record_stat(f"fuzz_{name}", n)
    return n


# --- 1. the transcript parser and verifier ------------------------------------------


def _transcript_corpus() -> list[bytes]:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.jsonl")
        with TranscriptWriter(p) as w:
            w.append("run_start", {"config": {"model": "m", "tools": []}, "messages": [{"role": "user", "content": "hi ✓"}]})
            w.append("model_turn", {"text": "", "tool_calls": [{"id": "c", "name": "add", "arguments": {"a": 1, "b": 2.5}}]})
            w.append("tool_result", {"ok": True, "value": 3.5, "n": -0.0, "big": 2**60})
            w.append("stop", {"reason": "done", "s": "\u2028\x00"})
        whole = Path(p).read_bytes()
    lines = whole.splitlines(keepends=True)
    return [whole, b"".join(lines[:2]), lines[-1], whole + b"\x00" * 8, whole[:-5]]


def _check_transcript(data: bytes) -> None:
    rep = verify_lines(data.splitlines(keepends=True))
    assert 0 <= rep.valid_prefix <= rep.count
    assert 0 <= rep.valid_prefix_bytes <= len(data)
    if rep.ok:
        assert rep.valid_prefix == rep.count and rep.valid_prefix_bytes == len(data)
    else:
        assert data[: rep.valid_prefix_bytes].count(b"\n") == rep.valid_prefix
    # the verdict on the prefix it vouches for is the same when read alone
    again = verify_lines(data[: rep.valid_prefix_bytes].splitlines(keepends=True))
    assert again.ok and again.count == rep.valid_prefix


def test_fuzz_transcript_verifier_never_raises_and_its_valid_prefix_verifies() -> None:
    fuzz_loop("transcript", _transcript_corpus(), _check_transcript)


_TMP = tempfile.mkdtemp(prefix="agentloop-fuzz-")


@SETTINGS
@given(st.sampled_from(_transcript_corpus()), st.integers(0, 4000), st.binary(max_size=64))
def test_fuzz_read_tail_and_repair_give_a_record_or_their_documented_error(base: bytes, cut: int, junk: bytes) -> None:
    p = os.path.join(_TMP, "t.jsonl")
    for f in Path(_TMP).glob("t.jsonl*"):
        f.unlink()
    data = base[:cut] + junk
    Path(p).write_bytes(data)
    try:
        read_tail(p)
    except TranscriptError:
        pass
    try:
        res = repair_file(p)
    except RepairRefused:
        return
    after = verify_lines(Path(p).read_bytes().splitlines(keepends=True))
    assert after.ok and after.count == res.kept_records


# --- 2. the JSON Schema argument path ----------------------------------------------

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8))
json_value = st.recursive(json_scalar, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4), max_leaves=12)
type_name = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "bogus"])
schema = st.recursive(
    st.fixed_dictionaries({}, optional={
        "type": type_name | st.lists(type_name, max_size=3),
        "minimum": st.integers(-5, 5), "maxLength": st.integers(-1, 5), "enum": st.lists(json_scalar, max_size=3),
        "pattern": st.sampled_from(["^a", "[", "(?P<x>", "\\d+", ".*"]), "format": st.sampled_from(["email", "date", "uri"]),
        "const": json_scalar, "$ref": st.sampled_from(["#", "#/definitions/x", "http://127.0.0.1:1/x"]),
    }),
    lambda kids: st.fixed_dictionaries({"type": st.just("object")}, optional={
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c", ""]), kids, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "z"]), max_size=3),
        "additionalProperties": st.booleans() | kids, "items": kids, "anyOf": st.lists(kids, max_size=2),
        "not": kids,
    }),
    max_leaves=6,
)


def _echo(**kw: Any) -> Any:
    return kw


@SETTINGS
@given(schema, st.dictionaries(st.sampled_from(["a", "b", "c", "d", ""]), json_value, max_size=4) | json_value)
@example({"type": "object", "properties": {"a": {"type": ["string"]}}}, {})  # found: a type list crashed the quick acceptor
@example({"type": "object", "properties": {"a": {"$ref": "#"}}}, {"a": {"a": 1}})  # found: a $ref without end escaped
def test_fuzz_registry_invoke_with_random_schemas_and_arguments_returns_a_result(sch: dict[str, Any], args: Any) -> None:
    try:
        t = tool(_echo, name="echo", schema=sch)
        reg = Registry([t])
    except InvalidToolSchema:
        return
    res = reg.invoke(ToolCall("c1", "echo", args))
    assert isinstance(res, ToolResult) and res.call_id == "c1"
    if res.ok:
        assert isinstance(args, dict)
    else:
        assert isinstance(res.error, str) and res.error


_ARGS_REG = Registry([tool(_echo, name="echo", schema={
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 4}},
    "required": ["a"], "additionalProperties": False})])
ARGS_CORPUS = [b'{"a": 1}', b'{"a": 2, "b": "xy"}', b'{"b": "toolong"}', b"[1]", b'{"a": 1.0}']


def _check_args(data: bytes) -> None:
    try:
        args = json.loads(data)
    except (ValueError, RecursionError):
        return
    res = _ARGS_REG.invoke(ToolCall("c", "echo", args))
    if res.ok:
        a = args.get("a") if isinstance(args, dict) else None
        # JSON Schema's integer includes 1.0; never a bool, a string or a fraction
        assert type(a) in (int, float) and float(a).is_integer() and set(args) <= {"a", "b"}
        assert "b" not in args or (isinstance(args["b"], str) and len(args["b"]) <= 4)
    else:
        assert isinstance(res.error, str) and res.error


def test_fuzz_registry_invoke_arguments_by_mutation() -> None:
    fuzz_loop("schema_args", ARGS_CORPUS, _check_args)


# --- 3. the SSE parser ----------------------------------------------------------------

SSE_CORPUS = [
    b'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {}\n\n',
    b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n',
    b": comment\r\nid: 7\r\nretry: 10\r\ndata: a\r\ndata: b\r\n\r\n",
    b"data:x\rdata: y\r\revent:\ndata\n\n",
    b'event: content_block_delta\ndata: {"delta":{"text":"\xe2\x9c\x93"}}',
]


def _check_sse(data: bytes, cuts: list[int] | None = None) -> None:
    whole = parse_events(data)
    for ev, payload in whole:
        assert isinstance(ev, str) and isinstance(payload, bytes)
    # cut anywhere, the same events come out (a CR at a chunk's end included)
    d = SSEDecoder()
    out: list[tuple[str, bytes]] = []
    pos = 0
    for c in sorted(cuts if cuts is not None else range(0, len(data), 7)):
        out += d.feed(data[pos:c])
        pos = c
    out += d.feed(data[pos:])
    out += d.close()
    assert out == whole, (data, cuts)


def test_fuzz_sse_decoder_by_mutation() -> None:
    rng = random.Random(1)
    fuzz_loop("sse", SSE_CORPUS, lambda b: _check_sse(b, [rng.randint(0, len(b)) for _ in range(rng.randint(0, 6))]))


@SETTINGS
@given(st.lists(st.sampled_from([b"data:", b"data: ", b"event: e", b":c", b"\n", b"\r", b"\r\n", b"x", b"{}", b"id: 1", b"\xff"]), max_size=30), st.lists(st.integers(0, 200), max_size=8))
def test_fuzz_sse_chunking_never_changes_the_events(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    _check_sse(data, [min(c, len(data)) for c in cuts])


# --- 4. the hook output parser ----------------------------------------------------------

HOOK_CORPUS = [
    b'{"decision": "block", "reason": "no"}',
    b'{"continue": false, "stopReason": "x", "suppressOutput": true}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "r"}}',
    b'{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "c"}, "systemMessage": "m"}',
    b"plain text output\n",
    b'  \n {"decision": "approve"}',
]


def _check_hook(data: bytes) -> None:
    try:
        ans = parse_hook_output(data)
    except HookOutputError as exc:
        assert str(exc) and "\n" not in str(exc)[:1]
        return
    assert isinstance(ans, HookAnswer)


def test_fuzz_hook_output_parser_by_mutation() -> None:
    fuzz_loop("hook_output", HOOK_CORPUS, _check_hook)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["continue", "decision", "reason", "stopReason", "suppressOutput", "systemMessage", "hookSpecificOutput", "x"]),
                       json_value | st.dictionaries(st.sampled_from(["hookEventName", "permissionDecision", "permissionDecisionReason", "additionalContext", "updatedInput"]), json_value, max_size=4), max_size=5))
def test_fuzz_hook_output_shapes_give_an_answer_or_hook_output_error(obj: dict[str, Any]) -> None:
    _check_hook(json.dumps(obj).encode())
    _check_hook(json.dumps(obj))  # type: ignore[arg-type]


# --- 5. the permission-rule parser ---------------------------------------------------------

RULE_CORPUS = [b"Bash", b"Bash(npm run test:*)", b"Read(./src/**)", b"Edit(//etc/passwd)", b"WebFetch(domain:example.com)",
               b"mcp__server__tool", b"mcp__server", b"Read(~/x/*.py)", b"Bash(git diff *)", b"Write(/abs/**/x)"]


def _check_rule(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        r = parse_rule(text)
    except RuleError:
        return
    assert isinstance(r, Rule)


def test_fuzz_permission_rule_parser_by_mutation() -> None:
    fuzz_loop("permission_rule", RULE_CORPUS, _check_rule)


@SETTINGS
@given(json_value)
def test_fuzz_permission_rule_parser_takes_any_value(v: Any) -> None:
    try:
        parse_rule(v)
    except RuleError:
        pass


# --- 6. .mcp.json loading -------------------------------------------------------------------

MCP_CORPUS = [
    b'{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${HOME}"}}}}',
    b'{"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN:-x}"}}}}',
    b'{"mcpServers": {"s": {"type": "sse", "url": "https://h/sse", "timeout": 5000}}}',
    b'{"mcpServers": {}}',
    b"",
]


def _check_mcp(data: bytes) -> None:
    p = os.path.join(_TMP, ".mcp.json")
    Path(p).write_bytes(data)
    try:
        obj = read_object(p)
        if obj is not None:
            parse_servers(obj, p, "project")
    except ConfigError as exc:
        assert p in str(exc)


def test_fuzz_mcp_json_loading_by_mutation() -> None:
    fuzz_loop("mcp_json", MCP_CORPUS, _check_mcp, n=MUTATIONS)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["mcpServers", "x"]), st.dictionaries(st.text(max_size=4), st.dictionaries(
    st.sampled_from(["command", "args", "env", "type", "url", "headers", "timeout", "cwd", "y"]), json_value, max_size=5) | json_value, max_size=3), max_size=2))
def test_fuzz_mcp_json_shapes(obj: dict[str, Any]) -> None:
    _check_mcp(json.dumps(obj).encode())


# --- 7. the task-file loader ----------------------------------------------------------------

TASK_CORPUS = [
    b'{"id": "t1", "prompt": "Add 2 and 3", "tools": ["add"], "budget": {"max_steps": 4, "max_usd": "0.01"}, "model": "scripted", "script": [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}], "usage": {"input_tokens": 12, "output_tokens": 8}, "delay_ms": 40}, {"text": "5"}]}\n',
    b'{"id": "t2", "messages": [{"role": "user", "content": "hi"}], "budget": {"unlimited": true}, "model": "openai:gpt-4o-mini", "base_url": "http://127.0.0.1:1/v1", "price": {"input": 1, "output": 2}}\n'
    b'{"id": "t3", "prompt": "x", "budget": {"max_tokens": 10}, "model": "scripted", "script": [{"text": "y"}], "toolset": "none", "sentinel": "DONE", "loop_threshold": 3}\n',
]


def _check_tasks(data: bytes) -> None:
    try:
        tasks = parse_tasks(data, "tasks.jsonl")
    except TaskFileError as exc:
        assert "tasks.jsonl" in str(exc)
        return
    assert tasks and len({t.id for t in tasks}) == len(tasks)


def test_fuzz_task_file_loader_by_mutation() -> None:
    fuzz_loop("task_file", TASK_CORPUS, _check_tasks)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["id", "prompt", "messages", "model", "script", "budget", "tools", "toolset", "price", "max_output_tokens", "loop_threshold", "sentinel", "base_url"]), json_value, max_size=8))
def test_fuzz_task_file_shapes(obj: dict[str, Any]) -> None:
    _check_tasks(json.dumps(obj).encode())


# --- 8. the shell splitter behind Bash permission rules ------------------------------------

SHELL_CORPUS = [
    b"npm run test -- --watch", b"git diff HEAD~1 | less && echo done", b"sudo env X=1 nice -n 5 rm -rf /tmp/x",
    b"bash -c 'echo $(id)'; cat <(ls) >(wc -l)", b"if true; then echo a; elif false; then b; else c; fi",
    b"for f in *.py; do python \"$f\" & done; wait", b"echo $'\\x72m' \"a `whoami` b\" c\\ d # comment",
    b"cat <<EOF\nhi\nEOF\n", b"{ x; y || z; } 2>&1 | tee log", b"case $a in x) echo 1;; *) echo 2;; esac",
    b"xargs -0 -n1 sh -c 'rm \"$1\"' _ < files", b"timeout 5 command exec eval \"ls; rm -f a\"", b"((i++)); echo $((1+2))",
]


def _check_shell(data: bytes) -> None:
    line = data.decode("utf-8", "replace")
    try:
        found = units(line)
    except ShellSyntax as exc:
        assert str(exc)
        assert all(isinstance(p, str) and p for p in crude_pieces(line))  # what deny rules then see
        return
    for u in found:
        assert all(isinstance(text, str) and isinstance(allow, bool) for text, allow in u.views)


def test_fuzz_shell_splitter_by_mutation() -> None:
    _check_shell(b"ho $(/(9+2))")  # found by this loop: a bare "/" gave deny checks an empty piece
    _check_shell(b"xargs -X0 -n1 sh -c '' _ < files")  # found by atheris in CI: an empty -c string raised IndexError
    fuzz_loop("shell", SHELL_CORPUS, _check_shell)


# --- coverage-guided: atheris (libFuzzer) on the same targets ------------------------------
#
# The mutation loop above is blind: it never learns which inputs reach new
# code. atheris instruments agentloop's Python modules and keeps the inputs that
# reach new branches (and learns the bytes the code compares against), so it
# gets through a parser's early checks to its deep paths. Each target runs in
# its own process (libFuzzer owns the process): tests/atheris_fuzz.py.

ATHERIS_RUNS = 100_000 if LONG else 5_000


def _sse_any_cuts(data: bytes) -> None:
    rng = random.Random(data)  # the cuts follow from the input: a crash replays from its file alone
    _check_sse(data, [rng.randint(0, len(data)) for _ in range(rng.randint(0, 6))])


def _planted(data: bytes) -> None:
    """The engine's negative control: a crash behind ten exact bytes that blind mutation never guesses."""
    if data[:10] == b"agentloop!":
        raise RuntimeError("the planted crash was found")


ATHERIS_TARGETS: dict[str, tuple[Callable[[], list[bytes]], Callable[[bytes], None]]] = {
    "transcript": (_transcript_corpus, _check_transcript),
    "schema_args": (lambda: ARGS_CORPUS, _check_args),
    "sse": (lambda: SSE_CORPUS, _sse_any_cuts),
    "hook_output": (lambda: HOOK_CORPUS, _check_hook),
    "permission_rule": (lambda: RULE_CORPUS, _check_rule),
    "mcp_json": (lambda: MCP_CORPUS, _check_mcp),
    "task_file": (lambda: TASK_CORPUS, _check_tasks),
    "shell": (lambda: SHELL_CORPUS, _check_shell),
    "planted": (lambda: [b"hello"], _planted),
}


def _atheris(target: str, workdir: Path, runs: int) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("atheris")
    harness = Path(__file__).with_name("atheris_fuzz.py")
    args = [sys.executable, str(harness), target, str(workdir), f"-runs={runs}", "-seed=1", "-timeout=30", "-rss_limit_mb=4096"]
    # Python's string hashing steers which branches an input reaches, so with a random hash seed the
    # same -seed explores other inputs each run (a crash in the Bash reader showed up in one CI run
    # only: PYTHONHASHSEED=9 finds it, 1-8 do not). The short run is pinned, so CI explores what was
    # explored before landing; AGENTLOOP_LONG=1 explores anew each time.
    env = dict(os.environ) if LONG else {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.run(args, capture_output=True, text=True, timeout=1800, env=env)


@pytest.mark.parametrize("target", [t for t in ATHERIS_TARGETS if t != "planted"])
def test_fuzz_by_coverage_with_atheris(target: str, tmp_path: Path) -> None:
    p = _atheris(target, tmp_path, ATHERIS_RUNS)
    tail = (p.stdout + p.stderr)[-4000:]
    assert p.returncode == 0, tail
    assert f"Done {ATHERIS_RUNS} runs" in p.stderr, tail
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*")), tail
    record_stat(f"atheris_{target}", ATHERIS_RUNS)


# --- the fuzzers can fail: negative controls -----------------------------------------------


def test_fuzz_loop_reports_an_escaping_exception_and_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    def bad(data: bytes) -> None:
        if b"\x00" in data:
            raise KeyError("boom")

    with pytest.raises(AssertionError, match="escaped as KeyError"):
        fuzz_loop("control", [b"abc", b"a\x00"], bad, n=10)

    monkeypatch.setattr(sys.modules[__name__], "SLOW_SECONDS", 0.05)

    def slow(data: bytes) -> None:
        time.sleep(0.1)

    with pytest.raises(AssertionError, match="took"):
        fuzz_loop("control", [b"x"], slow, n=1)


def test_atheris_finds_a_crash_that_blind_mutation_does_not(tmp_path: Path) -> None:
    # the same ten-byte crash: the mutation loop misses it in 5,000 inputs; atheris finds it in a few hundred
    rng = random.Random("planted")
    for _ in range(5_000):
        _planted(mutate(rng, b"hello", [b"hello"]))
    p = _atheris("planted", tmp_path, 200_000)
    assert p.returncode != 0 and "the planted crash was found" in p.stdout + p.stderr, (p.stdout + p.stderr)[-3000:]
    (crash,) = tmp_path.glob("crash-*")
    assert crash.read_bytes()[:10] == b"agentloop!", "the input that crashed is kept, to replay"
