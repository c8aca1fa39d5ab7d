"""Anchors: small signed checkpoints that let a verifier see a cut-off tail.

Normative text: docs/transcript-format.md ("Anchors"). An anchor states the
record count, the last record's hash and the RFC 9162 Merkle root of a
transcript at one moment, plus the Merkle frontier (one hash per 1-bit of the
count) so that a writer can resume the tree without rehashing the file and a
verifier can say which range of records was changed. It may carry an Ed25519
signature over its canonical (RFC 8785) form without the ``signature`` member.

``verify_with_anchor`` checks the chain and the anchor in one streaming pass:

- fewer records than the anchor covers: ``truncated``, naming the missing range;
- the first ``size`` records hash to another root: ``anchor_mismatch``, naming
  the first frontier range that differs;
- more records than the anchor covers: the grown file is checked by an RFC 9162
  consistency proof from the anchor's size to the file's (``inconsistent``);
- a public key was given: ``unsigned_anchor`` or ``bad_signature``.

Sessions and runs anchor themselves when they stop::

    tree = attach_tree(writer)          # a listener; resumes from the sidecar anchor
    ...                                 # run, append records
    write_anchor_for(writer.path, tree=tree, private_key=key)   # FILE.anchor.json

The core reads no clock or environment: key files live where the caller says
(the CLI passes ``$AGENTLOOP_HOME/keys``). ``generate_keys`` is the one place
that draws randomness (the OS CSPRNG, through ``cryptography``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import orjson

from ..canonical import canonical
from ..transcript import (
    GENESIS,
    Problem,
    TranscriptError,
    TranscriptWriter,
    VerifyReport,
    bounded_lines,
    open_regular,
    read_tail,
    too_long_problem,
    verify_lines,
)
from .merkle import (
    EMPTY_ROOT,
    MerkleTree,
    ProofError,
    consistency_ranges,
    iter_leaves,
    range_roots,
    verify_consistency,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "ANCHOR_TYPE",
    "MAX_ANCHOR_BYTES",
    "Anchor",
    "AnchorError",
    "AnchorReport",
    "RangeProblem",
    "Signature",
    "anchor_file",
    "anchor_path_for",
    "attach_tree",
    "generate_keys",
    "load_anchor",
    "load_private_key",
    "load_public_key",
    "sign_anchor",
    "verify_with_anchor",
    "write_anchor",
    "write_anchor_for",
]

ANCHOR_TYPE = "agentloop-anchor"
FORMAT_VERSION = 1
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_HEX128 = re.compile(r"[0-9a-f]{128}\Z")
_HEX16 = re.compile(r"[0-9a-f]{16}\Z")
_KEYS = frozenset(("type", "format", "size", "last_hash", "root", "frontier"))
_SIG_KEYS = frozenset(("alg", "key_id", "public_key", "value"))
_MAX_SIZE = 2**53


class AnchorError(ValueError):
    """An anchor or key file is malformed or unreadable, or a file cannot be anchored."""


@dataclass(frozen=True)
class RangeProblem(Problem):
    """A problem about records ``index`` to ``end - 1``."""

    end: int = 0

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["end"] = self.end
        return out


@dataclass(frozen=True)
class Signature:
    public_key: str
    """The raw 32-byte Ed25519 public key, hex."""
    value: str
    """The 64-byte signature, hex."""

    @property
    def key_id(self) -> str:
        return key_id(bytes.fromhex(self.public_key))

    def to_json(self) -> dict[str, Any]:
        return {"alg": "Ed25519", "key_id": self.key_id, "public_key": self.public_key, "value": self.value}


def key_id(raw_public_key: bytes) -> str:
    """16 hex characters of SHA-256 of the raw public key."""
    return hashlib.sha256(raw_public_key).hexdigest()[:16]


@dataclass(frozen=True)
class Anchor:
    size: int
    last_hash: str
    root: str
    frontier: tuple[str, ...]
    signature: Signature | None = None

    def body(self) -> dict[str, Any]:
        """The anchor without its signature: what is signed."""
        return {
            "format": FORMAT_VERSION,
            "frontier": list(self.frontier),
            "last_hash": self.last_hash,
            "root": self.root,
            "size": self.size,
            "type": ANCHOR_TYPE,
        }

    def signed_bytes(self) -> bytes:
        """The RFC 8785 canonical bytes of ``body()``: the Ed25519 message."""
        return canonical(self.body())

    def to_json(self) -> dict[str, Any]:
        out = self.body()
        if self.signature is not None:
            out["signature"] = self.signature.to_json()
        return out

    def tree(self) -> MerkleTree:
        return MerkleTree.from_frontier(self.size, [bytes.fromhex(h) for h in self.frontier])

    @classmethod
    def from_tree(cls, tree: MerkleTree, last_hash: str) -> Anchor:
        return cls(tree.size, last_hash, tree.root().hex(), tuple(h.hex() for h in tree.frontier))

    @classmethod
    def from_json(cls, obj: Any) -> Anchor:
        """Parse and check an anchor document.

        Raises:
            AnchorError: it is not a well-formed, self-consistent anchor.
        """
        if not isinstance(obj, dict):
            raise AnchorError("an anchor is a JSON object")
        missing = _KEYS - obj.keys()
        if missing:
            raise AnchorError(f"the anchor lacks {', '.join(sorted(missing))}")
        extra = obj.keys() - _KEYS - {"signature"}
        if extra:
            raise AnchorError(f"the anchor has unexpected keys {', '.join(sorted(extra))}")
        if obj["type"] != ANCHOR_TYPE:
            raise AnchorError(f"the anchor's type is {obj['type']!r}, not {ANCHOR_TYPE!r}")
        if obj["format"] != FORMAT_VERSION or type(obj["format"]) is not int:
            raise AnchorError(f"the anchor is for format {obj['format']!r}; this verifier reads format {FORMAT_VERSION}")
        size = obj["size"]
        if type(size) is not int or not 0 <= size <= _MAX_SIZE:
            raise AnchorError(f"the anchor's size {size!r} is not a record count")
        for k in ("last_hash", "root"):
            if not isinstance(obj[k], str) or not _HEX64.match(obj[k]):
                raise AnchorError(f"the anchor's {k} is not 64 lowercase hex characters")
        fr = obj["frontier"]
        if not isinstance(fr, list) or not all(isinstance(h, str) and _HEX64.match(h) for h in fr):
            raise AnchorError("the anchor's frontier is not a list of 64-hex-character hashes")
        if len(fr) != bin(size).count("1"):
            raise AnchorError(f"the anchor's frontier has {len(fr)} hashes; size {size} needs {bin(size).count('1')}")
        if size == 0 and obj["last_hash"] != GENESIS:
            raise AnchorError("an anchor of size 0 has 64 zeros as its last hash")
        tree = MerkleTree.from_frontier(size, [bytes.fromhex(h) for h in fr])
        if tree.root().hex() != obj["root"]:
            raise AnchorError("the anchor's root is not the root of its frontier")
        sig = None
        if "signature" in obj:
            s = obj["signature"]
            if not isinstance(s, dict) or set(s) != _SIG_KEYS:
                raise AnchorError("the anchor's signature is {alg, key_id, public_key, value}")
            if s["alg"] != "Ed25519":
                raise AnchorError(f"the anchor's signature algorithm {s['alg']!r} is not Ed25519")
            if not isinstance(s["public_key"], str) or not _HEX64.match(s["public_key"]):
                raise AnchorError("the signature's public_key is not 64 lowercase hex characters")
            if not isinstance(s["value"], str) or not _HEX128.match(s["value"]):
                raise AnchorError("the signature's value is not 128 lowercase hex characters")
            if not isinstance(s["key_id"], str) or not _HEX16.match(s["key_id"]) or s["key_id"] != key_id(bytes.fromhex(s["public_key"])):
                raise AnchorError("the signature's key_id is not the first 16 hex characters of SHA-256 of its public key")
            sig = Signature(s["public_key"], s["value"])
        return cls(size, obj["last_hash"], obj["root"], tuple(fr), sig)


MAX_ANCHOR_BYTES = 1 << 20
"""The largest anchor file read (1 MiB): a real anchor is under 4 KiB (at most 53 frontier hashes)."""


def load_anchor(path: str | os.PathLike[str]) -> Anchor:
    """Read an anchor file: one JSON text (RFC 8259, UTF-8, no byte order mark) of at most
    ``MAX_ANCHOR_BYTES`` bytes, whitespace allowed around its tokens, nothing after it.

    Raises:
        AnchorError: unreadable, too large, not JSON (trailing data included) or not an
            anchor; the message names the file.
    """
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_ANCHOR_BYTES + 1)
    except OSError as exc:
        raise AnchorError(f"{p}: cannot read the anchor: {exc.strerror or exc}") from None
    if len(data) > MAX_ANCHOR_BYTES:
        raise AnchorError(f"{p}: the anchor file is larger than {MAX_ANCHOR_BYTES} bytes (1 MiB); an anchor is a few KiB")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise AnchorError(f"{p}: the anchor is not one JSON text: {exc}") from None
    try:
        return Anchor.from_json(obj)
    except AnchorError as exc:
        raise AnchorError(f"{p}: {exc}") from None


def write_anchor(anchor: Anchor, path: str | os.PathLike[str]) -> None:
    """Write an anchor atomically (a temporary file renamed over the target).

    Raises:
        AnchorError: the file cannot be written.
    """
    p = os.fspath(path)
    tmp = f"{p}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb", opener=lambda q, flags: os.open(q, flags, 0o600)) as f:  # private, as its transcript is
            f.write(canonical(anchor.to_json()) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise AnchorError(f"{p}: cannot write the anchor: {exc.strerror or exc}") from None


def anchor_path_for(path: str | os.PathLike[str]) -> str:
    """Where a transcript's own anchor goes: ``FILE.anchor.json`` beside it."""
    return os.fspath(path) + ".anchor.json"


