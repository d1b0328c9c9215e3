"""Helpers shared by the training-data generators (seeded randomness, small fillers, JSON rendering)."""
from __future__ import annotations

import json
import random
import string
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
