"""Issue 15, fourth revision: training bodies by *kind of failure*, written without reading eval.jsonl.

- Damaged bodies made by the process that damages them, applied to the whole `ok` mix (so the damage,
  not the content, is what is learned): text decoded with the wrong codec (UTF-8 read as cp1252/latin-1,
  GBK read as UTF-8 and back: 锟斤拷, uninitialised MSVC buffers: 烫烫/屯屯, double-encoded UTF-8), binary
  bytes (gzip/zlib/PNG/PDF/protobuf) inside a field or as the whole body read as text, runs of U+FFFD
  replacing letters; and integrity messages of storage, archive, package and database tools and of cloud
  checksum checks (which often come with a 400 status: the wording, not the code, says `data_corrupted`).
- What is `unknown`: bodies that say nothing classifiable (an empty object, a bare "error", an opaque
  code with no message, a bare false), business outcomes in success-shaped bodies (refused, declined,
  rejected with a reason) and unrelated text (code, markdown, mail, lorem ipsum).
- Per-field validation maps of web frameworks (Rails/ActiveRecord, Django REST framework, Laravel, ASP.NET
  Core, pydantic v1, Joi, express-validator, Go validator) as `malformed`.
- SOAP 1.1/1.2 faults and plain XML error documents for every error label, with each label's messages.
"""
from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any, Callable

from common import Gen, dumps
from vendor_bodies import MSG

# Real-looking multilingual field values: what a codec error damages.
TEXTS = [
    "Müller & Söhne GmbH", "Königstraße 12, 80331 München", "Crème brûlée x2", "Françoise Dupré", "São João da Madeira", "Ação concluída",
    "Łukasz Żółkiewski", "Dvořák, Praha 2", "İstanbul Şişli", "Ørsted Allé 4", "Größe: 42 – schwarz", "Señora Núñez", "Ελληνικά προϊόντα",
    "Москва, ул. Тверская 7", "Иванов Пётр", "北京市朝阳区建国路88号", "张三丰", "顺丰速运 已签收", "退款已到账", "广东省深圳市南山区", "发票抬头：某某科技有限公司",
    "東京都渋谷区神南1-2-3", "山田 太郎", "お届け予定日", "서울특별시 강남구", "김민준", "Hà Nội, Việt Nam", "Nguyễn Văn An", "العربية", "Café del Mar – Ibiza",
    "naïve coöperation", "Zoë Ångström", "Øystein Ågren", "żółta łódź", "Thé vert bio 250 g", "Überweisung erhalten", "Kundennummer prüfen",
]


