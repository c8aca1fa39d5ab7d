"""``agentloop acp`` answers every malformed message as JSON-RPC 2.0 says and keeps the connection.

JSON-RPC 2.0 (jsonrpc.org/specification, sections 4, 5 and 6): a line that is
not JSON is answered ``-32700`` Parse error with ``id: null``; a message that is
not a valid Request object ``-32600`` Invalid Request, with ``id: null`` when its
id cannot be read; an empty batch ``[]`` gets one Invalid Request error, not an
array. ACP v1 ("Transports": messages are individual requests, notifications or
responses) has no batches, and the official ACP SDK (the Rust
``agent-client-protocol`` crate, ``tests/jsonrpc_batch.rs``) answers every
array, empty or not, with one ``-32600`` error with ``id: null``, runs none of
its entries and keeps the connection usable: agentloop does the same. An id is
a string, null or an integer (JSON-RPC: numbers SHOULD NOT have fractions;
anything a JavaScript client cannot read back exactly is refused), and what
agentloop writes is always JSON (never ``Infinity``).

Everything here goes over real pipes to a real ``agentloop acp`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

pytest.importorskip("acp")

from agentloop.agent.agent import Agent  # noqa: E402
from agentloop.agent.session.store import sessions_dir  # noqa: E402
from agentloop.line import make_line  # noqa: E402


def _strict(line: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in agentloop's output: not JSON")

    return json.loads(line, parse_constant=refuse)


class Acp:
    """``agentloop acp`` on pipes: lines in, parsed lines out."""

    def __init__(self, cwd: Path, model: str):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        self.p = subprocess.Popen([sys.executable, "-m", "agentloop.cli.main", "acp", "--model", model],
                                  cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out: Queue[bytes] = Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 100

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.out.put(line)
        self.out.put(b"")

    def send(self, raw: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(raw.encode() + b"\n")
        self.p.stdin.flush()

    def read(self, timeout: float = 30) -> Any:
        try:
            line = self.out.get(timeout=timeout)
        except Empty:
            raise AssertionError("agentloop acp said nothing") from None
        assert line, f"agentloop acp ended: {self.p.wait(5)}; {self.p.stderr.read().decode() if self.p.stderr else ''}"
        return _strict(line.decode())

    def nothing_more(self, timeout: float = 0.5) -> None:
        try:
            line = self.out.get(timeout=timeout)
        except Empty:
            return
        raise AssertionError(f"unexpected: {line!r}")

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                return msg

    def still_answers(self) -> None:
        answer = self.request("initialize", {"protocolVersion": 1})
        assert answer["result"]["protocolVersion"] == 1

    def close(self) -> tuple[int, str]:
        assert self.p.stdin is not None and self.p.stderr is not None
        if self.p.stderr.closed:
            return self.p.wait(30), ""
        if not self.p.stdin.closed:
            self.p.stdin.close()
        code = self.p.wait(30)
        err = self.p.stderr.read().decode()
        self.p.stderr.close()
        if self.p.stdout is not None:
            self.p.stdout.close()
        return code, err


@pytest.fixture()
def acp_proc(proj: Path, scripted: Callable[..., str]) -> Any:
    a = Acp(proj, scripted([{"text": "hello"}]))
    yield a
    if a.p.poll() is None:
        a.p.kill()
    a.close()


INIT = {"protocolVersion": 1}

BAD_IDS = {
    "1e400 (infinite)": "1e400",
    "-1e400": "-1e400",
    "an object": '{"a":1}',
    "an array": "[1]",
    "true": "true",
    "false": "false",
    "1.5": "1.5",
    "1.0 (a fraction, though integral)": "1.0",
    "1e3 (an exponent)": "1e3",
    "2**53 (past the safe range)": str(2**53),
    "-(2**53)": str(-(2**53)),
    "10**30": "1" + "0" * 30,
}


@pytest.mark.parametrize("kind", ["request", "notification-like response"])
def test_every_id_that_is_not_a_string_null_or_safe_integer_is_refused_with_id_null(acp_proc: Acp, kind: str) -> None:
    for name, raw in BAD_IDS.items():
        if kind == "request":
            acp_proc.send(f'{{"jsonrpc":"2.0","id":{raw},"method":"initialize","params":{{"protocolVersion":1}}}}')
        else:
            acp_proc.send(f'{{"jsonrpc":"2.0","id":{raw},"result":{{}}}}')
        answer = acp_proc.read()
        assert answer["id"] is None and answer["error"]["code"] == -32600, (name, answer)
    acp_proc.still_answers()
    code, err = acp_proc.close()
    assert code == 0 and "Traceback" not in err and "Infinity" not in err


def test_valid_ids_are_echoed_as_sent(acp_proc: Acp) -> None:
    for raw in ('"abc"', str(2**53 - 1), str(-(2**53 - 1)), "0"):
        acp_proc.send(f'{{"jsonrpc":"2.0","id":{raw},"method":"initialize","params":{{"protocolVersion":1}}}}')
        answer = acp_proc.read()
        assert answer["id"] == json.loads(raw) and "result" in answer


BATCHES = {
    "empty": "[]",
    "one request": '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]',
    "a request and a notification": '[{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}},'
                                    '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}]',
    "not requests": "[1,2,3]",
    "only responses": '[{"jsonrpc":"2.0","id":0,"result":{}}]',
    "nested": "[[]]",
}


@pytest.mark.parametrize("batch", list(BATCHES))
def test_a_batch_array_gets_one_invalid_request_error_runs_nothing_and_the_connection_goes_on(acp_proc: Acp, batch: str) -> None:
    acp_proc.send(BATCHES[batch])
    answer = acp_proc.read()
    assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request",
                                                             "data": answer["error"]["data"]}}
    assert "batch" in answer["error"]["data"]["reason"]
    acp_proc.nothing_more()  # none of its entries was run
    acp_proc.still_answers()
    code, err = acp_proc.close()
    assert code == 0 and "AttributeError" not in err and "Traceback" not in err


NOT_JSON = ["not json", '{"jsonrpc":"2.0","id":1,', '{"jsonrpc":"2.0","id":NaN,"method":"initialize"}',
            '{"jsonrpc":"2.0","id":Infinity,"method":"initialize"}', "\x00\x01", '{"a":1}}']
INVALID = {
    "a number": ("5", None),
    "a string": ('"initialize"', None),
    "null": ("null", None),
    "an empty object": ("{}", None),
    "no jsonrpc member": ('{"id":3,"method":"initialize","params":{"protocolVersion":1}}', 3),
    "jsonrpc 1.0": ('{"jsonrpc":"1.0","id":4,"method":"initialize"}', 4),
    "a method that is a number": ('{"jsonrpc":"2.0","id":5,"method":5}', 5),
    "params a string": ('{"jsonrpc":"2.0","id":6,"method":"initialize","params":"x"}', 6),
    "a response with both result and error": ('{"jsonrpc":"2.0","id":8,"result":1,"error":{}}', 8),
}


def test_a_line_that_is_not_json_gets_a_parse_error_and_the_connection_goes_on(acp_proc: Acp) -> None:
    for raw in NOT_JSON:
        acp_proc.send(raw)
        answer = acp_proc.read()
        assert answer["id"] is None and answer["error"]["code"] == -32700, (raw, answer)
    acp_proc.still_answers()


def test_a_message_that_is_not_a_request_gets_invalid_request_with_its_id_when_readable(acp_proc: Acp) -> None:
    for name, (raw, rid) in INVALID.items():
        acp_proc.send(raw)
        answer = acp_proc.read()
        assert answer["id"] == rid and answer["error"]["code"] == -32600, (name, answer)
    acp_proc.still_answers()
    code, err = acp_proc.close()
    assert code == 0 and "Traceback" not in err


def test_a_number_past_any_double_in_params_is_invalid_params_never_an_internal_error(acp_proc: Acp) -> None:
    acp_proc.send('{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1e400}}')
    answer = acp_proc.read()
    assert answer["id"] == 5 and answer["error"]["code"] == -32602, answer
    acp_proc.send('{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":-1e999,"mcpServers":[]}}')
    answer = acp_proc.read()
    assert answer["id"] == 6 and answer["error"]["code"] == -32602, answer
    acp_proc.send('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s","n":1e400}}')
    acp_proc.nothing_more()  # a notification is never answered
    acp_proc.still_answers()
    code, err = acp_proc.close()
    assert code == 0 and "Unhandled error" not in err and "OverflowError" not in err, err


# --- ACP session/load of a forged session ---------------------------------------------


def test_session_load_of_a_forged_session_is_an_error_naming_the_record(proj: Path, scripted: Callable[..., str]) -> None:
    """A session whose model_turn holds ``tool_calls`` as a string (rechained, so it verifies):
    ``session/load`` answers -32602 naming the record and what is wrong, and the agent stays up."""
    a = Agent(cwd=str(proj), trust=True, model=scripted([{"text": "hi"}]))
    a.ask("hello")
    sid = a.session.id
    a.close("done")
    path = Path(sessions_dir(str(proj))) / f"{sid}.jsonl"
    recs = [json.loads(ln) for ln in path.read_bytes().splitlines()]
    turn = next(i for i, r in enumerate(recs) if r["kind"] == "model_turn")
    recs[turn]["payload"]["reply"]["tool_calls"] = "Read everything"
    out, prev = [], "0" * 64
    for seq, r in enumerate(recs):
        prev, line = make_line(seq, prev, r["kind"], r["payload"])
        out.append(line)
    path.write_bytes(b"".join(out))
    acp = Acp(proj, scripted([{"text": "unused"}], "more.json"))
    try:
        acp.still_answers()
        answer = acp.request("session/load", {"cwd": str(proj), "sessionId": sid, "mcpServers": []})
        assert answer["error"]["code"] == -32602, answer
        said = json.dumps(answer["error"])
        assert f"record {turn} (line {turn + 1}, model_turn)" in said and "tool_calls is a string" in said
        acp.still_answers()
    finally:
        code, err = acp.close()
    assert code == 0 and "Traceback" not in err
