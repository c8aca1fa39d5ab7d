#!/usr/bin/env node
// An independent verifier of agentloop transcripts (format v1), written from
// docs/transcript-format.md alone. Node.js >= 18, standard library only.
//
//   node agentloop-verify.mjs verify FILE... [--anchor A] [--public-key K] [--json]
//   node agentloop-verify.mjs check-proof PROOF [--file FILE] [--json]
//   node agentloop-verify.mjs batch          < jobs.jsonl   (one {"file","anchor"?,"public_key"?} per line)
//   node agentloop-verify.mjs vectors DIR    (the RFC 6962/9162 proof vectors)
//
// Exit codes: 0 ok, 1 problems found, 2 unreadable input or a usage error.

import { createHash, createPublicKey, verify as cryptoVerify } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { constants as bufferConstants } from "node:buffer";

const GENESIS = "0".repeat(64);
const HEX64 = /^[0-9a-f]{64}$/;
const RECORD_KEYS = ["hash", "kind", "payload", "prev", "seq"];
const MAX_PARSE_DEPTH = 1024;
const MAX_CANON_DEPTH = 500;
const I64_MIN = -(2n ** 63n);
const U64_MAX = 2n ** 64n - 1n;
const SAFE = 2n ** 53n;

class UsageError extends Error {}
class BadJson extends Error {}
class Unserialisable extends Error {}
class ProofError extends Error {}

// ---------------------------------------------------------------------------
// JSON (RFC 8259) with exact numbers: section 4 step 2 and section 2.

class Num {
  constructor(isInt, big, dbl) {
    this.isInt = isInt; // an "integer" in the sense of section 2
    this.big = big; // BigInt when isInt
    this.dbl = dbl; // the double otherwise
  }
}

