"""Deterministic hashed text featurizer, shared with features/text/ (TypeScript).

The two implementations must produce the same vector for the same text; the committed test vectors
(models/featurize-vectors.json, written by `python3 models/featurize.py --write-vectors`) are
asserted by test/models/featurize-parity.test.ts.

Pipeline (each step is defined so that Python and JavaScript agree exactly):

1. The text is truncated to ``max_input_code_points`` Unicode code points (default 4096; a lone
   surrogate counts as one code point, a valid UTF-16 pair as one).
2. Lone UTF-16 surrogates (possible in JSON-decoded text) are replaced by U+FFFD.
3. NFKC normalization, then full Unicode lowercasing (``str.lower`` / ``String.prototype.toLowerCase``).
4. JSON escapes of control characters (``\\u0000``-``\\u001f`` and ``\\u007f``, except tab, LF and CR)
   become U+FFFD: a control character inside a JSON string is a sign of damaged data, and so is a raw one
   (step 6).
5. Ids are masked: every maximal run of ``[0-9a-z#]`` characters joined by ``-`` or ``_`` that holds 4 or
   more ASCII digits (``o-12345678``, ``po-2024-00017-b``, ``so#88123``, ``4500012345``, dates,
   timestamps, uuids) becomes ``<id>``. What a text is about comes from its words, never from the shape
   of an id; status codes such as 401/502 (3 digits) stay as they are.
6. Format characters (category Cf, e.g. ZWSP, ZWJ, BOM, soft hyphen) are removed; each run of
   separators and whitespace controls (categories Z*, and tab, LF, VT, FF, CR, NEL) becomes one ASCII
   space; every other control character (category Cc: NUL, DEL, C1 controls) becomes U+FFFD; leading
   and trailing spaces are trimmed. An empty result gives the zero vector.
7. Features, binary presence (each distinct 32-bit feature hash counted once):
   - ``c:<gram>`` for every character n-gram (n = 1..4, over code points) of
     ``"\\x02" + text + "\\x03"`` (STX/ETX mark the start and the end: they cannot occur in the
     normalized text, where controls became spaces);
   - ``w:<tok>`` for every token and ``b:<tok1> <tok2>`` for every pair of adjacent tokens, where a
     token is a run of letters, marks, numbers or ``_`` (categories L*, M*, N*), except that each
     CJK character (Han, kana, Hangul ranges below) is a token of its own.
   - ``s:<signal>`` structural signals of the *raw* text (before step 1; see ``structure_signals``):
     ``json_ok`` / ``json_cut`` / ``json_bad`` when it starts like JSON (``{`` or ``[`` after JSON
     whitespace or a BOM) and its brackets balance / run out before they close (the body was cut
     short) / mismatch or are followed by more text; ``html`` when its first 4096 code points, lower-cased,
     hold ``<html``, ``<!doctype html`` or ``<body``; ``trace`` when they hold two or more stack-frame
     lines (Java/JS/.NET ``at …``, Python ``File "…", line N``, Go ``goroutine N [`` / ``….go:N``,
     Ruby ``….rb:N:in``, PHP ``#N ….php(N)``), also inside JSON strings (``\\n`` counts as a line break).
     A bag of n-grams cannot tell a cut body from a short intact one; the scanner can, exactly.
8. Each feature string is hashed with FNV-1a 32-bit over its UTF-8 bytes; index = hash mod D
   (D = 2**14), sign = -1 if the top bit of the hash is set, else +1. The signed counts are summed
   per index (integers, so exact), the vector is divided by its L2 norm (float64) and stored as
   float32.
"""
from __future__ import annotations

import json
import math
import re
import sys
import unicodedata
from pathlib import Path
from typing import Iterable

import numpy as np

FEATURIZER_VERSION = "hash-v3"
DIMS = 1 << 14
CHAR_NGRAMS = (1, 4)
MAX_INPUT_CODE_POINTS = 4096
ID_MIN_DIGITS = 4
ID_MASK = "<id>"

CONFIG = {
    "name": FEATURIZER_VERSION,
    "dims": DIMS,
    "char_ngrams": list(CHAR_NGRAMS),
    "word_ngrams": [1, 2],
    "hash": "fnv1a32-utf8",
    "max_input_code_points": MAX_INPUT_CODE_POINTS,
    "id_mask": {"min_digits": ID_MIN_DIGITS, "token": ID_MASK},
    "controls": "fffd",
    "structure": ["json_ok", "json_cut", "json_bad", "html", "trace"],
}

# CJK ranges: each code point in them is a token of its own.
_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # CJK Extensions B.. and Compatibility Supplement
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ID_RUN = re.compile("[0-9a-z#]+(?:[-_][0-9a-z#]+)*")
_DIGIT = re.compile("[0-9]")
_JSON_CONTROL_ESCAPE = re.compile(r"\\u00(?:0[0-8bcef]|1[0-9a-f]|7f)")
_WHITESPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r\x85")

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193

_class_cache: dict[str, int] = {}
_hash_cache: dict[str, int] = {}

