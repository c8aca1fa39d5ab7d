"""The hash chain: tampering is caught at the right record, and the verifier never crashes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from agentloop import Budget, run
from agentloop.canonical import canonical
from agentloop.demo import demo_tools
from agentloop.testing import ScriptedModel, reply
from agentloop.transcript import (
    GENESIS,
    MemoryTranscript,
    TranscriptError,
    TranscriptWriter,
    make_line,
    read_tail,
    verify_file,
    verify_lines,
    verify_records,
)


def sample_lines() -> list[bytes]:
    model = ScriptedModel([
        reply("", [("add", {"a": 1, "b": 2})], step=1),
        reply("", [("echo", {"text": "hi"})], step=2),
        reply("done"),
    ])
    t = MemoryTranscript()
    run(model, demo_tools(), "go", Budget(max_steps=5), transcript=t)
    return list(t.lines)


def first(lines: list[bytes]) -> tuple[int, str]:
    report = verify_lines(lines)
    assert not report.ok, "tampering went unnoticed"
    p = report.problems[0]
    return p.index, p.kind


def rewrite(line: bytes, change) -> bytes:  # type: ignore[no-untyped-def]
    obj = orjson.loads(line)
    change(obj)
    return canonical(obj) + b"\n"


def rehash(line: bytes) -> bytes:
    obj = orjson.loads(line)
    _, new = make_line(obj["seq"], obj["prev"], obj["kind"], obj["payload"])
    return new


def test_an_untouched_transcript_verifies() -> None:
    lines = sample_lines()
    report = verify_lines(lines)
    assert report.ok and report.count == len(lines) == report.valid_prefix


def test_a_payload_rewrite_is_caught_at_that_record() -> None:
    lines = sample_lines()
    lines[3] = rewrite(lines[3], lambda o: o["payload"].update(content={"sum": 4}))
    assert first(lines) == (3, "hash_mismatch")


def test_a_rewrite_with_a_recomputed_hash_is_caught_at_the_next_records_prev() -> None:
    lines = sample_lines()
    lines[3] = rehash(rewrite(lines[3], lambda o: o["payload"].update(content={"sum": 4})))
    assert first(lines) == (4, "prev_mismatch")


def test_a_reorder_is_caught_where_the_order_breaks() -> None:
    lines = sample_lines()
    lines[2], lines[3] = lines[3], lines[2]
    assert first(lines) == (2, "seq_gap")


def test_a_reorder_with_renumbering_is_caught_as_a_prev_mismatch() -> None:
    lines = sample_lines()
    lines[2], lines[3] = lines[3], lines[2]

    def renumber(i: int):  # type: ignore[no-untyped-def]
        return lambda o: o.update(seq=i)

    lines[2] = rehash(rewrite(lines[2], renumber(2)))
    lines[3] = rehash(rewrite(lines[3], renumber(3)))
    assert first(lines) == (2, "prev_mismatch")


def test_a_deleted_middle_record_is_caught_where_it_was() -> None:
    lines = sample_lines()
    del lines[4]
    index, kind = first(lines)
    assert index == 4 and kind in ("seq_gap", "prev_mismatch")


def test_changed_whitespace_is_non_canonical() -> None:
    lines = sample_lines()
    lines[1] = lines[1].replace(b'"kind":', b'"kind": ', 1)
    assert first(lines) == (1, "non_canonical")


def test_reformatted_json_with_the_same_values_is_non_canonical() -> None:
    lines = sample_lines()
    lines[2] = json.dumps(orjson.loads(lines[2]), indent=None).encode() + b"\n"
    assert first(lines) == (2, "non_canonical")


def test_a_truncated_tail_is_not_detectable_without_an_anchor() -> None:
    """The chain's stated limit: every surviving record still points at a real one."""
    lines = sample_lines()
    cut = lines[:-2]
    report = verify_lines(cut)
    assert report.ok
    assert report.count == len(lines) - 2  # only an external count (or an anchor) can tell