const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function parseJson(bytes) {
  let s;
  try {
    s = utf8.decode(bytes);
  } catch {
    throw new BadJson("not valid UTF-8");
  }
  let i = 0;
  let depth = 0;
  const ws = () => {
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const fail = (what) => {
    throw new BadJson(`${what} at character ${i}`);
  };
  const hex4 = () => {
    const h = s.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("a bad \\u escape");
    i += 4;
    return parseInt(h, 16);
  };
  const str = () => {
    i++; // the opening quote
    let out = "";
    let start = i;
    for (;;) {
      if (i >= s.length) fail("an unterminated string");
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        out += s.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail("a control character in a string");
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += s.slice(start, i);
      i++;
      const e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case "\\": out += "\\"; break;
        case "/": out += "/"; break;
        case "b": out += "\b"; break;
        case "f": out += "\f"; break;
        case "n": out += "\n"; break;
        case "r": out += "\r"; break;
        case "t": out += "\t"; break;
        case "u": {
          const u = hex4();
          if (u >= 0xdc00 && u <= 0xdfff) fail("a lone low surrogate");
          if (u >= 0xd800 && u <= 0xdbff) {
            if (s[i] !== "\\" || s[i + 1] !== "u") fail("a lone high surrogate");
            i += 2;
            const lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("a high surrogate without its low surrogate");
            out += String.fromCharCode(u, lo);
          } else {
            out += String.fromCharCode(u);
          }
          break;
        }
        default:
          fail("a bad escape");
      }
      start = i;
    }
  };
  const num = () => {
    NUMBER_RE.lastIndex = i;
    const m = NUMBER_RE.exec(s);
    if (!m) fail("a bad number");
    const text = m[0];
    i += text.length;
    if (!/[.eE]/.test(text)) {
      const big = BigInt(text);
      if (big >= I64_MIN && big <= U64_MAX) return new Num(true, big, 0);
    }
    const d = Number(text);
    if (!Number.isFinite(d)) fail("a number that is infinite as a double");
    return new Num(false, 0n, d);
  };
  const value = () => {
    ws();
    if (i >= s.length) fail("the end of input");
    const c = s[i];
    if (c === "{") {
      if (++depth > MAX_PARSE_DEPTH) fail("nesting too deep");
      i++;
      const obj = new Map();
      ws();
      if (s[i] === "}") {
        i++;
        depth--;
        return obj;
      }
      for (;;) {
        ws();
        if (s[i] !== '"') fail("an object key that is not a string");
        const k = str();
        ws();
        if (s[i] !== ":") fail("a missing ':'");
        i++;
        obj.set(k, value()); // a repeated name: the last value counts
        ws();
        if (s[i] === ",") { i++; continue; }
        if (s[i] === "}") { i++; depth--; return obj; }
        fail("a missing ',' or '}'");
      }
    }
    if (c === "[") {
      if (++depth > MAX_PARSE_DEPTH) fail("nesting too deep");
      i++;
      const arr = [];
      ws();
      if (s[i] === "]") {
        i++;
        depth--;
        return arr;
      }
      for (;;) {
        arr.push(value());
        ws();
        if (s[i] === ",") { i++; continue; }
        if (s[i] === "]") { i++; depth--; return arr; }
        fail("a missing ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (c === "-" || (c >= "0" && c <= "9")) return num();
    if (s.startsWith("true", i)) { i += 4; return true; }
    if (s.startsWith("false", i)) { i += 5; return false; }
    if (s.startsWith("null", i)) { i += 4; return null; }
    fail("an unexpected character");
  };
  const v = value();
  ws();
  if (i !== s.length) fail("trailing characters");
  return v;
}

// ---------------------------------------------------------------------------
// RFC 8785 canonical JSON (section 2).

function canon(v, depth = 0) {
  if (depth > MAX_CANON_DEPTH) throw new Unserialisable("nested deeper than 500");
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "string") return JSON.stringify(v);
  if (v instanceof Num) {
    if (v.isInt) {
      if (v.big > SAFE || v.big < -SAFE) return String(Number(v.big)); // past 2**53: the nearest double
      return v.big.toString();
    }
    return String(v.dbl); // ECMAScript Number::toString is the JCS number form (-0 gives "0")
  }
  if (Array.isArray(v)) return "[" + v.map((x) => canon(x, depth + 1)).join(",") + "]";
  if (v instanceof Map) {
    const keys = [...v.keys()].sort(); // UTF-16 code unit order
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canon(v.get(k), depth + 1)).join(",") + "}";
  }
  throw new Unserialisable("not a JSON value");
}

const sha256 = (b) => createHash("sha256").update(b).digest();
const sha256hex = (b) => createHash("sha256").update(b).digest("hex");

// ---------------------------------------------------------------------------
// Lines of a file, streamed.
//
// A partial line is kept as a list of chunks and joined once, when its "\n"
// (or the end of the file) arrives: each byte is copied at most twice, so the
// time is linear in the line's length. A line longer than MAX_LINE bytes is
// not kept at all: the reader skips to its end and yields a TooLong marker,
// which the verifier reports as unreadable (section 4: a verifier that cannot
// hold a line says so; it is not a finding about the file). MAX_LINE is the
// longest string V8 can make, so every line it lets through can be decoded.
// AGENTLOOP_VERIFY_MAX_LINE lowers it (tests); AGENTLOOP_VERIFY_STATS=1
// prints the bytes the reader copied to stderr when the run ends.

const MAX_LINE = (() => {
  const env = process.env.AGENTLOOP_VERIFY_MAX_LINE;
  const n = env && /^[0-9]+$/.test(env) ? Number(env) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? Math.min(n, bufferConstants.MAX_STRING_LENGTH) : bufferConstants.MAX_STRING_LENGTH;
})();
const stats = { bytesCopied: 0 };

class TooLong {
  constructor(bytes, complete) {
    this.bytes = bytes; // how long the line is
    this.complete = complete; // it ended in "\n"
  }
}

function* readLines(path, chunkSize = 1 << 20) {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(chunkSize);
    let parts = []; // the pending partial line, chunk by chunk
    let pending = 0; // its length
    let skipping = false; // the pending line is past MAX_LINE: counted, not kept
    const take = (piece, complete) => {
      // `piece` ends the pending line (its "\n" included when complete)
      const total = pending + piece.length;
      let out;
      if (skipping || total - (complete ? 1 : 0) > MAX_LINE) out = new TooLong(total - (complete ? 1 : 0), complete);
      else if (!parts.length) {
        out = Buffer.from(piece); // the read buffer is reused: copy once
        stats.bytesCopied += piece.length;
      } else {
        out = Buffer.concat([...parts, piece], total);
        stats.bytesCopied += total;
      }
      parts = [];
      pending = 0;
      skipping = false;
      return out;
    };
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const chunk = buf.subarray(0, n);
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, start);
        if (nl < 0) break;
        yield take(chunk.subarray(start, nl + 1), true);
        start = nl + 1;
      }
      if (start < n) {
        const rest = chunk.subarray(start);
        pending += rest.length;
        if (!skipping && pending > MAX_LINE) {
          skipping = true;
          parts = [];
        }
        if (!skipping) {
          parts.push(Buffer.from(rest)); // the read buffer is reused: keep a copy
          stats.bytesCopied += rest.length;
        }
      }
    }
    if (pending) yield take(Buffer.alloc(0), false);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------
// Chain verification (section 4).

function problem(index, kind, message, line, end) {
  const p = { index, kind, message };
  if (line !== undefined && line !== null) p.line = line;
  if (end !== undefined) p.end = end;
  return p;
}

