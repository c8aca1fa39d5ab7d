/* The verifier's fast-path check, in one pass over a line's bytes (agentloop._linescan).
 *
 * line.py's fast path has checked that a line is orjson's sorted form of the
 * value parsed from it (orjson.dumps(orjson.loads(line), OPT_SORT_KEYS) is the
 * line byte for byte). orjson's form is RFC 8785's except in three places;
 * scan(line) walks the line once (strings skipped by memchr) and tells which
 * of them occur:
 *
 * - floats: "<digits>.0" ending a token ("100.0": RFC 8785 writes "100"), an
 *   exponent from e-1 to e-6 or from e+1 to e+20 (RFC 8785 writes those
 *   numbers in full), and any exponent form orjson does not write (no sign,
 *   "E"). The same judgement as line.py's _numbers_ok, on tokens instead of
 *   on a translated copy of the line.
 * - integers past 2**53 - 1 (orjson writes them in full, up to 64 bits): the
 *   text must be RFC 8785's form of the double the integer reads as, that is
 *   its shortest round-trip digits, padded with zeros. Decided exactly with
 *   integer arithmetic (see int_is_jcs), the answer of line.py's _int_is_jcs.
 * - keys: orjson sorts them by code point, RFC 8785 by UTF-16 code unit. The
 *   two orders part only where two keys first differ by a character in
 *   U+E000..U+FFFF (UTF-8 lead byte EE or EF) against one past U+FFFF (lead
 *   byte F0..F4). Each key is compared with the previous key of its object
 *   when both hold a byte >= EE.
 *
 * It returns 1 when none occurs; 2 when every number is RFC 8785's form but
 * the keys of some object are in one of the two orders and not the other (the
 * line is then canonical only if its keys are in UTF-16 order: line.py checks
 * that by writing the value with its keys so sorted); 0 when a number is not
 * shown to be RFC 8785's form, or the input is not orjson's form at all: the
 * caller's reference path then decides. It never raises for any bytes given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 1024 /* orjson writes at most 255 levels: anything deeper is not its form */

typedef unsigned __int128 u128;

typedef struct {
    const unsigned char *key; /* the previous key of this object (its bytes between the quotes) */
    Py_ssize_t len;
    int high; /* it holds a byte >= 0xEE */
} Level;

static u128 POW10[22]; /* 10**0 .. 10**21, filled at import */

static int bit_length(u128 n) {
    uint64_t hi = (uint64_t)(n >> 64), lo = (uint64_t)n;
    if (hi) return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* The decimal integer in digits[0..nd) (no sign, no leading zero, nd >= 16) is
 * RFC 8785's text of the double it reads as (ECMAScript's Number::toString:
 * the fewest significant digits that read back as that double, the closest
 * to it among those, padded with zeros: no exponent below 1e21).
 *
 * With d the double nearest n (ties to even) and [lo, hi] the reals that read
 * as d, and n = D * 10**z with D not ending in 0: n is that text exactly when
 * (A) no multiple of 10**(z+1) lies in [lo, hi] (such a number has fewer
 * significant digits, and every number with fewer digits that reads as d is
 * one), and (B) n is closer to d than half of 10**z (the closest number with
 * as many digits; an exact tie is left to the reference path). For (A) the
 * two multiples of 10**(z+1) next to n, below and above it, are enough: n is
 * in [lo, hi], which holds no number between them but n's own neighbours.
 * All in 128-bit integers, the bounds doubled so that they stay whole.
 */
static int int_is_jcs(const unsigned char *digits, Py_ssize_t nd) {
    if (nd < 16) return 1;
    if (nd > 20) return 0; /* past orjson's 64 bits */
    if (nd == 16 && memcmp(digits, "9007199254740991", 16) <= 0) return 1; /* up to 2**53 - 1: exact, in full */
    uint64_t head = 0; /* the first 19 digits at most: no overflow */
    Py_ssize_t nh = nd < 19 ? nd : 19;
    for (Py_ssize_t i = 0; i < nh; i++) head = head * 10 + (uint64_t)(digits[i] - '0');
    u128 n = nd == 20 ? (u128)head * 10 + (u128)(digits[19] - '0') : (u128)head;
    int z = 0;
    while (z < nd - 1 && digits[nd - 1 - z] == '0') z++;
    /* d = m * 2**s, m of 53 bits, rounded half to even */
    int s = bit_length(n) - 53;
    u128 m = n >> s;
    u128 rem = n & ((((u128)1) << s) - 1);
    u128 half = ((u128)1) << (s - 1);
    if (rem > half || (rem == half && (m & 1))) m += 1;
    if (m == ((u128)1 << 53)) {
        m >>= 1;
        s += 1;
    }
    u128 d = m << s;
    /* (B) */
    u128 dist2 = n > d ? 2 * (n - d) : 2 * (d - n);
    if (dist2 >= POW10[z]) return 0;
    /* (A), doubled bounds: the midpoints to the neighbouring doubles */
    u128 up = ((u128)1) << s;                             /* 2 * (ulp / 2) */
    u128 down = (m == ((u128)1 << 52)) ? (up >> 1) : up;  /* a power of two: the double below is closer */
    u128 lo2 = 2 * d - down, hi2 = 2 * d + up;
    int inclusive = (m & 1) == 0; /* a midpoint reads as the double with the even mantissa */
    u128 r = (u128)(digits[nd - 1 - z] - '0'); /* n's last significant digit, not 0 */
    u128 cands[2] = {n - r * POW10[z], n + (10 - r) * POW10[z]};
    for (int i = 0; i < 2; i++) {
        u128 c2 = 2 * cands[i];
        if (inclusive ? (c2 >= lo2 && c2 <= hi2) : (c2 > lo2 && c2 < hi2)) return 0;
    }
    return 1;
}