def test_a_partial_last_line_is_a_torn_tail() -> None:
    lines = sample_lines()
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    kinds = {p.kind for p in verify_lines(lines).problems}
    assert "torn_tail" in kinds
    assert verify_lines(lines).valid_prefix == len(lines) - 1


@pytest.mark.parametrize(
    ("obj", "kind"),
    [
        ([1, 2], "not_an_object"),
        ({"seq": 0, "prev": GENESIS, "kind": "x"}, "missing_fields"),
        ({"seq": 0, "prev": GENESIS, "kind": "x", "payload": None, "hash": "0" * 64, "extra": 1}, "unexpected_fields"),
        ({"seq": "0", "prev": GENESIS, "kind": "x", "payload": None, "hash": "0" * 64}, "missing_fields"),
        ({"seq": 0, "prev": GENESIS, "kind": "x", "payload": float("nan"), "hash": "0" * 64}, "unserialisable_payload"),
    ],
)
def test_malformed_records_are_named(obj: object, kind: str) -> None:
    report = verify_records([obj])
    assert [p.kind for p in report.problems][:1] == [kind]
    assert report.problems[0].index == 0


def test_verify_records_catches_a_rewritten_payload() -> None:
    objs = [orjson.loads(line) for line in sample_lines()]
    assert verify_records(objs).ok
    objs[1]["payload"]["step"] = 99
    assert verify_records(objs).problems[0].kind == "hash_mismatch"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"\x00\xff\xfe garbage\n", "bad_json"),
        (b"\xc3\x28 not utf-8\n", "bad_json"),
        (b"{\"a\": 1}\n", "missing_fields"),
        (b"\n", "bad_json"),
    ],
)
def test_junk_files_give_problems_not_crashes(tmp_path: Path, content: bytes, kind: str) -> None:
    p = tmp_path / "junk.jsonl"
    p.write_bytes(content)
    report = verify_file(p)
    assert not report.ok and report.problems[0].kind == kind and report.problems[0].line == 1