function checkLine(line, index, lineNo, problems) {
  let v;
  try {
    v = parseJson(line);
  } catch (e) {
    if (!(e instanceof BadJson)) throw e;
    problems.push(problem(index, "bad_json", `line ${lineNo} is not JSON: ${e.message}`, lineNo));
    return null;
  }
  if (!(v instanceof Map)) {
    problems.push(problem(index, "not_an_object", `record ${index} is not an object`, lineNo));
    return null;
  }
  const missing = RECORD_KEYS.filter((k) => !v.has(k));
  if (missing.length) {
    problems.push(problem(index, "missing_fields", `record ${index} lacks ${missing.join(", ")}`, lineNo));
    return null;
  }
  const extra = [...v.keys()].filter((k) => !RECORD_KEYS.includes(k)).sort();
  if (extra.length) {
    problems.push(problem(index, "unexpected_fields", `record ${index} has extra keys ${extra.join(", ")}`, lineNo));
    return null;
  }
  const seq = v.get("seq"), kind = v.get("kind"), prev = v.get("prev"), hash = v.get("hash");
  const hexOk = (x) => typeof x === "string" && HEX64.test(x);
  if (!(seq instanceof Num) || !seq.isInt || typeof kind !== "string" || !hexOk(prev) || !hexOk(hash)) {
    problems.push(problem(index, "missing_fields", `record ${index} has a field of the wrong type or shape`, lineNo));
    return null;
  }
  let body;
  try {
    body = canon(new Map([["kind", kind], ["payload", v.get("payload")], ["prev", prev], ["seq", seq]]));
  } catch (e) {
    if (!(e instanceof Unserialisable)) throw e;
    problems.push(problem(index, "unserialisable_payload", `record ${index}: ${e.message}`, lineNo));
    return null;
  }
  const bodyBytes = Buffer.from(body, "utf8");
  const rec = { seq: seq.big, prev, hash };
  if (sha256hex(bodyBytes) !== hash) {
    problems.push(problem(index, "hash_mismatch", `record ${index}: the stored hash does not match its content`, lineNo));
    return rec;
  }
  const want = Buffer.concat([Buffer.from(`{"hash":"${hash}",`, "utf8"), bodyBytes.subarray(1)]);
  if (!want.equals(line)) {
    problems.push(problem(index, "non_canonical", `record ${index}: valid JSON, but not the canonical line`, lineNo));
  }
  return rec;
}

// Verifies a file's chain; `onLeaf(leafBytes)` sees every complete line without "\n".
function verifyChain(path, onLeaf) {
  const report = { ok: true, records: 0, last_hash: GENESIS, problems: [] };
  let expectSeq = 0n;
  let prev = GENESIS; // null: unknown
  let index = -1;
  try {
    for (const raw of readLines(path)) {
      index++;
      const lineNo = index + 1;
      if (raw instanceof TooLong) {
        const msg = `${path}: line ${lineNo} is ${raw.bytes} bytes long, more than this verifier can hold (${MAX_LINE} bytes)`;
        return { ok: false, records: 0, last_hash: GENESIS, problems: [problem(-1, "unreadable", msg)] };
      }
      let line = raw;
      if (raw[raw.length - 1] !== 0x0a) {
        report.problems.push(problem(index, "torn_tail", `line ${lineNo} does not end in a newline: a torn write`, lineNo));
      } else {
        line = raw.subarray(0, raw.length - 1);
        if (onLeaf) onLeaf(line);
      }
      const rec = checkLine(line, index, lineNo, report.problems);
      if (rec) {
        if (rec.seq !== expectSeq) {
          report.problems.push(problem(index, "seq_gap", `record ${index} has seq ${rec.seq}, expected ${expectSeq}`, lineNo));
        }
        if (prev !== null && rec.prev !== prev) {
          report.problems.push(problem(index, "prev_mismatch", `record ${index}: prev does not match the hash of record ${index - 1}`, lineNo));
        }
        expectSeq = rec.seq + 1n;
        prev = rec.hash;
        report.last_hash = rec.hash;
      } else {
        expectSeq += 1n;
        prev = null;
      }
    }
  } catch (e) {
    if (e && e.code) {
      return { ok: false, records: 0, last_hash: GENESIS, problems: [problem(-1, "unreadable", `${path}: ${e.message}`)] };
    }
    throw e;
  }
  report.records = index + 1;
  report.ok = report.problems.length === 0;
  return report;
}

// ---------------------------------------------------------------------------
// RFC 9162 Merkle tree (section 6) and proofs (section 8).

const EMPTY_ROOT = sha256(Buffer.alloc(0));
const leafHash = (d) => sha256(Buffer.concat([Buffer.from([0]), d]));
const nodeHash = (l, r) => sha256(Buffer.concat([Buffer.from([1]), l, r]));