# character classes
_OTHER, _WORD, _CJK, _SPACE, _DROP, _CONTROL = 0, 1, 2, 3, 4, 5


def _char_class(ch: str) -> int:
    c = _class_cache.get(ch)
    if c is not None:
        return c
    cp = ord(ch)
    cat = unicodedata.category(ch)
    if any(lo <= cp <= hi for lo, hi in _CJK_RANGES):
        c = _CJK
    elif cat[0] in "LMN" or ch == "_":
        c = _WORD
    elif cat == "Cf":
        c = _DROP
    elif cat[0] == "Z" or ch in _WHITESPACE_CONTROLS:
        c = _SPACE
    elif cat == "Cc":
        c = _CONTROL
    else:
        c = _OTHER
    _class_cache[ch] = c
    return c


def fnv1a32(s: str) -> int:
    """FNV-1a 32-bit hash of the UTF-8 bytes of ``s``."""
    h = _hash_cache.get(s)
    if h is not None:
        return h
    h = _FNV_OFFSET
    for b in s.encode("utf-8"):
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFF
    if len(_hash_cache) < 4_000_000:
        _hash_cache[s] = h
    return h


def _mask_id(m: re.Match) -> str:
    run = m.group(0)
    return ID_MASK if len(_DIGIT.findall(run)) >= ID_MIN_DIGITS else run


def mask_ids(text: str) -> str:
    """Step 5 on a lower-cased text: id-like runs with 4+ digits become ``<id>``."""
    return _ID_RUN.sub(_mask_id, text)


def normalize(text: str, max_input_code_points: int = MAX_INPUT_CODE_POINTS) -> str:
    """Steps 1-6: the canonical text that features are taken from."""
    text = text[:max_input_code_points]
    text = _LONE_SURROGATE.sub("\ufffd", text)
    text = unicodedata.normalize("NFKC", text).lower()
    text = _JSON_CONTROL_ESCAPE.sub("\ufffd", text)
    text = mask_ids(text)
    out: list[str] = []
    pending_space = False
    for ch in text:
        c = _char_class(ch)
        if c == _DROP:
            continue
        if c == _CONTROL:
            ch = "\ufffd"
        if c == _SPACE:
            pending_space = True
            continue
        if pending_space and out:
            out.append(" ")
        pending_space = False
        out.append(ch)
    return "".join(out)


def tokens(norm: str) -> list[str]:
    """Word tokens of a normalized text (step 7)."""
    toks: list[str] = []
    cur: list[str] = []
    for ch in norm:
        c = _char_class(ch)
        if c == _WORD:
            cur.append(ch)
            continue
        if cur:
            toks.append("".join(cur))
            cur = []
        if c == _CJK:
            toks.append(ch)
    if cur:
        toks.append("".join(cur))
    return toks


_JSON_WS = " \t\n\r\ufeff"
_HTML_MARKS = ("<html", "<!doctype html", "<body")
_FRAME = re.compile(
    r"^[ \t]*at [^ \t]"  # Java, JavaScript, .NET
    r"|^[ \t]*file \"[^\"]*\", line [0-9]+"  # Python (the text is lower-cased)
    r"|^goroutine [0-9]+ \["  # Go
    r"|^[ \t]*[^ \t]*\.go:[0-9]+"  # Go frames
    r"|^[ \t]*(?:from )?[^ \t]*\.rb:[0-9]+:in "  # Ruby
    r"|^#[0-9]+ [^ \t][^\n]*\.php\([0-9]+\)"  # PHP
)


