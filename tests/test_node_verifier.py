"""The independent Node verifier agrees with ours: on edge-case lines, anchors, signatures and proofs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentloop.audit.anchor import (
    anchor_file,
    sign_anchor,
    verify_with_anchor,
    write_anchor,
)
from agentloop.audit.proofs import prove_consistency, prove_inclusion
from agentloop.canonical import canonical
from agentloop.transcript import GENESIS, TranscriptWriter, make_line, verify_file

ROOT = Path(__file__).resolve().parent.parent
VERIFIER = ROOT / "verifiers" / "node" / "agentloop-verify.mjs"


def node(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed: the independent verifier runs in CI (see .ci/run)")
    return subprocess.run([exe, str(VERIFIER), *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_the_node_verifier_passes_every_rfc_vector() -> None:
    r = node("vectors", str(ROOT / "tests" / "data" / "merkle-rfc6962"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {"vectors": 205, "failures": []}


def body_hash(seq: Any, prev: str, kind: str, payload_json: str) -> str:
    """The hash over a body written by hand (for payloads our writer would refuse)."""
    body = '{"kind":' + json.dumps(kind) + ',"payload":' + payload_json + ',"prev":"' + prev + '","seq":' + str(seq) + "}"
    return hashlib.sha256(body.encode()).hexdigest()


def line_by_hand(seq: Any, prev: str, kind: str, payload_json: str, h: str | None = None) -> bytes:
    h = h or body_hash(seq, prev, kind, payload_json)
    return ('{"hash":"' + h + '","kind":' + json.dumps(kind) + ',"payload":' + payload_json + ',"prev":"' + prev + '","seq":' + str(seq) + "}\n").encode()


H0, L0 = make_line(0, GENESIS, "a", {"x": 1})


def with_second(line: bytes) -> bytes:
    return L0 + line


def good(payload: Any, seq: int = 1, prev: str = H0) -> bytes:
    return make_line(seq, prev, "k", payload)[1]


def variants() -> dict[str, bytes]:
    ok_floats = good({"a": 1.5, "b": 1e21, "c": 1e-7, "d": 5e-324, "e": 123456789.125, "f": -2.5e-10, "g": 0.1})
    uni = good({"é": "ü", "\U0001f600": "x", "\uffff": "y", "\x7f": "\x01\x1f", "tab\t": "q\"\\/"})
    canonical_line = good({"s": "é", "n": 1})
    v: dict[str, bytes] = {
        "floats": with_second(ok_floats),
        "unicode_keys_sorted_by_utf16": with_second(uni),
        "int_2_53": with_second(good({"n": 2**53, "m": -(2**53)})),
        "int_past_2_53_in_u64": with_second(line_by_hand(1, H0, "k", '{"n":9007199254740993}')),
        "int_past_u64_is_a_double": with_second(line_by_hand(1, H0, "k", '{"n":18446744073709551616}')),
        "int_past_u64_is_a_double_canonical": with_second(line_by_hand(1, H0, "k", '{"n":18446744073709552000}')),
        "infinite_double": with_second(line_by_hand(1, H0, "k", '{"n":1e400}')),
        "huge_integer_text": with_second(line_by_hand(1, H0, "k", '{"n":' + "9" * 400 + "}")),
        "underflow_to_zero": with_second(line_by_hand(1, H0, "k", '{"n":1e-400}')),
        "float_1_0_noncanonical": with_second(line_by_hand(1, H0, "k", '{"n":1.0}', body_hash(1, H0, "k", '{"n":1}'))),
        "minus_zero": with_second(line_by_hand(1, H0, "k", '{"n":-0}', body_hash(1, H0, "k", '{"n":0}'))),
        "exponent_form": with_second(line_by_hand(1, H0, "k", '{"n":1E2}', body_hash(1, H0, "k", '{"n":100}'))),
        "seq_as_float": with_second(line_by_hand("1.0", H0, "k", "{}")),
        "seq_as_exp": with_second(line_by_hand("1e0", H0, "k", "{}")),
        "seq_as_string": with_second(line_by_hand('"1"', H0, "k", "{}")),
        "seq_true": with_second(line_by_hand("true", H0, "k", "{}")),
        "seq_minus_zero": line_by_hand("-0", GENESIS, "k", "{}", body_hash(0, GENESIS, "k", "{}")),
        "seq_past_2_53": with_second(line_by_hand(2**53 + 1, H0, "k", "{}")),
        "seq_past_u64": with_second(line_by_hand(2**64, H0, "k", "{}")),
        "seq_negative": with_second(good({}, seq=-1)),
        "lone_high_surrogate": with_second(line_by_hand(1, H0, "k", '"\\ud800"')),
        "lone_low_surrogate": with_second(line_by_hand(1, H0, "k", '"\\udc00"')),
        "surrogate_pair_escaped": with_second(line_by_hand(1, H0, "k", '"\\ud83d\\ude00"', body_hash(1, H0, "k", '"\U0001f600"'))),
        "invalid_utf8": with_second(b'{"hash":"' + H0.encode() + b'","kind":"\xff"}\n'),
        "bom": with_second(b"\xef\xbb\xbf" + good({})),
        "duplicate_key": with_second(good({"a": 1}).replace(b'"payload":{"a":1}', b'"payload":{"a":2,"a":1}')),
        "leading_space": with_second(b" " + good({})),
        "carriage_return": with_second(good({})[:-1] + b"\r\n"),
        "escaped_e_acute": with_second(canonical_line.replace("é".encode(), b"\\u00e9")),
        "escaped_slash": with_second(good({"s": "/"}).replace(b'"/"', b'"\\/"')),
        "uppercase_control_escape": with_second(good({"s": "\x1f"}).replace(b"\\u001f", b"\\u001F")),
        "raw_control_char": with_second(line_by_hand(1, H0, "k", '"a\tb"')),
        "nested_200": with_second(line_by_hand(1, H0, "k", "[" * 200 + "]" * 200)),
        "nested_1100": with_second(line_by_hand(1, H0, "k", "[" * 1100 + "]" * 1100)),
        "trailing_comma": with_second(line_by_hand(1, H0, "k", "[1,]")),
        "leading_zero": with_second(line_by_hand(1, H0, "k", "01")),
        "empty_line": with_second(b"\n"),
        "null_line": with_second(b"null\n"),
        "array_line": with_second(b"[]\n"),
        "empty_object": with_second(b"{}\n"),
        "extra_field": with_second(b'{"extra":1,' + good({})[1:]),
        "uppercase_hex_prev": with_second(line_by_hand(1, H0.upper(), "k", "{}")),
        "short_hash": with_second(good({}).replace(b'"hash":"', b'"hash":"ab', 1)[:-1] + b"\n"),
        "kind_not_string": with_second(line_by_hand(1, H0, "k", "{}").replace(b'"kind":"k"', b'"kind":7')),
        "torn": L0 + good({})[:-1],
        "torn_mid": L0 + good({})[:40],
        "prev_wrong": with_second(good({}, prev="1" * 64)),
        "seq_gap": with_second(good({}, seq=5)),
        "after_a_bad_line": L0 + b"junk\n" + good({}, seq=2, prev="2" * 64),
        "empty_file": b"",
    }
    return v


def test_both_verifiers_report_the_same_problems_on_edge_case_lines(tmp_path: Path) -> None:
    cases = variants()
    jobs = []
    for name, data in cases.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(data)
        jobs.append({"file": str(p)})
    r = node("batch", stdin="\n".join(json.dumps(j) for j in jobs))
    assert r.returncode == 0, r.stderr
    results = [json.loads(x) for x in r.stdout.splitlines()]
    disagreements = []
    kinds_seen = set()
    for (name, _), js in zip(cases.items(), results):
        py = verify_file(tmp_path / f"{name}.jsonl")
        a = (py.count, py.last_hash, [(x.index, x.kind) for x in py.problems])
        b = (js["records"], js["last_hash"], [(x["index"], x["kind"]) for x in js["problems"]])
        kinds_seen.update(k for _, k in a[2])
        if a != b:
            disagreements.append(f"{name}: python {a} node {b}")
    assert not disagreements, "\n".join(disagreements)
    # the cases reach every error kind the chain verifier has (unserialisable_payload,
    # which only nesting past 500 reaches from a line, is in the deep-nesting test)
    assert kinds_seen >= {"torn_tail", "bad_json", "not_an_object", "missing_fields", "unexpected_fields",
                          "hash_mismatch", "non_canonical", "seq_gap", "prev_mismatch"}


def deep_variants() -> dict[str, bytes]:
    return {
        "nested_254": with_second(line_by_hand(1, H0, "k", "[" * 254 + "]" * 254)),
        "nested_500": with_second(line_by_hand(1, H0, "k", "[" * 500 + "]" * 500)),
        "nested_501": with_second(line_by_hand(1, H0, "k", "[" * 500 + "1" + "]" * 500)),
    }


def test_payloads_nested_near_the_specified_depth_get_the_same_verdict_in_both(tmp_path: Path) -> None:
    for name, data in deep_variants().items():
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(data)
        js = json.loads(node("verify", str(p), "--json").stdout)
        py = verify_file(p)
        assert [(x.index, x.kind) for x in py.problems] == [(x["index"], x["kind"]) for x in js["problems"]], name
    assert js["problems"] == [] or js["problems"][0]["kind"] == "unserialisable_payload"


def test_canonical_edge_values_are_what_node_computes(tmp_path: Path) -> None:
    # Negative control for the comparison above: a clean file with many float
    # and unicode values passes both, so agreement is not agreement on failure.
    p = tmp_path / "clean.jsonl"
    with TranscriptWriter(p) as w:
        for i, v in enumerate([0.1, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, -0.5, 2**53, "\U0001f600\uffff", {"\uffff": 1, "\U0001f600": 2}]):
            w.append("v", {"i": i, "v": v})
    assert verify_file(p).ok
    r = node("verify", str(p), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stdout
    assert canonical({"\uffff": 1, "\U0001f600": 2}) == '{"😀":2,"\uffff":1}'.encode()


def test_both_verifiers_agree_on_anchors_signatures_and_growth(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    other = Ed25519PrivateKey.generate()
    pub = tmp_path / "k.pub"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    hexpub = tmp_path / "other.hex"
    hexpub.write_text(other.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex())
    p = tmp_path / "t.jsonl"
    with TranscriptWriter(p) as w:
        for i in range(37):
            w.append("n", {"i": i})
    signed = tmp_path / "a.json"
    write_anchor(sign_anchor(anchor_file(p), key), signed)
    unsigned = tmp_path / "u.json"
    write_anchor(anchor_file(p), unsigned)
    lines = p.read_bytes().splitlines(keepends=True)
    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(p.read_bytes())
    with TranscriptWriter(grown, resume=True) as w:
        for i in range(50):
            w.append("m", {"i": i})
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:20]))
    tampered_anchor = tmp_path / "t.json"
    doc = json.loads(signed.read_text())
    doc["signature"]["value"] = "00" + doc["signature"]["value"][2:]
    tampered_anchor.write_text(json.dumps(doc))
    combos = [
        (p, signed, pub), (p, signed, hexpub), (p, unsigned, pub), (p, signed, None), (p, tampered_anchor, pub),
        (grown, signed, pub), (cut, signed, pub), (grown, unsigned, None),
    ]
    from agentloop.audit.anchor import load_anchor, load_public_key

    for f, a, k in combos:
        args = ["verify", str(f), "--anchor", str(a), "--json"] + (["--public-key", str(k)] if k else [])
        js = json.loads(node(*args).stdout)
        py = verify_with_anchor(f, load_anchor(a), load_public_key(k) if k else None)
        assert [(x.index, x.kind) for x in py.problems] == [(x["index"], x["kind"]) for x in js["problems"]], (f, a, k)
        assert py.anchor_json() == js["anchor"], (f, a, k)
    assert json.loads(node("verify", str(grown), "--anchor", str(signed), "--json").stdout)["anchor"]["consistency"] == "proved"


def test_node_checks_python_proofs_and_rejects_tampered_ones(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with TranscriptWriter(p) as w:
        for i in range(45):
            w.append("n", {"i": i})
    docs = {"incl": prove_inclusion(p, 17), "incl0": prove_inclusion(p, 0, 1), "cons": prove_consistency(p, 13),
            "cons_pow2": prove_consistency(p, 16, 40), "cons_equal": prove_consistency(p, 45, 45)}
    bad = {
        "incl_record": dict(docs["incl"], record=docs["incl"]["record"].replace('"i":17', '"i":18')),
        "incl_index": dict(docs["incl"], index=18),
        "incl_path": dict(docs["incl"], path=docs["incl"]["path"][:-1]),
        "cons_root1": dict(docs["cons"], root1="ab" * 32),
        "cons_size": dict(docs["cons"], size1=14),
    }
    for name, doc in {**docs, **bad}.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(doc))
        r = node("check-proof", str(f), "--file", str(p), "--json")
        want = 0 if name in docs else 1
        assert r.returncode == want, (name, r.stdout, r.stderr)
    short = tmp_path / "short.jsonl"
    short.write_bytes(b"".join(p.read_bytes().splitlines(keepends=True)[:30]))
    r = node("check-proof", str(tmp_path / "cons.json"), "--file", str(short))
    assert r.returncode == 1 and "fewer than" in r.stdout


def test_node_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(L0)
    for args in (["verify", str(p), "--anchor", str(tmp_path / "none.json")], ["check-proof", str(p)], ["nonsense"],
                 ["verify", str(tmp_path / "missing.jsonl")]):
        r = node(*args)
        assert r.returncode == 2, args
        assert r.stderr.count("\n") <= 1 and "at " not in r.stderr.split(":", 1)[0]