class Tree {
  constructor() {
    this.size = 0;
    this.frontier = [];
  }
  append(data) {
    let h = leafHash(data);
    let n = this.size;
    while (n % 2 === 1) {
      h = nodeHash(this.frontier.pop(), h);
      n = Math.floor(n / 2);
    }
    this.frontier.push(h);
    this.size++;
  }
  root() {
    return foldFrontier(this.frontier);
  }
  copy() {
    const t = new Tree();
    t.size = this.size;
    t.frontier = [...this.frontier];
    return t;
  }
}

function foldFrontier(f) {
  if (!f.length) return EMPTY_ROOT;
  let r = f[f.length - 1];
  for (let j = f.length - 2; j >= 0; j--) r = nodeHash(f[j], r);
  return r;
}

// The leaf ranges [a, b) that the frontier of a tree of `size` covers, biggest first.
function frontierRanges(size) {
  const out = [];
  let start = 0;
  for (let bit = 53; bit >= 0; bit--) { // sizes go up to 2^53 (section 7.1)
    const w = 2 ** bit;
    if (Math.floor(size / w) % 2 === 1) {
      out.push([start, start + w]);
      start += w;
    }
  }
  return out;
}

const popcount = (n) => frontierRanges(n).length;
const largestPow2Below = (n) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

// SUBPROOF of section 8.2, as leaf ranges.
function consistencyRanges(m, n) {
  const out = [];
  const sub = (mm, lo, hi, complete) => {
    if (mm === hi - lo) {
      if (!complete) out.push([lo, hi]);
      return;
    }
    const k = largestPow2Below(hi - lo);
    if (mm <= k) {
      sub(mm, lo, lo + k, complete);
      out.push([lo + k, hi]);
    } else {
      sub(mm - k, lo + k, hi, false);
      out.push([lo, lo + k]);
    }
  };
  sub(m, 0, n, true);
  return out;
}

function rangeRootsFromFile(path, ranges) {
  const trees = ranges.map(() => new Tree());
  let i = 0;
  for (const raw of readLines(path)) {
    if (raw instanceof TooLong) throw new UsageError(`${path}: a line is ${raw.bytes} bytes long, more than this verifier can hold`);
    if (raw[raw.length - 1] !== 0x0a) break;
    const leaf = raw.subarray(0, raw.length - 1);
    ranges.forEach(([a, b], j) => {
      if (a <= i && i < b) trees[j].append(leaf);
    });
    i++;
  }
  return trees.map((t) => t.root());
}

const is32 = (h) => Buffer.isBuffer(h) && h.length === 32;

