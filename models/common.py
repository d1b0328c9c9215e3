"""Helpers shared by the training-data generators (seeded randomness, small fillers, JSON rendering)."""
from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path
from typing import Any, Callable, Sequence

Example = tuple[str, str]  # (text, label)


class Gen:
    """A seeded random source with the fillers the templates use."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[self.r.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def hex(self, n: int) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def alnum(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def digits(self, n: int) -> str:
        return "".join(self.r.choice(string.digits) for _ in range(n))

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def date(self, lo_year: int = 2023, hi_year: int = 2027) -> str:
        return f"{self.int(lo_year, hi_year)}-{self.int(1, 12):02d}-{self.int(1, 28):02d}"

    def iso_ts(self) -> str:
        return f"{self.date()}T{self.int(0, 23):02d}:{self.int(0, 59):02d}:{self.int(0, 59):02d}{self.pick(['Z', '.123Z', '+08:00', '+00:00', ''])}"

    def ip(self) -> str:
        return f"{self.int(1, 223)}.{self.int(0, 255)}.{self.int(0, 255)}.{self.int(1, 254)}"

    def shuffle(self, xs: list) -> list:
        xs = list(xs)
        self.r.shuffle(xs)
        return xs

    def case(self, s: str) -> str:
        """Random surface casing (the featurizer lowercases, but keep inputs realistic)."""
        k = self.r.random()
        if k < 0.15:
            return s.upper()
        if k < 0.45:
            return s[:1].upper() + s[1:]
        return s


def dumps(g: Gen, obj: Any) -> str:
    """JSON with a random but realistic layout (compact, spaced, or pretty-printed)."""
    k = g.r.random()
    if k < 0.55:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if k < 0.85:
        return json.dumps(obj, ensure_ascii=False)
    return json.dumps(obj, ensure_ascii=False, indent=g.pick([2, 4]))


def draw(g: Gen, templates: Sequence[Callable[[Gen], str]], n: int, label: str) -> list[Example]:
    """``n`` examples of ``label`` made by templates picked uniformly at random; duplicates removed."""
    seen: set[str] = set()
    out: list[Example] = []
    attempts = 0
    while len(out) < n and attempts < n * 20:
        attempts += 1
        t = g.pick(templates)(g)
        if t in seen:
            continue
        seen.add(t)
        out.append((t, label))
    return out


# ------------------------------------------------------------------- procedural payloads and prose

FIELD_WORDS = [
    "id", "name", "title", "status", "state", "type", "kind", "amount", "total", "price", "currency", "quantity", "qty", "sku", "email", "phone", "address", "city",
    "country", "zip", "created_at", "updated_at", "date", "timestamp", "owner", "customer", "user", "account", "order", "invoice", "items", "lines", "tags", "labels",
    "description", "note", "comment", "url", "href", "links", "version", "count", "page", "per_page", "next", "cursor", "enabled", "active", "score", "rating",
    "latitude", "longitude", "weight", "size", "color", "category", "region", "zone", "team", "project", "priority", "due_date", "balance", "limit", "metadata",
    "attributes", "properties", "settings", "channel", "source", "target", "duration", "progress", "result", "value", "unit", "rate", "discount", "tax", "shipping",
]
VALUE_WORDS = [
    "active", "paid", "open", "closed", "shipped", "delivered", "in_progress", "draft", "approved", "completed", "pending", "new", "archived", "gold", "blue", "large",
    "north", "premium", "standard", "express", "monthly", "weekly", "primary", "alpha", "beta", "Acme Inc", "Contoso", "Globex", "Initech", "Umbrella", "Hooli",
    "上海", "北京", "已发货", "已完成", "审批中", "普通会员", "华东区", "顺丰", "杭州西湖区文三路", "王芳", "Berlin", "Lyon", "Osaka", "Toronto",
]


def random_value(g: Gen, depth: int) -> Any:
    k = g.r.random()
    if depth < 2 and k < 0.12:
        return random_object(g, depth + 1)
    if depth < 2 and k < 0.2:
        return [random_object(g, depth + 1) if g.chance(0.5) else g.pick(VALUE_WORDS) for _ in range(g.int(0, 3))]
    if k < 0.45:
        return g.pick(VALUE_WORDS)
    if k < 0.65:
        return g.int(0, 100000)
    if k < 0.75:
        return round(g.r.random() * g.pick([1, 100, 10000]), 2)
    if k < 0.82:
        return g.chance(0.5)
    if k < 0.86:
        return None
    if k < 0.93:
        return g.iso_ts() if g.chance(0.5) else g.date()
    return g.pick(["", "n/a", g.alnum(10), g.uuid(), f"https://example.com/{g.alnum(6)}"])


def random_object(g: Gen, depth: int = 0) -> dict:
    keys = g.r.sample(FIELD_WORDS, g.int(2, 7))
    if g.chance(0.3):
        keys = [k[:1].upper() + k[1:] if g.chance(0.5) else k for k in keys]
    return {k: random_value(g, depth) for k in keys}


def random_json(g: Gen) -> str:
    """A normal business JSON body: procedural objects, lists or wrapped results."""
    k = g.r.random()
    if k < 0.5:
        obj: Any = random_object(g)
    elif k < 0.7:
        obj = [random_object(g, 1) for _ in range(g.int(1, 4))]
    else:
        wrapper = g.pick(["data", "result", "results", "items", "records", "payload", "response", "content"])
        obj = {wrapper: random_object(g) if g.chance(0.5) else [random_object(g, 1) for _ in range(g.int(1, 3))]}
        if g.chance(0.5):
            obj.update({g.pick(["total", "count", "totalCount"]): g.int(1, 500), g.pick(["page", "offset"]): g.int(0, 20)})
    return dumps(g, obj)


def random_xml(g: Gen) -> str:
    """A normal (non-error) XML document."""
    root = g.pick(["Order", "Customer", "Invoice", "Shipment", "Response", "ListBucketResult", "Result", "Product", "Account"])
    fields = g.r.sample(FIELD_WORDS, g.int(2, 6))
    inner = "".join(f"<{f[:1].upper() + f[1:]}>{random_value(g, 3)}</{f[:1].upper() + f[1:]}>" for f in fields)
    head = g.pick(['<?xml version="1.0" encoding="UTF-8"?>\n', '<?xml version="1.0"?>', ""])
    return f"{head}<{root}>{inner}</{root}>"


EN_WORDS = ("the a our your team project meeting report weekend coffee garden music travel library window morning evening city river mountain book story "
            "friend family dinner lunch plan idea photo movie game market school office train ticket song summer winter holiday park beach recipe dog cat "
            "quickly really always never today tomorrow yesterday together slowly happily finally maybe please thanks great nice lovely busy quiet new old").split()
EN_VERBS = "is was will be loves enjoys visits reads writes brings shares finds watches cooks plays meets opens starts".split()
ZH_PHRASES = ["今天", "明天", "周末", "我们", "大家", "一起", "去公园", "吃饭", "看电影", "开会", "天气很好", "散步", "喝咖啡", "读书", "旅行", "很开心", "准备", "晚上", "早上", "朋友", "家人", "音乐会", "新年快乐", "生日快乐", "谢谢", "好的", "没问题", "计划", "周报", "下午"]
OTHER_LANG = [
    "Buenos días, ¿cómo estás? Hace buen tiempo hoy.", "Nos vemos mañana en la oficina.", "Merci beaucoup pour votre aide, à bientôt.", "Il fait beau aujourd'hui à Paris.",
    "Ich gehe heute Abend ins Kino.", "Vielen Dank für die schnelle Antwort.", "Obrigado pela ajuda, até logo.", "Vamos almoçar juntos amanhã?", "Grazie mille, a presto!",
    "Dziękuję bardzo, do zobaczenia.", "Tack så mycket för igår.", "お疲れさまです。明日もよろしくお願いします。", "週末は家族と出かけます。", "안녕하세요, 오늘 날씨가 좋네요.",
    "Спасибо большое, до встречи.", "Hoje o dia está lindo.", "Bedankt en tot ziens.", "Kiitos paljon avusta.",
]


def random_prose(g: Gen) -> str:
    """Off-topic prose: English word salad sentences, Chinese phrase chains, or other languages."""
    k = g.r.random()
    if k < 0.45:
        sents = []
        for _ in range(g.int(1, 3)):
            w = [g.pick(EN_WORDS) for _ in range(g.int(2, 5))] + [g.pick(EN_VERBS)] + [g.pick(EN_WORDS) for _ in range(g.int(1, 5))]
            s = " ".join(w)
            sents.append(s[:1].upper() + s[1:] + g.pick([".", "!", "?", "."]))
        return " ".join(sents)
    if k < 0.75:
        return "".join(g.pick(ZH_PHRASES) for _ in range(g.int(3, 7))) + g.pick(["。", "！", "～", "。"])
    return " ".join(g.pick(OTHER_LANG) for _ in range(g.int(1, 2)))


def envelope(g: Gen, message: str, code: Any = None, status: int | None = None) -> str:
    """Wraps a message in one of many generic error envelopes (shared by every error label, so the
    envelope shape carries no label information)."""
    msg_key = g.pick(["message", "msg", "error", "detail", "description", "reason", "errorMessage", "error_msg", "errmsg", "error_description", "Message"])
    code_key = g.pick(["code", "errorCode", "error_code", "errcode", "type", "status", "Code", "err_code"])
    k = g.r.random()
    if k < 0.2:
        body: Any = {msg_key: message}
        if code is not None:
            body[code_key] = code
    elif k < 0.35:
        inner: Any = {msg_key if msg_key != "error" else "message": message}
        if code is not None:
            inner["code"] = code
        body = {g.pick(["error", "err", "fault", "Error"]): inner}
    elif k < 0.5:
        body = {g.pick(["errors", "Errors", "error_list"]): [{"code": code, msg_key: message} if code is not None else {msg_key: message}]}
    elif k < 0.62:
        body = {"success": False, code_key: code if code is not None else g.pick(["E1", "ERR", -1, 1]), msg_key: message}
    elif k < 0.72:
        body = {"status": g.pick(["error", "fail", "failed", "ERROR"]), "data": None, msg_key: message}
    elif k < 0.8:
        body = {"timestamp": g.iso_ts(), "status": status or g.pick([200, 400, 500]), "error": message, "path": "/" + g.pick(["api", "v1", "v2", "internal"]) + "/" + g.pick(["orders", "users", "items", "claims", "files"])}
    elif k < 0.88:
        body = {"ret": g.pick([-1, 1, 500]), msg_key: message, "requestId": g.uuid()}
    else:
        return message if g.chance(0.6) else f"{status or g.pick([400, 500])} {message}"
    if g.chance(0.2):
        body[g.pick(["request_id", "requestId", "trace_id", "RequestId"])] = g.uuid()
    return dumps(g, body)


def combo(g: Gen, subjects: Sequence[str], predicates: Sequence[str], suffixes: Sequence[str] = ("",), sep: str = " ") -> str:
    """subject + predicate (+ suffix) with random casing: compositional phrasing."""
    s = f"{g.pick(subjects)}{sep}{g.pick(predicates)}"
    suf = g.pick(suffixes)
    if suf:
        s += g.pick([". ", ", ", "; ", " - "]) if sep == " " else g.pick(["，", "。", "；", ","])
        s += suf
    return g.case(s) if sep == " " else s


def generate_examples(templates: dict[str, Sequence[Callable[[Gen], str]]], labels: Sequence[str], seed: int, per_label: int) -> list[Example]:
    """`per_label` examples of each label drawn from its templates, in a deterministic order."""
    g = Gen(seed)
    out: list[Example] = []
    for label in labels:
        out.extend(draw(g, templates[label], per_label, label))
    return out


def generator_main(doc: str | None, default_seed: int, generate: Callable[[int], list[Example]], default_out: Path) -> None:
    """The command line of a generate.py: writes the generated examples as JSON lines."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=default_seed)
    ap.add_argument("--out", type=Path, default=default_out)
    args = ap.parse_args()
    rows = generate(args.seed)
    with args.out.open("w", encoding="utf-8") as f:
        for text, label in rows:
            f.write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} examples to {args.out}")