def test_an_empty_file_verifies_with_zero_records(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    report = verify_file(p)
    assert report.ok and report.count == 0


def test_a_directory_or_missing_file_is_unreadable(tmp_path: Path) -> None:
    assert verify_file(tmp_path).problems[0].kind == "unreadable"
    assert verify_file(tmp_path / "nope.jsonl").problems[0].kind == "unreadable"


def test_a_line_of_100_mb_is_reported_not_crashed(tmp_path: Path) -> None:
    p = tmp_path / "huge.jsonl"
    with open(p, "wb") as f:
        f.write(sample_lines()[0])
        f.write(b'{"x":"' + b"a" * (100 * 1024 * 1024) + b'"}\n')
    report = verify_file(p)
    assert report.problems[0].index == 1 and report.problems[0].kind == "line_too_long"  # not read past 64 MiB


def test_the_writer_resumes_from_the_tail_and_keeps_one_chain(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with TranscriptWriter(p) as w:
        w.append("a", {"n": 1})
        w.append("b", {"n": 2})
    with TranscriptWriter(p, resume=True) as w:
        assert w.count == 2
        w.append("c", {"n": 3})
    report = verify_file(p)
    assert report.ok and report.count == 3


def test_the_writer_refuses_to_overwrite_or_resume_a_torn_file(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with TranscriptWriter(p) as w:
        w.append("a", {})
    with pytest.raises(TranscriptError, match="exists"):
        TranscriptWriter(p)
    with open(p, "ab") as f:
        f.write(b'{"hash":')
    with pytest.raises(TranscriptError, match="incomplete"):
        TranscriptWriter(p, resume=True)  # no repair function: a torn tail is refused
    with pytest.raises(TranscriptError):
        read_tail(str(p))


def test_fsync_durability_writes_the_same_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, mode in ((a, "flush"), (b, "fsync")):
        with TranscriptWriter(path, durability=mode) as w:  # type: ignore[arg-type]
            w.append("k", {"v": [1, 2, 3]})
    assert a.read_bytes() == b.read_bytes()


def test_a_failed_write_breaks_the_writer_for_good(tmp_path: Path) -> None:
    class Failing:
        def __init__(self) -> None:
            self.n = 0

        def write(self, data: bytes) -> int:
            self.n += 1
            if self.n == 2:
                raise OSError(28, "No space left on device")
            return len(data)

        def flush(self) -> None:
            pass

        def fileno(self) -> int:
            return -1

        def close(self) -> None:
            pass

    w = TranscriptWriter(tmp_path / "t.jsonl", opener=lambda p, m: Failing())  # type: ignore[arg-type,return-value]
    w.append("a", {})
    with pytest.raises(TranscriptError, match="No space"):
        w.append("b", {})
    with pytest.raises(TranscriptError, match="broken"):
        w.append("c", {})


class _Dribbling:
    """A raw file that takes at most ``step`` bytes a write, then (when ``stall_after`` is set) none."""

    def __init__(self, path: str, step: int, stall_after: int | None = None):
        self.f = open(path, "ab", buffering=0)  # noqa: SIM115
        self.step, self.stall_after, self.writes = step, stall_after, 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.stall_after is not None and self.writes > self.stall_after:
            return 0
        return int(self.f.write(bytes(data[: self.step])))

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return int(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def test_a_short_write_is_finished_so_every_record_lands_whole(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TranscriptWriter(path, opener=lambda p, m: _Dribbling(p, 7))  # type: ignore[arg-type,return-value]
    for i in range(5):
        w.append("k", {"i": i, "text": "x" * 50})
    w.close()
    assert verify_file(path).ok and verify_file(path).count == 5


def test_a_file_that_stops_taking_bytes_breaks_the_writer_and_is_cut_back_to_its_last_record(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TranscriptWriter(path, opener=lambda p, m: _Dribbling(p, 40, stall_after=12))  # type: ignore[arg-type,return-value]
    acked = 0
    with pytest.raises(TranscriptError, match="no more bytes"):
        for i in range(10):
            w.append("k", {"i": i})
            acked += 1
    with pytest.raises(TranscriptError, match="broken"):
        w.append("k", {"i": 99})
    w.close()
    report = verify_file(path)
    assert report.valid_prefix == acked >= 1
    assert report.ok and report.count == acked  # the half-written line was cut off by the writer


def test_the_default_writer_is_unbuffered_so_an_acknowledged_record_is_already_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TranscriptWriter(path)
    w.append("k", {"i": 1})
    assert path.read_bytes().count(b"\n") == 1  # read back while the writer is still open
    w.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloop.cli.main", *args], capture_output=True, text=True, timeout=60)


def test_verify_cli_exit_codes_and_json(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(sample_lines()))
    bad = tmp_path / "bad.jsonl"
    lines = sample_lines()
    lines[2] = rewrite(lines[2], lambda o: o["payload"].update(step=7))
    bad.write_bytes(b"".join(lines))

    ok = _cli("verify", str(good))
    assert ok.returncode == 0 and "ok" in ok.stdout
    failed = _cli("verify", "--json", str(bad))
    assert failed.returncode == 1
    out = json.loads(failed.stdout)
    assert out["problems"][0]["index"] == 2 and out["problems"][0]["kind"] == "hash_mismatch"
    assert out["problems"][0]["line"] == 3
    missing = _cli("verify", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr + missing.stdout


def test_verify_cli_on_a_directory_exits_2_without_a_traceback(tmp_path: Path) -> None:
    r = _cli("verify", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_line_equals_canonical_record_and_hash_is_over_the_line_minus_its_hash() -> None:
    import hashlib

    for line in sample_lines():
        obj = orjson.loads(line)
        assert canonical(obj) + b"\n" == line
        body = b"{" + line[75:-1]
        assert hashlib.sha256(body).hexdigest() == obj["hash"]


from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import agentloop.line as line_mod  # noqa: E402

_SAMPLE = b"".join(sample_lines())

# The fast path's checks run in C (agentloop._linescan, built by scripts/build-native) or, when the
# C module is absent or stale, in Python (line.py). Every fast-path test below holds both to the
# reference path. tests/test_native.py checks that a checkout with a build runs the C one.
SCANNERS = [
    pytest.param("c", marks=pytest.mark.skipif(line_mod._scan is None, reason="the C scanner is not built (scripts/build-native)")),
    "python",
]


@contextlib.contextmanager
def _scanner(kind: str) -> Iterator[None]:
    real = line_mod._scan
    line_mod._scan = real if kind == "c" else None
    try:
        yield
    finally:
        line_mod._scan = real


def test_the_scanner_switch_reaches_the_compiled_fast_path() -> None:
    """The tests swap ``line._scan``: a swap the compiled ``fast_hash`` did not see would test one path twice."""
    seen: list[bytes] = []
    line = sample_lines()[0]
    with _scanner("python"):
        line_mod._scan = lambda b: seen.append(b) or 1
        assert line_mod.fast_hash(line, 0, GENESIS) is not None
        assert seen == [line]
        line_mod._scan = None
        assert line_mod.fast_hash(line, 0, GENESIS) is not None
        assert seen == [line]


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SAMPLE) - 1), st.binary(min_size=0, max_size=3)), min_size=1, max_size=3))
def test_the_fast_verify_path_reaches_the_same_verdict_as_the_reference_path(scanner: str, edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(_SAMPLE)
    for pos, new in edits:
        data[pos : pos + 1] = new
    lines = bytes(data).splitlines(keepends=True)
    with _scanner(scanner):
        fast, slow = verify_lines(lines), verify_lines(lines, fast=False)
    assert [p.to_json() for p in fast.problems] == [p.to_json() for p in slow.problems]
    assert (fast.count, fast.valid_prefix, fast.valid_prefix_bytes, fast.last_hash) == (
        slow.count, slow.valid_prefix, slow.valid_prefix_bytes, slow.last_hash)


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=12))
def test_any_payload_written_verifies_on_both_paths(scanner: str, payload: object) -> None:
    t = MemoryTranscript()
    try:
        t.append("k", payload)
    except ValueError:
        return
    t.append("k2", {"after": True})
    with _scanner(scanner):
        assert verify_lines(t.lines).ok and verify_lines(t.lines, fast=False).ok


# Issue 20: lines with floats, integers of 16 digits and more, and characters past U+FFFF take the
# fast path too. Each value is written twice: as its canonical line, which both paths must accept,
# and in orjson's own sorted form (a float "100.0" or "1e+16", an integer past 2**53 in full, keys
# sorted by code point), which the fast path must not accept where RFC 8785 writes it otherwise.
_KEY_CHARS = "a\"\\\x01\u00e9\ue000\uff01\uffff\U00010000\U0001f600"
"""Keys: characters in U+E000..U+FFFF and past U+FFFF (the two sort orders part between them), escapes."""
_keys20 = (st.sampled_from(["a", "\ue000", "\uffff", "\U0001f600", "\U0001f600x", "\uff01", "é", "z", "\U0001f3f7\ufe0f"])
           | st.text(max_size=3) | st.text(alphabet=st.sampled_from(_KEY_CHARS), max_size=4))
_EDGE_FLOATS = [1.0, 10.0, 100.0, -0.0, 0.0, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, -1e20, 1.5e20, 1e-5, 1e-6, 1e-7,
                1.5e-6, -1e-7, 0.5, 2.0**60, 123456789.0, 5e-324, 1.7976931348623157e308, 9007199254740993.0]
_EDGE_INTS = [2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, -(2**53) - 1, 2**60, 1152921504606847000, 10**18, 10**19, 2**63 - 1, 2**63,
              -(2**63), 2**64 - 1, 2**64, 2**65, 9999999999999999, 18446744073709551615, 12345678901234567890]
_numbers20 = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(_EDGE_FLOATS)
    | st.integers(-(2**63), 2**64 - 1)
    | st.integers(2**53 - 2, 2**64 - 1).flatmap(lambda n: st.sampled_from([n, -n]))
    | st.sampled_from(_EDGE_INTS)
    # the canonical text of a double past 2**53, read back as an integer (1152921504606847000)
    | st.floats(2.0**53, 2.0**64).map(lambda f: int(canonical(int(f)))).flatmap(lambda n: st.sampled_from([n, -n, n + 1, n - 10]))
)
_values20 = st.recursive(
    _numbers20 | st.text(alphabet=st.sampled_from("a.0159e-+E,:[]{}\"\\\ue000\U0001f600")) | st.booleans(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(_keys20, c, max_size=4),
    max_leaves=16,
)


def _lines20(payload: object) -> tuple[bytes, bytes, bytes]:
    """The canonical line of a record holding ``payload``, the same record in orjson's sorted form,
    and that form again with its hash taken over its own bytes (self-consistent, but not RFC 8785's)."""
    prev = GENESIS
    body = canonical({"kind": "k", "payload": payload, "prev": prev, "seq": 0}, exact=False)
    import hashlib

    h = hashlib.sha256(body).hexdigest()
    canonical_line = b'{"hash":"' + h.encode() + b'",' + body[1:] + b"\n"
    orjson_line = orjson.dumps({"hash": h, "kind": "k", "payload": payload, "prev": prev, "seq": 0}, option=orjson.OPT_SORT_KEYS) + b"\n"
    own = hashlib.sha256(b"{" + orjson_line[75:-1]).hexdigest()
    return canonical_line, orjson_line, orjson_line.replace(h.encode(), own.encode(), 1)


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=1500, deadline=None)
@given(_values20)
# always tried, whatever Hypothesis draws: integers past 2**53 written in full (each has a shorter canonical
# form, or is not the closest double), floats RFC 8785 writes otherwise, keys whose UTF-16 order differs
@example([2**60, -(2**60), 2**63, 2**64 - 1, 2**53 + 1, -(2**53) - 1])
@example({"\U0001f600": 1e-6, "\uff01": 100.0, "n": 1e21})
def test_the_fast_path_accepts_floats_big_integers_and_astral_keys_only_in_their_canonical_form(scanner: str, payload: object) -> None:
    try:
        lines = _lines20(payload)
    except (ValueError, orjson.JSONEncodeError):
        return  # no canonical form (a lone surrogate...), or past orjson's limits
    with _scanner(scanner):
        for line in lines:
            fast, slow = verify_lines([line]), verify_lines([line], fast=False)
            assert [p.to_json() for p in fast.problems] == [p.to_json() for p in slow.problems], line
            assert (fast.last_hash, fast.valid_prefix) == (slow.last_hash, slow.valid_prefix)
        assert verify_lines([lines[0]]).ok


def _reference_calls(lines: list[bytes]) -> list[bytes]:
    """The lines that ``verify_lines`` (which must find them all intact) sent down the reference path."""
    import agentloop.transcript as tr

    calls: list[bytes] = []
    real = tr._check_line

    def spy(line: bytes, *a: object) -> object:
        calls.append(line)
        return real(line, *a)  # type: ignore[arg-type]

    tr._check_line = spy  # type: ignore[assignment]
    try:
        assert verify_lines(lines).ok
    finally:
        tr._check_line = real
    return calls


@pytest.mark.parametrize("scanner", SCANNERS)
def test_the_fast_path_takes_float_big_integer_and_astral_lines(scanner: str) -> None:
    """Those lines no longer leave the fast path: the reference path is never called."""
    t = MemoryTranscript()
    t.append("k", {"f": [0.7, -673.3, 2.1966561357625648e-10, 1e21, 255.3676742], "ts": 1_700_000_001_000_000_000})
    t.append("k", {"ids": [9007199254740991, 2**60, -(2**62)], "n": 10**18})
    t.append("k", {"text": "\U0001f600 \u2764\ufe0f", "\U0001f3f7\ufe0f": 1, "plain": [1.5, "e-mail 1.0, v2"]})
    with _scanner(scanner):
        assert _reference_calls(t.lines) == []


def test_with_the_c_scanner_the_fast_path_takes_keys_that_sort_otherwise_in_utf16() -> None:
    """RFC 8785 sorts "\U0001f3f7" (UTF-16 D83C DFF7) before "\uff01"; orjson, by code point, after.
    Such a line is not orjson's sorted form, yet the C path proves it (the non-BMP kind)."""
    if line_mod._scan is None:
        pytest.skip("the C scanner is not built (scripts/build-native)")
    t = MemoryTranscript()
    t.append("k", {"tags": {"\U0001f3f7\ufe0f": "label", "plain": 1, "\uff01": "fullwidth"}, "n": [1.5, 2**60]})
    t.append("k", {"a": {"\ue000": {"\U00010000": 1, "\uffff": 2}}, "\U0001f600": [{"\uff01": 0, "\U0001f600": 1e21}]})
    assert t.lines[0].index("\U0001f3f7".encode()) < t.lines[0].index("\uff01".encode())
    assert _reference_calls(list(t.lines)) == []


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=300, deadline=None)
@given(st.floats(2.0**53, 2.0**64, exclude_max=True).map(lambda f: int(canonical(int(f)))), st.booleans())
def test_the_fast_path_takes_every_big_integer_in_its_canonical_form(scanner: str, n: int, negative: bool) -> None:
    """Written in full up to 64 bits (orjson's range), as a double's shortest digits padded with zeros."""
    m = -n if negative and n <= 2**63 else n
    line = _lines20({"n": m, "x": [n, 1]})[0]  # such integers are not exact: records hold them when read
    with _scanner(scanner):
        assert _reference_calls([line]) == []