function verifyInclusion(index, size, leaf, path, root) {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) throw new ProofError("the index is not inside the tree");
  if (!is32(leaf)) throw new ProofError("the leaf hash is not 32 bytes");
  if (!path.every(is32)) throw new ProofError("a proof hash is not 32 bytes");
  let fn = BigInt(index), sn = BigInt(size - 1), r = leaf;
  for (const p of path) {
    if (sn === 0n) throw new ProofError("the proof is too long");
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      if ((fn & 1n) === 0n) while (fn !== 0n && (fn & 1n) === 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("the proof is too short");
  if (!r.equals(root)) throw new ProofError("the proof leads to another root");
}

function verifyConsistency(m, n, r1, r2, path) {
  if (!Number.isInteger(m) || !Number.isInteger(n) || m < 0 || n < 0) throw new ProofError("bad sizes");
  if (n < m) throw new ProofError("the second size is smaller than the first");
  if (m === n) {
    if (path.length) throw new ProofError("equal sizes need an empty proof");
    if (!r1.equals(r2)) throw new ProofError("equal sizes, different roots");
    if (m === 0 && !r1.equals(EMPTY_ROOT)) throw new ProofError("the empty tree has one root");
    return;
  }
  if (m === 0) throw new ProofError("a proof from the empty tree proves nothing");
  if (!path.length) throw new ProofError("the proof is empty");
  if (!path.every(is32) || !is32(r1) || !is32(r2)) throw new ProofError("a hash is not 32 bytes");
  const p = isPow2(m) ? [r1, ...path] : [...path];
  let fn = BigInt(m - 1), sn = BigInt(n - 1);
  while ((fn & 1n) === 1n) { fn >>= 1n; sn >>= 1n; }
  let fr = p[0], sr = p[0];
  for (const c of p.slice(1)) {
    if (sn === 0n) throw new ProofError("the proof is too long");
    if ((fn & 1n) === 1n || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if ((fn & 1n) === 0n) while (fn !== 0n && (fn & 1n) === 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      sr = nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("the proof is too short");
  if (!fr.equals(r1)) throw new ProofError("the proof does not lead to the first root");
  if (!sr.equals(r2)) throw new ProofError("the proof does not lead to the second root");
}

function isPow2(m) {
  const b = BigInt(m);
  return b > 0n && (b & (b - 1n)) === 0n;
}

// ---------------------------------------------------------------------------
// Anchors (section 7).

const ANCHOR_KEYS = ["format", "frontier", "last_hash", "root", "size", "type"];

function keyId(raw) {
  return sha256hex(raw).slice(0, 16);
}

// Section 7.1: an anchor file is at most 1 MiB. Read whole, it is one JSON text with nothing after it.
const MAX_ANCHOR_BYTES = 1 << 20;

function loadJsonFile(path, what, maxBytes = Infinity) {
  let bytes;
  try {
    if (statSync(path).size > maxBytes) throw new UsageError(`${path}: the ${what} file is larger than ${maxBytes} bytes (1 MiB)`);
    bytes = readFileSync(path);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`${path}: cannot read the ${what}: ${e.message}`);
  }
  if (bytes.length > maxBytes) throw new UsageError(`${path}: the ${what} file is larger than ${maxBytes} bytes (1 MiB)`);
  try {
    return parseJson(bytes);
  } catch (e) {
    throw new UsageError(`${path}: the ${what} is not JSON: ${e.message}`);
  }
}

const isSize = (v) => v instanceof Num && v.isInt && v.big >= 0n && v.big <= SAFE;

function parseAnchor(path) {
  const a = loadJsonFile(path, "anchor", MAX_ANCHOR_BYTES);
  const bad = (why) => {
    throw new UsageError(`${path}: ${why}`);
  };
  if (!(a instanceof Map)) bad("an anchor is a JSON object");
  for (const k of ANCHOR_KEYS) if (!a.has(k)) bad(`the anchor lacks ${k}`);
  for (const k of a.keys()) if (!ANCHOR_KEYS.includes(k) && k !== "signature") bad(`the anchor has an unexpected key ${k}`);
  if (a.get("type") !== "agentloop-anchor") bad("the anchor's type is not agentloop-anchor");
  const fmt = a.get("format");
  if (!(fmt instanceof Num) || !fmt.isInt || fmt.big !== 1n) bad("the anchor is not for format 1");
  if (!isSize(a.get("size"))) bad("the anchor's size is not a record count");
  const size = Number(a.get("size").big);
  for (const k of ["last_hash", "root"]) if (typeof a.get(k) !== "string" || !HEX64.test(a.get(k))) bad(`the anchor's ${k} is not 64 hex`);
  const fr = a.get("frontier");
  if (!Array.isArray(fr) || !fr.every((h) => typeof h === "string" && HEX64.test(h))) bad("the anchor's frontier is not a list of hashes");
  if (fr.length !== popcount(size)) bad(`the anchor's frontier has ${fr.length} hashes; size ${size} needs ${popcount(size)}`);
  if (size === 0 && a.get("last_hash") !== GENESIS) bad("an anchor of size 0 has the genesis as its last hash");
  const frontier = fr.map((h) => Buffer.from(h, "hex"));
  if (foldFrontier(frontier).toString("hex") !== a.get("root")) bad("the anchor's root is not the root of its frontier");
  let signature = null;
  if (a.has("signature")) {
    const s = a.get("signature");
    const sk = ["alg", "key_id", "public_key", "value"];
    if (!(s instanceof Map) || s.size !== 4 || !sk.every((k) => s.has(k))) bad("the anchor's signature is {alg, key_id, public_key, value}");
    if (s.get("alg") !== "Ed25519") bad("the signature is not Ed25519");
    if (typeof s.get("public_key") !== "string" || !HEX64.test(s.get("public_key"))) bad("the signature's public_key is not 64 hex");
    if (typeof s.get("value") !== "string" || !/^[0-9a-f]{128}$/.test(s.get("value"))) bad("the signature's value is not 128 hex");
    if (s.get("key_id") !== keyId(Buffer.from(s.get("public_key"), "hex"))) bad("the signature's key_id does not match its public key");
    signature = { publicKey: s.get("public_key"), value: s.get("value"), keyId: s.get("key_id") };
  }
  const body = new Map(ANCHOR_KEYS.map((k) => [k, a.get(k)]));
  return { size, lastHash: a.get("last_hash"), root: a.get("root"), frontier, signature, signed: Buffer.from(canon(body), "utf8") };
}

function loadPublicKey(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new UsageError(`${path}: cannot read the key: ${e.message}`);
  }
  try {
    const t = text.trim();
    const key = /^[0-9a-fA-F]{64}$/.test(t)
      ? createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(t, "hex").toString("base64url") }, format: "jwk" })
      : createPublicKey(text);
    if (key.asymmetricKeyType !== "ed25519") throw new Error("not Ed25519");
    return key;
  } catch (e) {
    throw new UsageError(`${path}: not an Ed25519 public key (${e.message})`);
  }
}

