"""The conformance vectors (conformance/): both verifiers pass every case, and the vectors are reproducible.

A verifier that passes them all is conformant to docs/transcript-format.md.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "conformance"
sys.path.insert(0, str(DIR))

from run import check_all, command_invoker, load_cases, python_invoker  # noqa: E402

ERROR_KINDS = {
    "unreadable", "torn_tail", "bad_json", "not_an_object", "missing_fields", "unexpected_fields",
    "unserialisable_payload", "hash_mismatch", "non_canonical", "seq_gap", "prev_mismatch",
    "truncated", "anchor_mismatch", "inconsistent", "unsigned_anchor", "bad_signature",
}


def test_agentloop_verify_passes_every_conformance_case() -> None:
    failures = list(check_all(str(DIR), python_invoker()))
    assert failures == []


def test_the_node_verifier_passes_every_conformance_case() -> None:
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("node is not installed (CI runs it: .ci/run)")
    failures = list(check_all(str(DIR), command_invoker([exe, str(ROOT / "verifiers" / "node" / "agentloop-verify.mjs")])))
    assert failures == []


def test_regenerating_the_vectors_gives_identical_bytes(tmp_path: Path) -> None:
    out = tmp_path / "c"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "make-conformance"), "--out", str(out), "--no-check"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (out / "manifest.json").read_bytes() == (DIR / "manifest.json").read_bytes()
    for sub in ("transcripts", "anchors", "proofs", "keys"):
        cmp = filecmp.dircmp(out / sub, DIR / sub)
        assert (cmp.left_only, cmp.right_only) == ([], []), sub
        _, mismatch, errors = filecmp.cmpfiles(out / sub, DIR / sub, sorted(os.listdir(out / sub)), shallow=False)
        assert (mismatch, errors) == ([], []), sub


def test_the_vectors_cover_every_problem_kind_and_every_anchor_verdict() -> None:
    cases = load_cases(str(DIR))
    kinds, signatures, consistencies, exits = set(), set(), set(), set()
    for c in cases:
        exits.add((c["command"], c["expect"]["exit"]))
        rep = c["expect"].get("report")
        if rep is None:
            continue
        kinds.update(p["kind"] for p in rep["problems"])
        if "anchor" in rep:
            signatures.add(rep["anchor"]["signature"])
            consistencies.add(rep["anchor"]["consistency"])
    assert kinds == ERROR_KINDS - {"inconsistent"}
    # 'inconsistent' cannot be produced from a well-formed anchor: when every frontier range matches,
    # the file's own frontier at m is the anchor's, so the consistency proof built from it holds.
    assert signatures == {"absent", "unchecked", "valid", "invalid"}
    assert consistencies == {"n/a", "equal", "proved", "failed"}
    assert exits == {("verify", 0), ("verify", 1), ("verify", 2), ("check-proof", 0), ("check-proof", 1), ("check-proof", 2)}


def test_the_manifest_names_a_spec_section_and_an_existing_file_for_every_case() -> None:
    for c in load_cases(str(DIR)):
        assert c["spec"] and c["what"], c["name"]
        for key in ("anchor", "public_key", "proof"):
            if key in c:
                assert (DIR / c[key]).is_file(), (c["name"], key)
        if c["command"] == "verify" and "report" in c["expect"] and c["expect"]["report"]["problems"] != [{"index": -1, "kind": "unreadable"}]:
            assert (DIR / c["file"]).is_file(), c["name"]
    assert json.loads((DIR / "manifest.json").read_text())["format"] == 1
