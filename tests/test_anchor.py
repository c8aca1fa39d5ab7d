"""Anchors: truncation named, growth proved, signatures checked, keys kept private, the CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from agentloop import Budget, run
from agentloop.audit.anchor import (
    Anchor,
    AnchorError,
    anchor_file,
    anchor_path_for,
    attach_tree,
    generate_keys,
    load_anchor,
    load_private_key,
    load_public_key,
    sign_anchor,
    verify_with_anchor,
    write_anchor,
    write_anchor_for,
)
from agentloop.audit.merkle import ProofError, merkle_root
from agentloop.audit.proofs import check_proof, prove_consistency, prove_inclusion
from agentloop.cli.main import main as cli
from agentloop.demo import demo_tools
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import TranscriptWriter, make_line, verify_file

pytestmark = pytest.mark.usefixtures("home")  # agentloop's home at tmp_path/"home" (conftest.py)


def write_transcript(path: Path, n: int) -> list[bytes]:
    with TranscriptWriter(path) as w:
        for i in range(n):
            w.append("note", {"i": i, "text": f"record {i}"})
    return path.read_bytes().splitlines(keepends=True)


def test_an_anchor_holds_size_last_hash_root_and_frontier(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 13)
    a = anchor_file(p)
    assert a.size == 13
    assert a.last_hash == json.loads(lines[-1])["hash"]
    assert a.root == merkle_root(line[:-1] for line in lines).hex()
    assert len(a.frontier) == 3  # 13 = 8 + 4 + 1
    assert Anchor.from_json(json.loads(json.dumps(a.to_json()))) == a
    assert verify_with_anchor(p, a).ok


@pytest.mark.parametrize("keep", range(13))
def test_truncation_to_any_earlier_size_names_the_missing_range(tmp_path: Path, keep: int) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 13)
    a = anchor_file(p)
    p.write_bytes(b"".join(lines[:keep]))
    assert verify_file(p).ok  # the chain alone cannot see it
    r = verify_with_anchor(p, a)
    assert not r.ok
    first = r.problems[0]
    assert (first.kind, first.index) == ("truncated", keep)
    assert (f"records {keep}..12 are missing" if keep < 12 else "record 12 is missing") in first.message


def test_a_cut_in_the_middle_of_a_line_is_a_torn_tail_and_a_truncation(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 6)
    a = anchor_file(p)
    p.write_bytes(b"".join(lines[:4]) + lines[4][:30])
    r = verify_with_anchor(p, a)
    assert [(x.index, x.kind) for x in r.problems] == [(4, "torn_tail"), (4, "bad_json"), (4, "truncated")]


def test_a_grown_file_checks_against_an_old_anchor_by_consistency_proof(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    write_transcript(p, 11)
    a = anchor_file(p)
    with TranscriptWriter(p, resume=True) as w:
        for i in range(30):
            w.append("more", {"i": i})
    r = verify_with_anchor(p, a)
    assert r.ok and r.consistency == "proved" and r.leaves == 41


def test_a_rewritten_history_under_a_grown_file_is_named_by_range(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 11)
    a = anchor_file(p)
    # re-forge the chain from record 9 on, then let it grow: the chain verifies
    forged = lines[:9]
    prev = json.loads(lines[8])["hash"]
    for i in range(9, 20):
        h, line = make_line(i, prev, "note", {"i": i, "forged": True})
        forged.append(line)
        prev = h
    p.write_bytes(b"".join(forged))
    assert verify_file(p).ok
    r = verify_with_anchor(p, a)
    assert not r.ok and r.consistency == "failed"
    first = r.problems[0]
    assert first.kind == "anchor_mismatch" and first.index <= 9 < first.to_json()["end"]  # 11 = 8 + 2 + 1: [8, 10)
    assert (first.index, first.to_json()["end"]) == (8, 10)


def test_an_anchor_on_an_edited_record_points_at_it(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 8)
    a = anchor_file(p)
    lines[5] = lines[5].replace(b"record 5", b"record X")
    p.write_bytes(b"".join(lines))
    r = verify_with_anchor(p, a)
    assert [(x.index, x.kind) for x in r.problems] == [(0, "anchor_mismatch"), (5, "hash_mismatch")]


def test_signed_anchors_check_against_the_right_key_only(tmp_path: Path, home: Path) -> None:
    p = tmp_path / "t.jsonl"
    write_transcript(p, 5)
    priv, pub = generate_keys(home / "keys", "alice")
    _, other_pub = generate_keys(home / "keys", "bob")
    a = sign_anchor(anchor_file(p), load_private_key(priv))
    assert a.signature is not None and len(a.signature.value) == 128
    ok = verify_with_anchor(p, a, load_public_key(pub))
    assert ok.ok and ok.signature == "valid"
    wrong = verify_with_anchor(p, a, load_public_key(other_pub))
    assert [x.kind for x in wrong.problems] == ["bad_signature"] and "not by the given key" in wrong.problems[0].message
    # the same key, but the anchor's content changed after signing
    from dataclasses import replace

    forged = replace(a, last_hash="1" * 64)
    bad = verify_with_anchor(p, forged, load_public_key(pub))
    assert bad.problems[0].kind == "bad_signature" and "does not match" in bad.problems[0].message
    unsigned = verify_with_anchor(p, anchor_file(p), load_public_key(pub))
    assert [x.kind for x in unsigned.problems] == ["unsigned_anchor"]
    assert verify_with_anchor(p, a).signature == "unchecked"


def test_keys_are_written_private_and_never_overwritten(home: Path) -> None:
    priv, pub = generate_keys(home / "keys", "k")
    assert stat.S_IMODE(os.stat(priv).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(pub).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home / "keys").st_mode) == 0o700
    with pytest.raises(AnchorError, match="exists"):
        generate_keys(home / "keys", "k")
    with pytest.raises(AnchorError, match="key name"):
        generate_keys(home / "keys", "../escape")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.pop("root"), "lacks root"),
        (lambda d: d.update(extra=1), "unexpected keys extra"),
        (lambda d: d.update(size=d["size"] + 2), "frontier has"),
        (lambda d: d.update(root="0" * 64), "not the root of its frontier"),
        (lambda d: d.update(format=2), "format 2"),
        (lambda d: d.update(type="x"), "type"),
        (lambda d: d.update(last_hash="ABC"), "last_hash"),
    ],
)
def test_malformed_anchors_are_refused_with_the_reason(tmp_path: Path, edit, message: str) -> None:
    p = tmp_path / "t.jsonl"
    write_transcript(p, 5)
    doc = anchor_file(p).to_json()
    edit(doc)
    f = tmp_path / "a.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(AnchorError, match=message) as exc:
        load_anchor(f)
    assert str(f) in str(exc.value)


def test_a_broken_transcript_is_not_anchored(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 4)
    p.write_bytes(lines[0] + lines[2] + lines[3])
    with pytest.raises(AnchorError, match="fails verification"):
        anchor_file(p)


def test_a_session_anchors_itself_at_stop_without_rehashing_and_resumes_from_it(tmp_path: Path) -> None:
    p = tmp_path / "session.jsonl"
    budget = Budget(max_steps=3)
    with TranscriptWriter(p) as w:
        tree = attach_tree(w)
        run(ScriptedModel([reply("hello")]), demo_tools(), "hi", budget, transcript=w)
        a = write_anchor_for(p, tree=tree)
    assert load_anchor(anchor_path_for(p)) == a
    assert verify_with_anchor(p, a).ok
    # Prove the resumed tree came from the sidecar anchor, not the file: spoil an
    # early line's bytes in place (same length); a rehash would see it.
    data = bytearray(p.read_bytes())
    data[20] ^= 1
    p.write_bytes(bytes(data))
    with TranscriptWriter(p, resume=True) as w:
        tree2 = attach_tree(w)
        assert tree2.root().hex() == a.root
        run(ScriptedModel([reply("again")]), demo_tools(), "more", budget, transcript=w)
        a2 = write_anchor_for(p, tree=tree2)
    assert a2.size > a.size
    # the untouched second anchor extends the first: restore the byte and check both
    data = bytearray(p.read_bytes())
    data[20] ^= 1
    p.write_bytes(bytes(data))
    assert verify_with_anchor(p, a2).ok
    assert verify_with_anchor(p, a).consistency == "proved"


def test_a_tree_that_does_not_match_the_file_falls_back_to_hashing_it(tmp_path: Path) -> None:
    from agentloop.audit.merkle import MerkleTree

    p = tmp_path / "t.jsonl"
    write_transcript(p, 6)
    a = write_anchor_for(p, tree=MerkleTree())  # a stale, empty tree
    assert a == anchor_file(p)


def test_proof_documents_round_trip_and_catch_tampering(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 21)
    doc = prove_inclusion(p, 7)
    assert "record 7" in check_proof(doc, p)
    tampered = dict(doc, record=doc["record"].replace("record 7", "record 8"))
    with pytest.raises(ProofError, match="leaf hash"):
        check_proof(tampered)
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"".join(lines[:20]) + lines[20].replace(b"record 20", b"record Z"))
    with pytest.raises(ProofError, match="another Merkle root"):
        check_proof(doc, other)
    c = prove_consistency(p, 9, 21)
    check_proof(c, p)
    with pytest.raises(ProofError):
        check_proof(dict(c, size1=10))
    with pytest.raises(AnchorError, match="exactly the keys"):
        check_proof(dict(c, extra=1))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_anchor_verify_prove_check_and_keygen(tmp_path: Path, capsys: pytest.CaptureFixture[str], home: Path) -> None:
    p = tmp_path / "t.jsonl"
    lines = write_transcript(p, 10)
    assert run_cli(["keygen", "--name", "ci"], capsys)[0] == 0
    assert (home / "keys" / "ci.key").exists()
    code, out, _ = run_cli(["anchor", str(p), "--sign", "ci"], capsys)
    assert code == 0 and "anchored 10 records" in out and "signed by key" in out
    a = anchor_path_for(p)
    code, out, _ = run_cli(["verify", str(p), "--anchor", a, "--public-key", "ci"], capsys)
    assert code == 0 and "signature valid" in out
    p.write_bytes(b"".join(lines[:7]))
    code, out, _ = run_cli(["verify", str(p), "--anchor", a, "--json"], capsys)
    rep = json.loads(out)
    assert code == 1 and rep["problems"][0]["kind"] == "truncated" and rep["problems"][0]["end"] == 10
    assert run_cli(["verify", str(p)], capsys)[0] == 0  # without the anchor, the cut is invisible
    proof = tmp_path / "proof.json"
    assert run_cli(["prove", str(p), "--record", "3", "--out", str(proof)], capsys)[0] == 0
    code, out, _ = run_cli(["check-proof", str(proof), "--file", str(p)], capsys)
    assert code == 0 and "record 3 is in the transcript of 7 records" in out
    code, out, _ = run_cli(["prove", str(p), "--from-size", "4"], capsys)
    cproof = tmp_path / "c.json"
    cproof.write_text(out)
    assert run_cli(["check-proof", str(cproof)], capsys)[0] == 0
    doc = json.loads(out)
    doc["root1"] = "0" * 64
    cproof.write_text(json.dumps(doc))
    code, out, _ = run_cli(["check-proof", str(cproof)], capsys)
    assert code == 1 and "FAILED" in out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["verify", "{p}", "--anchor", "{d}/missing.json"], "missing.json: cannot read the anchor"),
        (["verify", "{p}", "{p}", "--anchor", "{a}"], "exactly one FILE"),
        (["verify", "{p}", "--public-key", "ci"], "--public-key needs --anchor"),
        (["verify", "{p}", "--anchor", "{a}", "--public-key", "nokey"], "nokey.pub: cannot read the key"),
        (["anchor", "{d}/nope.jsonl"], "nope.jsonl: cannot read"),
        (["anchor", "{p}", "--sign", "{p}"], "not an unencrypted PEM private key"),
        (["prove", "{p}", "--record", "99"], "record 99 is not among records 0..4"),
        (["prove", "{p}", "--from-size", "0"], "no consistency proof from size 0"),
        (["check-proof", "{p}"], "the proof is not JSON"),
        (["check-proof", "{a}"], "the proof's type is 'agentloop-anchor'"),
    ],
)
def test_cli_mistakes_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str) -> None:
    p = tmp_path / "t.jsonl"
    write_transcript(p, 5)
    a = tmp_path / "a.json"
    write_anchor(anchor_file(p), a)
    argv = [x.format(p=p, a=a, d=tmp_path) for x in args]
    code, out, err = run_cli(argv, capsys)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_the_demo_act_shows_a_truncation_caught(tmp_path: Path) -> None:
    from agentloop.demo.anchor_act import act_anchor

    runs = act_anchor(str(tmp_path))
    assert len(runs) == 1 and runs[0].held, [c.text for c in runs[0].claims if not c.held]
    assert any("are missing" in c.text for c in runs[0].claims)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 13, 16, 17, 31])
@pytest.mark.parametrize("grow", [1, 7, 40])
def test_growth_from_any_anchor_size_is_proved(tmp_path: Path, m: int, grow: int) -> None:
    p = tmp_path / "t.jsonl"
    write_transcript(p, m)
    a = anchor_file(p)
    with TranscriptWriter(p, resume=True) as w:
        for i in range(grow):
            w.append("more", {"i": i})
    r = verify_with_anchor(p, a)
    assert r.ok and r.consistency == "proved" and r.leaves == m + grow


# Issue 20: the anchor loader read only the first MiB, so a signed anchor followed by more than 1 MiB
# of spaces and then garbage (or a second document) was accepted, and a valid anchor after 1 MiB of
# leading whitespace was refused as "not JSON". The file is read whole, up to a stated 1 MiB limit.
def _signed_anchor_text(tmp_path: Path, home: Path) -> bytes:
    p = tmp_path / "t.jsonl"
    write_transcript(p, 5)
    priv, _ = generate_keys(home / "keys", "alice")
    a = sign_anchor(anchor_file(p), load_private_key(priv))
    write_anchor(a, tmp_path / "a.json")
    return (tmp_path / "a.json").read_bytes()


@pytest.mark.parametrize("tail", [b" " * (1 << 20) + b"garbage", b" " * (1 << 20) + b'{"type":"agentloop-anchor"}', b"\n" * ((1 << 20) + 5)])
def test_an_anchor_with_anything_past_1_mib_is_refused_not_cut_short(tmp_path: Path, home: Path, tail: bytes) -> None:
    from agentloop.audit.anchor import MAX_ANCHOR_BYTES

    good = _signed_anchor_text(tmp_path, home)
    bad = tmp_path / "bad.json"
    bad.write_bytes(good + tail)
    assert bad.stat().st_size > MAX_ANCHOR_BYTES
    with pytest.raises(AnchorError, match="larger than 1048576 bytes"):
        load_anchor(bad)


def test_trailing_data_after_an_anchor_is_refused(tmp_path: Path, home: Path) -> None:
    good = _signed_anchor_text(tmp_path, home)
    for tail in (b"x", b"{}", b"\n" + good):
        bad = tmp_path / "bad.json"
        bad.write_bytes(good + tail)
        with pytest.raises(AnchorError, match="not one JSON text"):
            load_anchor(bad)


def test_an_anchor_file_of_exactly_1_mib_with_whitespace_around_it_loads(tmp_path: Path, home: Path) -> None:
    from agentloop.audit.anchor import MAX_ANCHOR_BYTES

    good = _signed_anchor_text(tmp_path, home).strip()
    lead = b" \t\r\n" * ((MAX_ANCHOR_BYTES - len(good)) // 8)
    text = lead + good + b"\n" * (MAX_ANCHOR_BYTES - len(good) - len(lead))
    assert len(text) == MAX_ANCHOR_BYTES
    (tmp_path / "big.json").write_bytes(text)
    assert load_anchor(tmp_path / "big.json").signature is not None
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + good)
    with pytest.raises(AnchorError, match="not one JSON text"):
        load_anchor(tmp_path / "bom.json")


def test_prove_from_size_0_refuses_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/transcript-format.md 8.4: RFC 9162 defines consistency proofs for 0 < m, and its vectors reject m = 0 < n."""
    p = tmp_path / "t.jsonl"
    write_transcript(p, 4)
    code, _, err = run_cli(["prove", str(p), "--from-size", "0"], capsys)
    assert code == 2 and "RFC 9162" in err and "--from-size 1" in err and len(err.strip().splitlines()) == 1