def json_shape(text: str) -> str | None:
    """``json_ok``, ``json_cut``, ``json_bad``, or None when ``text`` does not start like JSON."""
    n = len(text)
    i = 0
    while i < n and text[i] in _JSON_WS:
        i += 1
    if i == n or text[i] not in "{[":
        return None
    stack: list[str] = []
    in_str = False
    esc = False
    j = i
    while j < n:
        ch = text[j]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{" or ch == "[":
            stack.append(ch)
        elif ch == "}" or ch == "]":
            if not stack or stack[-1] != ("{" if ch == "}" else "["):
                return "json_bad"
            stack.pop()
            if not stack:
                break
        j += 1
    if stack or in_str:
        return "json_cut"
    k = j + 1
    while k < n and text[k] in _JSON_WS:
        k += 1
    return "json_ok" if k == n else "json_bad"


def structure_signals(text: str, max_input_code_points: int = MAX_INPUT_CODE_POINTS) -> list[str]:
    """The structural signals of a raw text (step 7, ``s:``), in a fixed order."""
    out: list[str] = []
    shape = json_shape(text)
    if shape:
        out.append(shape)
    head = _LONE_SURROGATE.sub("\ufffd", text[:max_input_code_points]).lower()
    if any(m in head for m in _HTML_MARKS):
        out.append("html")
    lines = head.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\r", "\n").split("\n")
    if sum(1 for line in lines if _FRAME.search(line)) >= 2:
        out.append("trace")
    return out


def feature_strings(norm: str) -> set[str]:
    """The distinct feature strings of a normalized text."""
    feats: set[str] = set()
    if not norm:
        return feats
    padded = "\x02" + norm + "\x03"
    lo, hi = CHAR_NGRAMS
    n_chars = len(padded)
    for n in range(lo, hi + 1):
        for i in range(0, n_chars - n + 1):
            feats.add("c:" + padded[i : i + n])
    toks = tokens(norm)
    for i, t in enumerate(toks):
        feats.add("w:" + t)
        if i + 1 < len(toks):
            feats.add("b:" + t + " " + toks[i + 1])
    return feats


def featurize_sparse(text: str, max_input_code_points: int = MAX_INPUT_CODE_POINTS) -> tuple[list[int], list[float]]:
    """Sorted non-zero indices and their float32 values (as Python floats)."""
    acc: dict[int, int] = {}
    feats = feature_strings(normalize(text, max_input_code_points))
    if feats:
        feats.update("s:" + sig for sig in structure_signals(text, max_input_code_points))
    for h in {fnv1a32(f) for f in feats}:
        idx = h & (DIMS - 1)
        acc[idx] = acc.get(idx, 0) + (-1 if h >> 31 else 1)
    items = sorted((i, v) for i, v in acc.items() if v != 0)
    if not items:
        return [], []
    sq = 0
    for _, v in items:
        sq += v * v
    norm = math.sqrt(sq)
    idx = [i for i, _ in items]
    vals = np.array([v / norm for _, v in items], dtype=np.float64).astype(np.float32)
    return idx, [float(x) for x in vals]


def featurize_matrix(texts: Iterable[str], dense: bool = False):
    """A float32 matrix [N, DIMS]: scipy CSR by default, numpy when ``dense``."""
    from scipy import sparse

    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    n = 0
    for r, t in enumerate(texts):
        idx, vals = featurize_sparse(t)
        rows.extend([r] * len(idx))
        cols.extend(idx)
        data.extend(vals)
        n = r + 1
    m = sparse.csr_matrix((np.array(data, dtype=np.float32), (rows, cols)), shape=(n, DIMS), dtype=np.float32)
    return m.toarray() if dense else m


VECTOR_TEXTS = [
    "",
    "   \t\n  ",
    "Hello, World!",
    '{"error":{"code":401,"message":"Token expired"}}',
    '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3</center></body></html>',
    "我的订单到哪了？订单号O-12345678",
    "登录过期，请重新登录",
    "ｆｕｌｌ－ｗｉｄｔｈ ＡＰＩ　ｋｅｙ １２３４５",
    "rate limit 🚀🔥 exceeded 👨\u200d👩\u200d👧",
    "line one\u2028line two\u2029para\u00a0nbsp\u200bzwsp\ufeffbom",
    "ΣΑΣ İstanbul straße ﬁle Ⅻ ①",
    "order 2026-11-29 ts 1732838400123 id 0042",
    "PO-2024-00017-B, SO#88123 and 4500012345; claim 778812, user_id u-1234, HTTP 502, sha256, #42",
    '{"name":"ab\\u0000cd\\u001F","note":"tab\\tok\\u000a"} raw \x00nul \x7fdel \x85nel \x1bESC',
    "订单号4500012345的退款，报销单778812，2026年11月29日",
    "lone surrogate \ud800 here",
    "混合 text 日本語のテキスト 한국어 텍스트 ok",
    "e\u0301 café cafe\u0301 naïve",
    '{"orders":[{"id":"O-12345678","total":1299},{"id":"O-1234',
    '  \ufeff[1, 2, {"a": "}]\\"[", "b": [3]}] \n',
    '{"a":1}} trailing',
    '{"a":[1,2}',
    '<!DOCTYPE html><HTML><body><h1>Server Error</h1></body></html>',
    'java.lang.IllegalStateException: boom\n\tat com.acme.Orders.get(Orders.java:42)\n\tat com.acme.Api.handle(Api.java:7)',
    '{"trace":"Traceback (most recent call last):\\n  File \\"/app/x.py\\", line 3, in <module>\\n  File \\"/app/y.py\\", line 9, in f\\nKeyError: 1"}',
    'panic: runtime error\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:12 +0x1d',
    "x" * 4090 + " 502 bad gateway (after the truncation point)",
    "a" * 4095 + "\U0001F600" + " tail after an astral code point at the limit",
]


def write_vectors(path: Path) -> None:
    vectors = []
    for t in VECTOR_TEXTS:
        idx, vals = featurize_sparse(t)
        vectors.append({"text": t, "normalized": normalize(t), "structure": structure_signals(t), "indices": idx, "values": vals})
    lines = ",\n".join("  " + json.dumps(v, ensure_ascii=True) for v in vectors)
    path.write_text('{"featurizer": ' + json.dumps(CONFIG) + ',\n "vectors": [\n' + lines + "\n ]}\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--write-vectors":
        out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("featurize-vectors.json")
        write_vectors(out)
        print(f"wrote {out}")
    else:
        for line in sys.stdin:
            idx, vals = featurize_sparse(line.rstrip("\n"))
            print(json.dumps({"indices": idx, "values": vals}))