@settings(max_examples=3000, deadline=None)
@given(st.integers(2**53 - 2, 2**64 - 1) | st.floats(2.0**53, 2.0**64).map(int) | st.floats(2.0**53, 2.0**64).map(lambda f: int(canonical(int(f))))
       | st.sampled_from(_EDGE_INTS), st.integers(-3000, 3000), st.booleans())
def test_the_c_scanner_accepts_a_big_integer_only_where_the_python_check_does(n: int, shift: int, negative: bool) -> None:
    """The exact integer check in C (shortest digits by integer arithmetic) against line.py's, which asks repr()."""
    if line_mod._scan is None:
        pytest.skip("the C scanner is not built (scripts/build-native)")
    for m in (n, n + shift):
        m = -m if negative else m
        line = b'{"a":[' + str(m).encode() + b"]}"
        assert (line_mod._scan(line) == 1) == line_mod._int_is_jcs(m), m


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=64) | st.lists(st.sampled_from([b'"', b"\\", b":", b"{", b"}", b"[", b"]", b",", b"-", b"1", b".0", b"e+", b"e-",
                                                           b"\xee\x80\x80", b"\xf0\x9f\x98\x80", b"12345678901234567890"])).map(b"".join))
def test_the_c_scanner_takes_any_bytes_without_failing(data: bytes) -> None:
    if line_mod._scan is None:
        pytest.skip("the C scanner is not built (scripts/build-native)")
    assert line_mod._scan(data) in (0, 1, 2)
    assert line_mod._scan(data + b"\n") in (0, 1, 2)


@pytest.mark.parametrize(
    ("payload_text", "canonical_text"),
    [("100.0", "100"), ("1e+16", "10000000000000000"), ("1e-6", "0.000001"), ("1152921504606846976", "1152921504606847000"),
     ("-0.0", "0"), ("1.5e-6", "0.0000015"), ("9007199254740993", "9007199254740992")],
)
def test_orjson_number_forms_that_rfc8785_writes_otherwise_are_non_canonical_on_both_paths(payload_text: str, canonical_text: str) -> None:
    import hashlib

    body = '{"kind":"k","payload":' + canonical_text + ',"prev":"' + GENESIS + '","seq":0}'
    h = hashlib.sha256(body.encode()).hexdigest()
    line = ('{"hash":"' + h + '","kind":"k","payload":' + payload_text + ',"prev":"' + GENESIS + '","seq":0}\n').encode()
    for fast in (True, False):
        for scanner in ("c", "python"):
            with _scanner(scanner):
                r = verify_lines([line], fast=fast)
            assert [(p.index, p.kind) for p in r.problems] == [(0, "non_canonical")]