# --- keys -------------------------------------------------------------------------


def generate_keys(keys_dir: str | os.PathLike[str], name: str = "default") -> tuple[str, str]:
    """Make an Ed25519 key pair: ``NAME.key`` (PKCS#8 PEM, mode 0600) and ``NAME.pub`` (SPKI PEM).

    The directory is created with mode 0700. Nothing is overwritten.

    Raises:
        AnchorError: a bad name, an existing key, or a write failure.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) or name.startswith("."):
        raise AnchorError(f"key name {name!r}: use 1-64 letters, digits, '_', '-' or '.'")
    d = os.fspath(keys_dir)
    priv_path, pub_path = os.path.join(d, f"{name}.key"), os.path.join(d, f"{name}.pub")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
    except OSError as exc:
        raise AnchorError(f"{d}: cannot create the key directory: {exc.strerror or exc}") from None
    for p in (priv_path, pub_path):
        if os.path.exists(p):
            raise AnchorError(f"{p}: exists; choose another --name or remove it")
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(priv)
        os.chmod(priv_path, 0o600)
        fd = os.open(pub_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pub)
    except OSError as exc:
        raise AnchorError(f"{d}: cannot write the key: {exc.strerror or exc}") from None
    return priv_path, pub_path


def _read_key_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 16)
    except OSError as exc:
        raise AnchorError(f"{path}: cannot read the key: {exc.strerror or exc}") from None


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PEM file.

    Raises:
        AnchorError: unreadable, or not an unencrypted Ed25519 private key.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    p = os.fspath(path)
    data = _read_key_file(p)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise AnchorError(f"{p}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AnchorError(f"{p}: the key is not Ed25519")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file (SPKI) or 64 hex characters.

    Raises:
        AnchorError: unreadable, or not an Ed25519 public key.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    p = os.fspath(path)
    data = _read_key_file(p)
    text = data.strip()
    if re.fullmatch(rb"[0-9a-fA-F]{64}", text):
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text.decode()))
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise AnchorError(f"{p}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise AnchorError(f"{p}: the key is not Ed25519")
    return key


def _raw_public(key: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def sign_anchor(anchor: Anchor, private_key: Ed25519PrivateKey) -> Anchor:
    """The anchor with an Ed25519 signature over ``signed_bytes()``."""
    pub = _raw_public(private_key.public_key())
    sig = private_key.sign(anchor.signed_bytes())
    return replace(anchor, signature=Signature(pub.hex(), sig.hex()))


def check_signature(anchor: Anchor, public_key: Ed25519PublicKey) -> str | None:
    """None when ``anchor`` is signed by ``public_key``; otherwise why not."""
    from cryptography.exceptions import InvalidSignature

    if anchor.signature is None:
        return "the anchor is not signed, but a public key was given"
    raw = _raw_public(public_key)
    if anchor.signature.public_key != raw.hex():
        return f"the anchor is signed by key {anchor.signature.key_id}, not by the given key {key_id(raw)}"
    try:
        public_key.verify(bytes.fromhex(anchor.signature.value), anchor.signed_bytes())
    except InvalidSignature:
        return "the signature does not match the anchor's content"
    return None


# --- making anchors -----------------------------------------------------------------


def _hash_of_line(line: bytes) -> str | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    h = obj.get("hash") if isinstance(obj, dict) else None
    return h if isinstance(h, str) else None


def anchor_file(path: str | os.PathLike[str], private_key: Ed25519PrivateKey | None = None) -> Anchor:
    """Anchor a transcript as it is now: one streaming pass that verifies and hashes it.

    Raises:
        AnchorError: the file is unreadable or does not verify (an anchor vouches
            for a good file only).
    """
    p = os.fspath(path)
    tree = MerkleTree()

    def tap(lines: Iterator[bytes]) -> Iterator[bytes]:
        for raw in lines:
            if raw.endswith(b"\n"):
                tree.append(raw[:-1])
            yield raw

    too_long: list[int] = []
    try:
        with open_regular(p) as f:
            report = verify_lines(tap(bounded_lines(f, too_long)))
    except OSError as exc:
        raise AnchorError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if too_long:
        report.problems.append(too_long_problem(too_long[0]))
    if not report.ok:
        pr = report.problems[0]
        raise AnchorError(f"{p}: will not anchor a transcript that fails verification (record {pr.index}: {pr.kind}: {pr.message})")
    anchor = Anchor.from_tree(tree, report.last_hash)
    return sign_anchor(anchor, private_key) if private_key is not None else anchor


def write_anchor_for(
    path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    tree: MerkleTree | None = None,
    private_key: Ed25519PrivateKey | None = None,
) -> Anchor:
    """Anchor a transcript and write the anchor (default ``FILE.anchor.json``).

    Call it when a session or run stops. With ``tree`` (the listener from
    ``attach_tree``), nothing is rehashed: the file's last record is read from
    its end to take the last hash, and the tree gives the rest. Without it the
    file is verified and hashed in one pass.

    Raises:
        AnchorError: the file cannot be anchored or the anchor not written.
    """
    p = os.fspath(path)
    anchor: Anchor | None = None
    if tree is not None:
        try:
            tail = read_tail(p)
        except TranscriptError as exc:
            raise AnchorError(str(exc)) from None
        count, last = (0, GENESIS) if tail is None else (tail.seq + 1, tail.hash)
        if count == tree.size:
            anchor = Anchor.from_tree(tree, last)
    if anchor is None:
        anchor = anchor_file(p)
    if private_key is not None:
        anchor = sign_anchor(anchor, private_key)
    write_anchor(anchor, out if out is not None else anchor_path_for(p))
    return anchor


def attach_tree(writer: TranscriptWriter, anchor: Anchor | None = None) -> MerkleTree:
    """Hang an incremental Merkle tree on a writer and return it.

    For a resumed writer, the tree is restored from ``anchor`` (default: the
    sidecar ``FILE.anchor.json``) when it matches the writer's count and last
    hash, so the file is not rehashed; otherwise the existing lines are hashed
    once, streaming.
    """
    tree: MerkleTree | None = None
    if writer.count > 0:
        if anchor is None:
            side = anchor_path_for(writer.path)
            if os.path.exists(side):
                try:
                    anchor = load_anchor(side)
                except AnchorError:
                    anchor = None
        if anchor is not None and anchor.size == writer.count and anchor.last_hash == writer.last_hash:
            tree = anchor.tree()
        else:
            tree = MerkleTree()
            with open(writer.path, "rb") as f:
                for leaf in iter_leaves(f):
                    tree.append(leaf)
    if tree is None:
        tree = MerkleTree()
    writer.listeners.append(tree)
    return tree


# --- verifying with an anchor -----------------------------------------------------------


@dataclass
class AnchorReport(VerifyReport):
    """A chain report with the anchor's findings merged in (sorted by record)."""

    anchor_size: int = 0
    leaves: int = 0
    """Complete lines in the file: the Merkle tree's size."""
    root: str = EMPTY_ROOT.hex()
    """The Merkle root of the whole file (its complete lines)."""
    signature: str = "absent"
    """``absent``, ``unchecked`` (signed, no key given), ``valid`` or ``invalid``."""
    consistency: str = "n/a"
    """``equal`` (same size), ``proved`` (grown, proof checked), ``failed``, ``n/a``."""
    anchor_problems: list[Problem] = field(default_factory=list)

    def anchor_json(self) -> dict[str, Any]:
        return {
            "size": self.anchor_size,
            "leaves": self.leaves,
            "root": self.root,
            "signature": self.signature,
            "consistency": self.consistency,
        }