function rawPublic(key) {
  return Buffer.from(key.export({ format: "jwk" }).x, "base64url");
}

function verifyWithAnchor(path, anchor, publicKey) {
  const m = anchor.size;
  const tree = new Tree();
  let lineM = null;
  // Section 7.3 step 1: the anchor's frontier entry k covers leaves [a, b); when the
  // file's tree reaches size b, the last entry of its own frontier is MTH(a..b-1).
  const ends = new Map(frontierRanges(m).map(([a, b], k) => [b, [k, a]]));
  let differs = null;
  const report = verifyChain(path, (leaf) => {
    tree.append(leaf);
    if (ends.has(tree.size) && !differs) {
      const [k, a] = ends.get(tree.size);
      if (!tree.frontier[tree.frontier.length - 1].equals(anchor.frontier[k])) differs = [a, tree.size];
    }
    if (tree.size === m) lineM = Buffer.from(leaf);
  });
  const n = tree.size;
  const info = { size: m, leaves: n, root: tree.root().toString("hex"), signature: "absent", consistency: "n/a" };
  const extra = [];
  if (!report.problems.some((p) => p.kind === "unreadable")) {
    if (differs) {
      extra.push(problem(differs[0], "anchor_mismatch", `records ${differs[0]}..${differs[1] - 1} differ from the anchor`, null, differs[1]));
      if (n > m) info.consistency = "failed";
    }
    if (n < m) {
      const what = m - n === 1 ? `record ${n} is` : `records ${n}..${m - 1} are`;
      extra.push(problem(n, "truncated", `the anchor covers ${m} records but the file has ${n}: ${what} missing`, null, m));
    } else if (differs) {
      // reported above
    } else if (m > 0 && lastHashOf(lineM) !== anchor.lastHash) {
      extra.push(problem(m - 1, "anchor_mismatch", `record ${m - 1}'s hash is not the anchor's last hash`, null, m));
    } else if (n === m) {
      info.consistency = "equal";
    } else if (m === 0) {
      info.consistency = "proved";
    } else {
      const ranges = consistencyRanges(m, n);
      const proof = rangeRootsFromFile(path, ranges);
      try {
        verifyConsistency(m, n, Buffer.from(anchor.root, "hex"), tree.root(), proof);
        info.consistency = "proved";
      } catch (e) {
        if (!(e instanceof ProofError)) throw e;
        info.consistency = "failed";
        extra.push(problem(0, "inconsistent", `the file does not extend the anchored records: ${e.message}`, null, m));
      }
    }
  }
  if (publicKey) {
    let why = null;
    if (!anchor.signature) why = ["unsigned_anchor", "the anchor is not signed, but a public key was given"];
    else if (anchor.signature.publicKey !== rawPublic(publicKey).toString("hex")) {
      why = ["bad_signature", `the anchor is signed by key ${anchor.signature.keyId}, not by the given key ${keyId(rawPublic(publicKey))}`];
    } else if (!cryptoVerify(null, anchor.signed, publicKey, Buffer.from(anchor.signature.value, "hex"))) {
      why = ["bad_signature", "the signature does not match the anchor's content"];
    }
    info.signature = why ? "invalid" : "valid";
    if (why) extra.unshift(problem(-1, why[0], why[1]));
  } else if (anchor.signature) {
    info.signature = "unchecked";
  }
  const all = [...report.problems, ...extra].map((p, k) => [p, k]);
  all.sort((x, y) => x[0].index - y[0].index || x[1] - y[1]);
  report.problems = all.map((x) => x[0]);
  report.ok = report.problems.length === 0;
  report.anchor = info;
  return report;
}