/* Two keys of one object, both holding a byte >= 0xEE, in code point order
 * (orjson's): are they in UTF-16 order too? */
static int same_order_in_utf16(const Level *prev, const unsigned char *key, Py_ssize_t len) {
    Py_ssize_t n = prev->len < len ? prev->len : len;
    Py_ssize_t i = 0;
    while (i < n && prev->key[i] == key[i]) i++;
    if (i == n) return 1; /* one is a prefix of the other: shorter first in both orders */
    /* the first differing byte: a lead byte (or ASCII) in both, unless inside a shared character */
    unsigned char a = prev->key[i], b = key[i];
    if ((a & 0xC0) == 0x80 || (b & 0xC0) == 0x80) return 1; /* same lead byte: same UTF-16 range */
    int a_bmp_high = a == 0xEE || a == 0xEF, b_bmp_high = b == 0xEE || b == 0xEF;
    int a_astral = a >= 0xF0, b_astral = b >= 0xF0;
    return !((a_bmp_high && b_astral) || (a_astral && b_bmp_high));
}

static int scan_line(const unsigned char *s, Py_ssize_t n) {
    Level stack[MAX_DEPTH];
    int depth = 0;
    int parted = 0; /* two keys of an object in code point order and not in UTF-16 order, or the reverse */
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '"') {
            const unsigned char *start = s + i + 1;
            const unsigned char *q = start;
            const unsigned char *end = s + n;
            for (;;) { /* the closing quote: one after an even run of backslashes */
                q = memchr(q, '"', (size_t)(end - q));
                if (q == NULL) return 0;
                const unsigned char *b = q;
                while (b > start && b[-1] == '\\') b--;
                if (((q - b) & 1) == 0) break;
                q++;
            }
            Py_ssize_t len = q - start;
            i = (q - s) + 1;
            if (i < n && s[i] == ':') { /* a key */
                if (depth == 0) return 0;
                Level *lv = &stack[depth - 1];
                int high = 0;
                for (Py_ssize_t k = 0; k < len; k++) {
                    if (start[k] >= 0xEE) {
                        high = 1;
                        break;
                    }
                }
                if (high && lv->high && !same_order_in_utf16(lv, start, len)) parted = 1;
                lv->key = start;
                lv->len = len;
                lv->high = high;
                i++;
            }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            Py_ssize_t j = i + (c == '-');
            Py_ssize_t d0 = j;
            while (j < n && (unsigned)(s[j] - '0') < 10) j++;
            Py_ssize_t nd = j - d0;
            if (nd == 0) return 0;
            int frac_zero = 0, is_float = 0;
            if (j < n && s[j] == '.') {
                is_float = 1;
                Py_ssize_t f0 = ++j;
                while (j < n && s[j] >= '0' && s[j] <= '9') j++;
                frac_zero = (j - f0 == 1 && s[f0] == '0');
            }
            if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                if (s[j] == 'E' || j + 1 >= n) return 0;
                unsigned char sign = s[j + 1];
                if (sign != '-' && sign != '+') return 0; /* "1e5": not orjson's; let the reference path decide */
                Py_ssize_t e0 = j + 2;
                j = e0;
                while (j < n && s[j] >= '0' && s[j] <= '9') j++;
                Py_ssize_t ne = j - e0;
                if (ne == 0) return 0;
                if (sign == '-' && ne == 1 && s[e0] < '7') return 0;       /* e-1 .. e-6: "0.00000d" in RFC 8785 */
                if (sign == '+' && (ne == 1 || (ne == 2 && (s[e0] < '2' || (s[e0] == '2' && s[e0 + 1] < '1')))))
                    return 0;                                               /* e+1 .. e+20: written in full */
            } else if (frac_zero) {
                return 0; /* "100.0": "100" in RFC 8785 */
            } else if (!is_float && nd >= 16 && !int_is_jcs(s + d0, nd)) {
                return 0;
            }
            i = j;
        } else if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) return 0;
            stack[depth].key = NULL;
            stack[depth].len = 0;
            stack[depth].high = 0;
            depth++;
            i++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return 0;
            depth--;
            i++;
        } else {
            i++; /* , : true false null, the newline */
        }
    }
    return parted ? 2 : 1;
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyBytes_Check(arg)) return PyLong_FromLong(0); /* not shown: the fast path never raises */
    return PyLong_FromLong(scan_line((const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O,
     "scan(line: bytes) -> int: 1 when orjson's sorted form in line is also its RFC 8785 form "
     "(no float, integer or key order that RFC 8785 writes otherwise); 2 when only the order of "
     "some object's keys differs between the two; 0 when not shown."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "agentloop._linescan",
    "The verifier's fast-path check of a line's numbers and key order, in one pass (see line.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) {
    POW10[0] = 1;
    for (int k = 1; k < 22; k++) POW10[k] = POW10[k - 1] * 10;
    return PyModule_Create(&module);
}