def verify_with_anchor(
    path: str | os.PathLike[str], anchor: Anchor, public_key: Ed25519PublicKey | None = None
) -> AnchorReport:
    """Verify a transcript's chain and check it against an anchor. Never raises.

    One pass computes the chain report and the Merkle tree; a file that has grown
    past the anchor is then checked by a consistency proof built from the
    anchor-size frontier and a second pass over the new records only.
    """
    p = os.fspath(path)
    m = anchor.size
    tree = MerkleTree()
    at_m: MerkleTree | None = tree.copy() if m == 0 else None
    line_m: bytes | None = None
    offset_m = 0
    offset = 0
    # The anchor's frontier covers leaf ranges [a, b). When the file's tree
    # reaches size b, its last frontier hash is the root of [a, b): compare.
    ranges = anchor.tree().subtree_ranges()
    ends = {b: (k, a) for k, (a, b) in enumerate(ranges)}
    differs: tuple[int, int] | None = None

    def tap(lines: Iterator[bytes]) -> Iterator[bytes]:
        nonlocal at_m, line_m, offset_m, offset, differs
        for raw in lines:
            offset += len(raw)
            if raw.endswith(b"\n"):
                tree.append(raw[:-1])
                size = tree.size
                if size in ends and differs is None:
                    k, a = ends[size]
                    if tree.frontier[-1].hex() != anchor.frontier[k]:
                        differs = (a, size)
                if size == m:
                    at_m, line_m, offset_m = tree.copy(), raw[:-1], offset
            yield raw

    out = AnchorReport(anchor_size=m)
    anchor_problems: list[Problem] = []
    too_long: list[int] = []
    try:
        with open_regular(p) as f:
            base = verify_lines(tap(bounded_lines(f, too_long)))
            if too_long:
                base.problems.append(too_long_problem(too_long[0]))
            n = tree.size
            # Section 7.3 step 4 is taken only when steps 1 and 3 found nothing: an anchor whose
            # last hash is not the file's is not vouched for, so its growth is not proved (n/a).
            last_ok = m == 0 or (line_m is not None and _hash_of_line(line_m) == anchor.last_hash)
            if at_m is not None and n > m and differs is None and last_ok:
                out.consistency = _check_growth(f, anchor, at_m, offset_m, tree, anchor_problems)
    except (OSError, MemoryError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        base = VerifyReport()
        base.problems.append(Problem(-1, "unreadable", f"{p}: {msg}"))
        n = 0
    out.count, out.last_hash = base.count, base.last_hash
    out.valid_prefix, out.valid_prefix_bytes = base.valid_prefix, base.valid_prefix_bytes
    out.leaves, out.root = n, tree.root().hex()
    if not any(pr.kind == "unreadable" for pr in base.problems):
        anchor_problems[:0] = _compare_with_anchor(out, anchor, n, differs, line_m)
    _check_anchor_signature(out, anchor, public_key, anchor_problems)
    out.anchor_problems = anchor_problems
    out.problems = sorted(base.problems + anchor_problems, key=lambda pr: pr.index)
    return out


def _compare_with_anchor(
    out: AnchorReport, anchor: Anchor, n: int, differs: tuple[int, int] | None, line_m: bytes | None
) -> list[Problem]:
    """What a readable file of ``n`` records shows against the anchor; sets ``out.consistency`` where that decides it."""
    m = anchor.size
    found: list[Problem] = []
    if differs is not None:
        a, b = differs
        found.append(RangeProblem(a, "anchor_mismatch", f"records {a}..{b - 1} differ from the anchor (their Merkle subtree root is not the anchor's)", None, b))
        if n > m:
            out.consistency = "failed"
    if n < m:
        what = f"record {n} is" if m - n == 1 else f"records {n}..{m - 1} are"
        found.append(RangeProblem(n, "truncated", f"the anchor covers {m} records but the file has {n}: {what} missing", None, m))
    elif differs is None and m > 0 and (line_m is None or _hash_of_line(line_m) != anchor.last_hash):
        found.append(RangeProblem(m - 1, "anchor_mismatch", f"record {m - 1}'s hash is not the anchor's last hash", None, m))
    elif differs is None and n == m:
        out.consistency = "equal"
    return found


def _check_anchor_signature(
    out: AnchorReport, anchor: Anchor, public_key: Ed25519PublicKey | None, anchor_problems: list[Problem]
) -> None:
    """Set ``out.signature``; a missing or bad signature, when a key was given, is the first anchor problem."""
    if public_key is not None:
        why = check_signature(anchor, public_key)
        if why is None:
            out.signature = "valid"
        else:
            out.signature = "invalid"
            kind = "unsigned_anchor" if anchor.signature is None else "bad_signature"
            anchor_problems.insert(0, Problem(-1, kind, why))
    elif anchor.signature is not None:
        out.signature = "unchecked"


def _check_growth(f: Any, anchor: Anchor, at_m: MerkleTree, offset_m: int, tree: MerkleTree, problems: list[Problem]) -> str:
    """Prove that the file's first ``anchor.size`` records are the anchored ones, by RFC 9162 consistency."""
    m, n = anchor.size, tree.size
    if m == 0:
        return "proved"  # every tree extends the empty one
    ranges = consistency_ranges(m, n)
    known = dict(zip(at_m.subtree_ranges(), at_m.frontier))
    later = [r for r in ranges if r not in known]
    f.seek(offset_m)
    roots = iter(range_roots(iter_leaves(f), later, first_index=m))
    path = [known[r] if r in known else next(roots) for r in ranges]
    try:
        verify_consistency(m, n, bytes.fromhex(anchor.root), tree.root(), path)
    except ProofError as exc:
        problems.append(RangeProblem(0, "inconsistent", f"the file does not extend the anchored {m} records: {exc}", None, m))
        return "failed"
    return "proved"