function lastHashOf(line) {
  try {
    const v = parseJson(line);
    return v instanceof Map && typeof v.get("hash") === "string" ? v.get("hash") : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Proof documents (section 8.5).

function checkProofDoc(path, file) {
  const d = loadJsonFile(path, "proof");
  const bad = (why) => {
    throw new UsageError(`${path}: ${why}`);
  };
  if (!(d instanceof Map)) bad("a proof is a JSON object");
  const fmt = d.get("format");
  if (!(fmt instanceof Num) || !fmt.isInt || fmt.big !== 1n) bad("the proof is not for format 1");
  const keysAre = (want) => d.size === want.length && want.every((k) => d.has(k));
  const size = (k) => (isSize(d.get(k)) ? Number(d.get(k).big) : bad(`the proof's ${k} is not a record count`));
  const h32 = (k) => (typeof d.get(k) === "string" && HEX64.test(d.get(k)) ? Buffer.from(d.get(k), "hex") : bad(`the proof's ${k} is not 64 hex`));
  const pathHashes = () => {
    const p = d.get("path");
    if (!Array.isArray(p) || !p.every((h) => typeof h === "string" && HEX64.test(h))) bad("the proof's path is not a list of hashes");
    return p.map((h) => Buffer.from(h, "hex"));
  };
  const rootsAt = (sizes) => {
    const t = new Tree();
    const roots = new Map();
    if (sizes.includes(0)) roots.set(0, EMPTY_ROOT);
    const top = Math.max(...sizes);
    let fileErr = null;
    try {
      for (const raw of readLines(file)) {
        if (raw instanceof TooLong) throw new Error(`line ${t.size + 1} is ${raw.bytes} bytes long, more than this verifier can hold`);
        if (t.size >= top || raw[raw.length - 1] !== 0x0a) break;
        t.append(raw.subarray(0, raw.length - 1));
        if (sizes.includes(t.size)) roots.set(t.size, t.root());
      }
    } catch (e) {
      fileErr = e;
    }
    if (fileErr) throw new UsageError(`${file}: cannot read: ${fileErr.message}`);
    return [t.size, roots];
  };
  const type = d.get("type");
  if (type === "agentloop-inclusion-proof") {
    if (!keysAre(["type", "format", "index", "tree_size", "record", "leaf_hash", "path", "root"])) bad("an inclusion proof has exactly: type, format, index, tree_size, record, leaf_hash, path, root");
    const index = size("index"), n = size("tree_size"), leaf = h32("leaf_hash"), root = h32("root"), p = pathHashes();
    if (typeof d.get("record") !== "string") bad("the proof's record is not a string");
    const data = Buffer.from(d.get("record"), "utf8");
    if (!leafHash(data).equals(leaf)) throw new ProofError("the record's leaf hash is not leaf_hash");
    let seq = null;
    try {
      const r = parseJson(data);
      if (r instanceof Map && r.get("seq") instanceof Num && r.get("seq").isInt) seq = r.get("seq").big;
    } catch {}
    if (seq !== BigInt(index)) throw new ProofError(`the record's seq is not the proof's index ${index}`);
    verifyInclusion(index, n, leaf, p, root);
    let what = `record ${index} is in the transcript of ${n} records with Merkle root ${root.toString("hex")}`;
    if (file) {
      const [have, roots] = rootsAt([n]);
      if (!roots.has(n)) throw new ProofError(`${file} has ${have} records, fewer than the proof's ${n}`);
      if (!roots.get(n).equals(root)) throw new ProofError(`the first ${n} records of ${file} have another Merkle root`);
      what += `, and ${file} is that transcript`;
    }
    return what;
  }
  if (type === "agentloop-consistency-proof") {
    if (!keysAre(["type", "format", "size1", "size2", "root1", "root2", "path"])) bad("a consistency proof has exactly: type, format, size1, size2, root1, root2, path");
    const s1 = size("size1"), s2 = size("size2"), r1 = h32("root1"), r2 = h32("root2"), p = pathHashes();
    verifyConsistency(s1, s2, r1, r2, p);
    let what = `the first ${s1} records are unchanged in the transcript of ${s2} records`;
    if (file) {
      const [have, roots] = rootsAt([s1, s2]);
      if (!roots.has(s2)) throw new ProofError(`${file} has ${have} records, fewer than the proof's ${s2}`);
      if (!roots.get(s1).equals(r1) || !roots.get(s2).equals(r2)) throw new ProofError(`${file} has other Merkle roots at those sizes`);
      what += `, and ${file} is that transcript`;
    }
    return what;
  }
  bad("the proof's type is neither agentloop-inclusion-proof nor agentloop-consistency-proof");
}

// ---------------------------------------------------------------------------
// RFC 6962/9162 vectors (tests/data/merkle-rfc6962).

function runVectors(dir) {
  const b64 = (x) => Buffer.from(x || "", "base64");
  let n = 0;
  const failures = [];
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".json")) out.push(p);
    }
  };
  const out = [];
  for (const kind of ["inclusion", "consistency"]) {
    out.length = 0;
    walk(join(dir, kind));
    for (const p of out) {
      const v = JSON.parse(readFileSync(p, "utf8"));
      let err = false;
      try {
        if (kind === "inclusion") verifyInclusion(v.leafIdx, v.treeSize, b64(v.leafHash), (v.proof || []).map(b64), b64(v.root));
        else verifyConsistency(v.size1, v.size2, b64(v.root1), b64(v.root2), (v.proof || []).map(b64));
      } catch (e) {
        if (!(e instanceof ProofError)) throw e;
        err = true;
      }
      n++;
      if (err !== v.wantErr) failures.push(p);
    }
  }
  const consts = JSON.parse(readFileSync(join(dir, "tree-constants.json"), "utf8"));
  const leaves = consts.leaf_inputs_hex.map((h) => Buffer.from(h, "hex"));
  consts.root_hashes_hex_by_size.forEach((want, size) => {
    const t = new Tree();
    leaves.slice(0, size).forEach((l) => t.append(l));
    n++;
    if (t.root().toString("hex") !== want) failures.push(`tree-constants size ${size}`);
  });
  return { vectors: n, failures };
}

