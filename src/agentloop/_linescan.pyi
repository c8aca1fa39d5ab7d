"""The verifier's fast-path check of a line's numbers and key order, in C (``_linescan.c``; built by scripts/build-native)."""

def scan(line: bytes, /) -> int:
    """1 when ``line``, orjson's sorted form of the value parsed from it, is also its RFC 8785 form
    (no float, integer past 2**53 - 1 or key order that RFC 8785 writes otherwise); 2 when every
    number is RFC 8785's form but some object's keys sort otherwise by UTF-16 code unit than by
    code point; 0 when not shown."""