def mojibake_of(g: Gen, s: str) -> str:
    """`s` after a codec mistake, as a real pipeline makes it."""
    raw = s.encode("utf-8")
    k = g.r.random()
    if k < 0.3:
        return raw.decode("cp1252", errors="replace")
    if k < 0.45:
        return raw.decode("latin-1")
    if k < 0.55:  # encoded twice
        return raw.decode("cp1252", errors="replace").encode("utf-8").decode("cp1252", errors="replace")
    if k < 0.75 and any(ord(c) > 0x2e80 for c in s):
        # GBK bytes read as UTF-8 (→ U+FFFD), written back as UTF-8 and read as GBK again: 锟斤拷.
        bad = s.encode("gbk", errors="replace").decode("utf-8", errors="replace")
        return bad.encode("utf-8").decode("gbk", errors="replace") if g.chance(0.6) else bad
    if k < 0.85:
        # An uninitialised buffer shown as GBK: 0xCC → 烫, 0xCD → 屯.
        fill = g.pick([b"\xcc", b"\xcd"]) * (2 * g.int(2, 12))
        return fill.decode("gbk") if g.chance(0.5) else s[: g.int(0, max(0, len(s) // 2))] + fill.decode("gbk")
    return raw.decode("utf-8").encode("utf-16-le").decode("latin-1") if g.chance(0.3) else raw.decode("gbk", errors="replace")


def binary_bytes(g: Gen, n: int | None = None) -> bytes:
    payload = g.pick([b'{"ok":true,"items":[1,2,3]}', b"order_id,total\n1001,9.90\n1002,12.50\n", ("x" * g.int(10, 60)).encode(), g.hex(40).encode()])
    kind = g.r.random()
    if kind < 0.3:
        b = gzip.compress(payload, mtime=0)
    elif kind < 0.45:
        b = zlib.compress(payload)
    elif kind < 0.6:
        b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(g.int(0, 255) for _ in range(g.int(8, 40)))
    elif kind < 0.7:
        b = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + bytes(g.int(0, 255) for _ in range(g.int(8, 40)))
    elif kind < 0.8:
        b = b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(g.int(0, 255) for _ in range(g.int(8, 40)))
    else:
        b = bytes(g.int(0, 255) for _ in range(g.int(8, 60)))
    return b[:n] if n else b


def bytes_as_text(g: Gen, b: bytes) -> str:
    return b.decode(g.pick(["latin-1", "cp1252", "utf-8", "utf-8"]), errors="replace")


def damaged_value(g: Gen, old: str) -> str:
    k = g.r.random()
    if k < 0.4:
        return mojibake_of(g, g.pick(TEXTS) if g.chance(0.6) or not old else old)
    if k < 0.6:
        return bytes_as_text(g, binary_bytes(g))
    if k < 0.8:
        src = old or g.pick(TEXTS)
        i = g.int(0, len(src))
        return src[:i] + "\ufffd" * g.int(2, 16) + src[i + g.int(0, 4):]
    src = old or g.pick(TEXTS)
    i = g.int(0, len(src))
    return src[:i] + g.pick(["\x00", "\x00\x00\x00", "\x1b[", "\x08", "\x00\ufffd"]) * g.int(1, 4) + src[i:]


def _string_slots(node: Any, path: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _string_slots(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _string_slots(v, path + (i,))
    elif isinstance(node, str):
        out.append(path)
    return out


def damaged_field(g: Gen, ok_sources: list[Callable[[Gen], str]]) -> str:
    """A success body whose JSON parses, with one or two string fields damaged (or a new damaged field)."""
    for _ in range(50):
        body = g.pick(ok_sources)(g)
        try:
            obj = json.loads(body)
        except ValueError:
            continue
        if isinstance(obj, (dict, list)):
            break
    else:
        obj = {"id": g.int(1, 9999), "name": g.pick(TEXTS)}
    slots = _string_slots(obj)
    if not slots and isinstance(obj, dict):
        obj[g.pick(["name", "note", "address", "title", "description"])] = ""
        slots = _string_slots(obj)
    for path in (g.shuffle(list(slots))[: g.int(1, 2)] if slots else []):
        parent = obj
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = damaged_value(g, parent[path[-1]])
    return json.dumps(obj, ensure_ascii=g.chance(0.15), separators=g.pick([(",", ":"), (", ", ": ")]))


def binary_body(g: Gen, ok_sources: list[Callable[[Gen], str]]) -> str:
    """A compressed or binary body read as text (a missing Content-Encoding, a file served as JSON)."""
    body = g.pick(ok_sources)(g).encode("utf-8")
    k = g.r.random()
    if k < 0.5:
        b = gzip.compress(body, mtime=0)
    elif k < 0.7:
        b = zlib.compress(body)
    else:
        b = binary_bytes(g) + body[: g.int(0, 40)]
    return bytes_as_text(g, b)


def replaced_run(g: Gen, ok_sources: list[Callable[[Gen], str]]) -> str:
    """A whole body where every non-ASCII character (or a stretch of text) became U+FFFD or '?'."""
    body = g.pick(ok_sources)(g)
    if any(ord(c) > 127 for c in body) and g.chance(0.6):
        rep = g.pick(["\ufffd", "??", "?"])
        return "".join(rep if ord(c) > 127 else c for c in body)
    i = g.int(0, max(0, len(body) - 1))
    return body[:i] + "\ufffd" * g.int(4, 40) + body[i + g.int(0, 20):]


TOOL_LINES = [
    "{tool}: {file}: bad CRC {a8} (should be {b8})", "{tool}: {file}: invalid compressed data--format violated", "{tool}: {file}: unexpected end of file",
    "tar: Skipping to next header", "tar: Unexpected EOF in archive", "7z: ERROR: Data Error : {file}", "xz: {file}: Compressed data is corrupt",
    "bzip2: Data integrity error when decompressing.", "rsync: checksum mismatch on {file}, re-transmitting", "zpool status: {n} data errors, use '-v' for a list; permanent errors in {file}",
    "org.apache.hadoop.fs.ChecksumException: Checksum error: /data/{file} at {n} exp: {m} got: {n2}",
    "org.apache.parquet.io.ParquetDecodingException: Can not read value at 0 in block -1 in file {file}",
    "java.io.IOException: Stream is corrupted", "ERROR:  invalid memory alloc request size {n}", "ERROR:  could not read block {n} in file \"base/{n2}/{m}\": read only 0 of 8192 bytes",
    "ERROR 1034 (HY000): Index for table 'orders' is corrupt; try to repair it", "WiredTiger error (-31802) [{n}:{m}], file:collection-{n2}.wt, WT_SESSION.open_cursor: read checksum error",
    "Bad file format reading the append only file: make a backup of your AOF file, then use ./redis-check-aof --fix <filename>",
    "error: object file .git/objects/{a2}/{a38} is empty", "fatal: loose object {a40} is corrupt", "error: inflate: data stream error (incorrect header check)",
    "npm ERR! code EINTEGRITY npm ERR! sha512-{b64} integrity checksum failed when using sha512: wanted sha512-{b64} but got sha512-{b64b}",
    "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. {file}: Expected sha256 {a64} Got {b64hex}",
    "E: Failed to fetch http://deb.example.org/{file}  Hash Sum mismatch", "filesystem layer verification failed for digest sha256:{a64}",
    "Unable to decode protobuf: invalid wire type 7 at offset {n}", "avro.io.SchemaResolutionException: malformed data: invalid long encoding at byte {n}",
    "Image file is truncated ({n} bytes not processed)", "PDF file is damaged - attempting to reconstruct xref table", "invalid stored block lengths",
    "Parity check failed on stripe {n}: {m} sectors unrecoverable", "checksum verification failed for part {n} of upload {a8}",
    "decoded record does not match its CRC-32C; the segment file is damaged", "unexpected NUL bytes in field 'comment' of row {n}",
]
TOOLS = ["unzip", "gzip", "gunzip", "zcat", "funzip", "jar"]
FILES = ["export-2026-11.zip", "backup.tar.gz", "invoices.csv.gz", "orders.parquet", "dump.sql.gz", "images/0001.png", "ledger.db", "segment-000042.log", "report.pdf", "pkg-1.4.2.tgz"]


def integrity_line(g: Gen) -> str:
    line = g.pick(TOOL_LINES)
    return line.format(tool=g.pick(TOOLS), file=g.pick(FILES), a8=g.hex(8), b8=g.hex(8), n=g.int(1, 999999), m=g.int(1, 999999), n2=g.int(1, 99999), a2=g.hex(2), a38=g.hex(38), a40=g.hex(40),
                       b64=base64.b64encode(g.hex(32).encode()).decode()[:40], b64b=base64.b64encode(g.hex(32).encode()).decode()[:40], a64=g.hex(64), b64hex=g.hex(64))


def cloud_checksum(g: Gen) -> str:
    a, b = base64.b64encode(bytes.fromhex(g.hex(8))).decode(), base64.b64encode(bytes.fromhex(g.hex(8))).decode()
    msg = g.pick([
        f"Provided MD5 hash \"{a}\" doesn't match calculated MD5 hash \"{b}\".", f"The computed checksum {a} does not match the checksum header {b}.",
        "The MD5 value specified in the request is invalid. MD5 value must be 128 bits and Base64-encoded.", f"Content-SHA256 mismatch: header {g.hex(16)}, body {g.hex(16)}",
        "The uploaded part is corrupt: its checksum does not match the one sent by the client.", f"x-goog-hash crc32c={a} does not match the stored object's crc32c={b}",
        "Checksum of the received chunk differs from the declared value; the chunk was discarded.", "Object integrity check failed: ETag mismatch after multipart upload.",
    ])
    code = g.pick([400, 400, 422, 409, 500])
    return g.pick([
        dumps(g, {"error": {"code": code, "message": msg, "errors": [{"message": msg, "domain": "global", "reason": g.pick(["invalid", "checksumMismatch", "badDigest"])}]}}),
        dumps(g, {"error": {"code": g.pick(["Md5Mismatch", "InvalidChecksum", "ChecksumMismatch", "BadDigest"]), "message": msg}}),
        dumps(g, {"status": code, "error": g.pick(["Bad Request", "Unprocessable Entity"]), "message": msg}),
        f"HTTP {code}: {msg}",
    ])


def damage_templates(ok_sources: list[Callable[[Gen], str]]) -> list[Callable[[Gen], str]]:
    return [lambda g: damaged_field(g, ok_sources), lambda g: damaged_field(g, ok_sources), lambda g: damaged_field(g, ok_sources), lambda g: binary_body(g, ok_sources),
            lambda g: replaced_run(g, ok_sources), integrity_line, integrity_line, cloud_checksum]


# ------------------------------------------------------------------------------------ unknown

BUSINESS_OUTCOMES = [
    ("Refused", "Not enough balance"), ("Refused", "FRAUD"), ("Declined", "Do not honor"), ("REJECTED", "limit exceeded for this merchant"), ("DECLINED", "Insufficient funds"),
    ("Cancelled", "Shopper cancelled"), ("Error", "Acquirer Error"), ("Blocked", "Card blocked"), ("failed", "account_closed"), ("rejected", "risk_check_failed"),
    ("denied", "Transaction not permitted to cardholder"), ("on_hold", "Awaiting KYC documents"), ("refused", "Expired card"), ("NOT_APPROVED", "Invalid merchant"),
]


def outcome_body(g: Gen) -> str:
    """A business result in a success-shaped body: the call worked, the thing was refused."""
    res, reason = g.pick(BUSINESS_OUTCOMES)
    ref = g.digits(16)
    return g.pick([
        dumps(g, {"pspReference": ref, "resultCode": res, "refusalReason": reason, "merchantReference": g.alnum(10)}),
        dumps(g, {"id": g.alnum(14), "status": res.lower(), "decline_reason": reason, "amount": g.int(100, 99999)}),
        dumps(g, {"transaction": {"id": ref, "state": res.upper(), "reason": reason}}),
        dumps(g, {"result": res, "reasonCode": g.int(1, 99), "reasonText": reason}),
        dumps(g, {"approved": False, "responseCode": g.pick(["05", "51", "54", "57", "61", "N7"]), "message": reason}),
    ])


def opaque(g: Gen) -> str:
    """Bodies that say nothing classifiable."""
    code = g.pick([g.int(1, 99999), f"E{g.int(100, 9999)}", g.alnum(6).upper(), -g.int(1, 999), f"ERR_{g.int(10, 999)}"])
    return g.pick([
        "{}", "error", "Error", "ERROR", "failed", "FAIL", "false", "fail", "NG", "-1", "0x" + g.hex(8), "nok", "err", "Error.",
        dumps(g, {"error": True}), dumps(g, {"ok": False}), dumps(g, {"success": False}), dumps(g, {"status": "error"}), dumps(g, {"status": "fail"}),
        dumps(g, {"code": code}), dumps(g, {"errno": code}), dumps(g, {"status": "error", "code": code}), dumps(g, {"result": "FAIL", "code": code}),
        dumps(g, {"error": "error"}), dumps(g, {"error": code}), dumps(g, {"success": False, "errorCode": code}), dumps(g, {"ret": code, "msg": ""}),
        dumps(g, {"error": {"code": code, "message": ""}}), dumps(g, {"errors": [{"code": code}]}), dumps(g, {"status": "failed", "message": "error"}),
        f"<error>{code}</error>", f"ERR {code}", f"error {code}", f"Error code: {code}", dumps(g, {"code": code, "msg": "error"}), dumps(g, {"code": code, "msg": "失败"}), "失败", "错误", "操作失败",
    ])


UNRELATED = [
    "# Changelog\n\n## 2.3.0\n- Added dark mode\n- Fixed a crash on startup",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))", "SELECT id, name FROM customers WHERE created_at > NOW() - INTERVAL '7 days';",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
    "Hi Sam,\n\nthanks for the call today. I'll send the contract by Friday.\n\nBest,\nRita", "TODO: move the config loader into its own module",
    "User-agent: *\nDisallow: /admin/", "import React from 'react';\nexport default function App() { return <div/>; }", "Thank you for subscribing to our newsletter!",
    "Roses are red, violets are blue.", "The meeting has been moved to room 4B.", "Shipping policy: orders above 50 EUR ship free within the EU.",
    "各位同事，下周一例会改到下午三点。", "今天的任务：整理文档，回复邮件。", "Sehr geehrte Damen und Herren, anbei die Unterlagen.", "Estimado cliente, gracias por su compra.",
    "Q: What is the capital of France?\nA: Paris", "1. Preheat oven\n2. Mix ingredients\n3. Bake", "v2.14.1 (build 8812) on linux/amd64",
]


def unrelated(g: Gen) -> str:
    return g.pick(UNRELATED)


UNKNOWN_TEMPLATES: list[Callable[[Gen], str]] = [outcome_body, outcome_body, opaque, opaque, opaque, unrelated]


# ------------------------------------------------------------------ SOAP faults and XML errors

SOAP_CODE = {"auth_failed": ["soap:Client", "wsse:FailedAuthentication", "ns1:AccessDenied"], "rate_limited": ["soap:Client", "soap:Server", "ns1:Throttled"], "not_found": ["soap:Client", "ns1:NotFound"],
             "server_error": ["soap:Server", "ns1:InternalError"], "malformed": ["soap:Client", "ns1:InvalidRequest"], "data_corrupted": ["soap:Server", "soap:Client"],
             "timeout": ["soap:Server", "ns1:Timeout"], "network_issue": ["soap:Server"], "unknown": ["soap:Client", "ns1:BusinessRuleViolation"]}
XML_ROOT = ["Error", "error", "ErrorResponse", "fault", "response"]


def soap_fault(g: Gen, label: str) -> str:
    msg = g.pick(MSG[label]["en"]) if g.chance(0.7) else g.pick([m for ms in MSG[label].values() for m in ms])
    code = g.pick(SOAP_CODE[label])
    if g.chance(0.6):
        detail = f"<detail><ns1:errorCode xmlns:ns1=\"urn:{g.pick(['acme', 'erp', 'billing'])}\">{g.int(100, 9999)}</ns1:errorCode></detail>" if g.chance(0.4) else ""
        return (f'<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault>'
                f"<faultcode>{code}</faultcode><faultstring>{msg}</faultstring>{detail}</soap:Fault></soap:Body></soap:Envelope>")
    value = "env:Sender" if code.endswith(("Client", "Denied", "Request", "Violation", "NotFound", "Throttled", "Authentication")) else "env:Receiver"
    return (f'<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body><env:Fault><env:Code><env:Value>{value}</env:Value></env:Code>'
            f'<env:Reason><env:Text xml:lang="en">{msg}</env:Text></env:Reason></env:Fault></env:Body></env:Envelope>')


def xml_error(g: Gen, label: str) -> str:
    msg = g.pick([m for ms in MSG[label].values() for m in ms])
    root, tag = g.pick(XML_ROOT), g.pick(["Code", "code", "status"])
    code = g.pick([g.int(1, 9999), "E" + g.digits(3), g.alnum(6).upper()])
    head = '<?xml version="1.0" encoding="UTF-8"?>' if g.chance(0.5) else ""
    return f"{head}<{root}><{tag}>{code}</{tag}><Message>{msg}</Message></{root}>"


def xml_templates(label: str) -> list[Callable[[Gen], str]]:
    return [lambda g: soap_fault(g, label), lambda g: xml_error(g, label)]


# ------------------------------------------------------------- framework validation (malformed)

VFIELDS = ["email", "name", "phone", "amount", "quantity", "zip", "country", "start_date", "password", "line_items", "currency", "sku"]


def framework_validation(g: Gen) -> str:
    f = g.pick(VFIELDS)
    f2 = g.pick([x for x in VFIELDS if x != f])
    cap = f.replace("_", " ").capitalize()
    k = g.r.random()
    if k < 0.15:
        return dumps(g, {"errors": {f: [g.pick(["can't be blank", "is invalid", "is too short (minimum is 8 characters)", "is not a number", "has already been taken"])]} | ({f2: ["can't be blank"]} if g.chance(0.4) else {})})
    if k < 0.3:
        return dumps(g, {f: [g.pick(["This field is required.", "Enter a valid email address.", "A valid integer is required.", "This field may not be blank.", "Ensure this field has no more than 64 characters."])]} | ({"non_field_errors": ["Invalid input."]} if g.chance(0.2) else {}))
    if k < 0.45:
        return dumps(g, {"message": "The given data was invalid.", "errors": {f: [f"The {f.replace('_', ' ')} field is required."] if g.chance(0.5) else [f"The {f.replace('_', ' ')} must be a valid date."]}})
    if k < 0.6:
        return dumps(g, {"type": "https://tools.ietf.org/html/rfc9110#section-15.5.1", "title": "One or more validation errors occurred.", "status": 400, "traceId": f"00-{g.hex(32)}-{g.hex(16)}-00", "errors": {cap.replace(" ", ""): [f"The {cap} field is required."]}})
    if k < 0.7:
        return dumps(g, {"detail": [{"loc": ["body", f], "msg": g.pick(["field required", "value is not a valid integer", "value is not a valid email address", "ensure this value is greater than 0"]), "type": g.pick(["value_error.missing", "type_error.integer", "value_error.email"])}]})
    if k < 0.8:
        return dumps(g, {"statusCode": 400, "error": "Bad Request", "message": f'"{f}" {g.pick(["is required", "must be a string", "must be a valid email", "is not allowed to be empty"])}', "validation": {"source": "body", "keys": [f]}})
    if k < 0.9:
        return dumps(g, {"errors": [{"type": "field", "value": g.pick(["", "abc", "-1"]), "msg": g.pick(["Invalid value", "must be at least 3 chars long"]), "path": f, "location": g.pick(["body", "query"])}]})
    return f"Key: 'Order.{cap.replace(' ', '')}' Error:Field validation for '{cap.replace(' ', '')}' failed on the '{g.pick(['required', 'email', 'gt', 'oneof'])}' tag"