// ---------------------------------------------------------------------------
// The command line.

function parseArgs(argv, flags) {
  const pos = [];
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const name = a.slice(2);
      if (!(name in flags)) throw new UsageError(`unknown option ${a}`);
      if (flags[name]) {
        if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
        opt[name] = argv[++i];
      } else opt[name] = true;
    } else pos.push(a);
  }
  return [pos, opt];
}

function verifyOne(file, anchorPath, keyPath) {
  if (anchorPath) {
    const anchor = parseAnchor(anchorPath);
    const key = keyPath ? loadPublicKey(keyPath) : null;
    return { file, ...verifyWithAnchor(file, anchor, key) };
  }
  return { file, ...verifyChain(file, null) };
}

function exitFor(r) {
  if (r.problems.some((p) => p.kind === "unreadable")) return 2;
  return r.ok ? 0 : 1;
}

function main(argv) {
  const [cmd, ...rest] = argv;
  if (cmd === "verify") {
    const [files, opt] = parseArgs(rest, { anchor: true, "public-key": true, json: false });
    if (!files.length) throw new UsageError("verify needs at least one FILE");
    if (opt.anchor && files.length !== 1) throw new UsageError("--anchor checks one file; give exactly one FILE");
    if (opt["public-key"] && !opt.anchor) throw new UsageError("--public-key needs --anchor");
    let worst = 0;
    for (const f of files) {
      const r = verifyOne(f, opt.anchor, opt["public-key"]);
      worst = Math.max(worst, exitFor(r));
      if (opt.json) console.log(JSON.stringify(r));
      else if (r.ok) console.log(`${f}: ok, ${r.records} records, last hash ${r.last_hash.slice(0, 16)}…${r.anchor ? `; matches the anchor of ${r.anchor.size} records (${r.anchor.consistency}, signature ${r.anchor.signature})` : ""}`);
      else {
        console.log(`${f}: FAILED, ${r.problems.length} problem(s) in ${r.records} records`);
        for (const p of r.problems.slice(0, 50)) console.log(`  record ${p.index}${p.line ? ` (line ${p.line})` : ""}: ${p.kind}: ${p.message}`);
      }
    }
    return worst;
  }
  if (cmd === "check-proof") {
    const [pos, opt] = parseArgs(rest, { file: true, json: false });
    if (pos.length !== 1) throw new UsageError("check-proof needs exactly one PROOF");
    try {
      const what = checkProofDoc(pos[0], opt.file);
      console.log(opt.json ? JSON.stringify({ proof: pos[0], ok: true, what }) : `${pos[0]}: ok: ${what}`);
      return 0;
    } catch (e) {
      if (!(e instanceof ProofError)) throw e;
      console.log(opt.json ? JSON.stringify({ proof: pos[0], ok: false, error: e.message }) : `${pos[0]}: FAILED: ${e.message}`);
      return 1;
    }
  }
  if (cmd === "batch") {
    // One job per stdin line: {"file", "anchor"?, "public_key"?}; one JSON result per line.
    const input = readFileSync(0, "utf8");
    for (const line of input.split("\n")) {
      if (!line.trim()) continue;
      const job = JSON.parse(line);
      try {
        console.log(JSON.stringify(verifyOne(job.file, job.anchor, job.public_key)));
      } catch (e) {
        if (!(e instanceof UsageError)) throw e;
        console.log(JSON.stringify({ file: job.file, usage_error: e.message }));
      }
    }
    return 0;
  }
  if (cmd === "vectors") {
    const [pos] = parseArgs(rest, {});
    if (pos.length !== 1) throw new UsageError("vectors needs the vectors directory");
    const r = runVectors(pos[0]);
    console.log(JSON.stringify(r));
    return r.failures.length ? 1 : 0;
  }
  throw new UsageError("usage: agentloop-verify.mjs verify FILE... [--anchor A] [--public-key K] [--json] | check-proof PROOF [--file FILE] [--json] | batch | vectors DIR");
}

try {
  process.exitCode = main(process.argv.slice(2));
  if (process.env.AGENTLOOP_VERIFY_STATS === "1") console.error(JSON.stringify({ bytes_copied: stats.bytesCopied }));
} catch (e) {
  if (e instanceof UsageError) {
    console.error(`agentloop-verify: error: ${e.message}`);
    process.exitCode = 2;
  } else {
    throw e;
  }
}
