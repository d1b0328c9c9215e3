"""The intent router's evaluation as IntentRouter.route does it (issue 43), for models/train.py.

- `route_rows`: the ticket-focus pre-step (models/ticket_focus.py), then the model on the primary part,
  and on the cleaned whole text when the primary part routes to `unknown`; the secondary part routed on
  its own. The chosen row's probabilities are what the report scores (Node's route() returns the same).
- `by_group`: routed metrics per language (en, zh, ja, es, de; other languages' off-domain rows apart)
  and per kind (plain, injection, mixed, noisy), with the issue-43 targets per language.
- `secondary_md` / `groups_md`: the report sections.

Rows of eval.jsonl written before issue 43 carry a `lang` such as `en-po`, `zh-two` or `mixed`
(Chinese/English code-switching): `language` and `kind` map them (`*-two` → mixed, `*-email` → noisy).
"""
from __future__ import annotations

import os

import ticket_focus as TF

LANGUAGES = ("en", "zh", "ja", "es", "de")
KINDS = ("plain", "injection", "mixed", "noisy")


def focus_enabled() -> bool:
    """MODELS_NO_FOCUS=1 trains and evaluates without the pre-step (for the with/without measurement)."""
    return os.environ.get("MODELS_NO_FOCUS", "") not in ("1", "true")


def language(e: dict) -> str:
    lang = e.get("lang", "")
    if lang in LANGUAGES:
        return lang
    if lang.startswith("en"):
        return "en"
    if lang.startswith("zh") or lang == "mixed":
        return "zh"
    return "other"


def kind(e: dict) -> str:
    if "kind" in e:
        return e["kind"]
    lang = e.get("lang", "")
    return "mixed" if lang.endswith("-two") else "noisy" if lang.endswith("-email") else "plain"


def training_text(text: str) -> str:
    return TF.focus(text)["primary"] if focus_enabled() else text


def route_rows(run, texts: list[str], labels: list[str], threshold: float) -> tuple[list[str], list, list[dict | None]]:
    """For each text: the text the route was decided on, its probability row, and the secondary intent
    ({"intent", "confidence"} or None). `run(text)` returns one probability row."""
    chosen, probs, secondary = [], [], []
    for t in texts:
        if not focus_enabled():
            chosen.append(t)
            probs.append(run(t))
            secondary.append(None)
            continue
        f = TF.focus(t)
        whole = TF.clean(t)
        p = run(f["primary"])
        text = f["primary"]
        top = int(p.argmax())
        if (labels[top] == "unknown" or p[top] < threshold) and whole != f["primary"]:
            p, text = run(whole), whole
        chosen.append(text)
        probs.append(p)
        sec = None
        if f["secondary"]:
            q = run(f["secondary"])
            k = int(q.argmax())
            intent = labels[int(p.argmax())] if p[int(p.argmax())] >= threshold else "unknown"
            if labels[k] != "unknown" and q[k] >= threshold and labels[k] != intent:
                sec = {"intent": labels[k], "confidence": float(q[k])}
        secondary.append(sec)
    return chosen, probs, secondary


def by_group(metrics, labels: list[str], ev: list[dict], gold: list[str], pred: list[str]) -> dict:
    out: dict = {"language": {}, "kind": {}}
    for axis, key, names in (("language", language, (*LANGUAGES, "other")), ("kind", kind, KINDS)):
        for name in names:
            ix = [i for i, e in enumerate(ev) if key(e) == name]
            if not ix:
                continue
            present = sorted({gold[i] for i in ix} | {pred[i] for i in ix}, key=labels.index)
            m = metrics(present, [gold[i] for i in ix], [pred[i] for i in ix])
            u = m["per_label"].get("unknown")
            out[axis][name] = {"n": len(ix), "macro_f1": m["macro_f1"], "accuracy": m["accuracy"], "labels_present": len(present),
                               "unknown_precision": u["precision"] if u else None, "unknown_recall": u["recall"] if u else None,
                               "errors": sum(1 for i in ix if pred[i] != gold[i])}
    return out


def secondary_summary(ev: list[dict], pred: list[str], secondary: list[dict | None]) -> dict:
    """Of the rows whose second intent is known (`second`), how many record it; how many injection rows
    record the injected instruction as a second ask; how many other rows record one (the rows written
    before issue 43 name no second intent, so these are not all wrong). Only recorded, never acted on."""
    marked = [i for i, e in enumerate(ev) if e.get("second")]
    inj = [i for i, e in enumerate(ev) if kind(e) == "injection"]
    return {"rows_with_second": len(marked), "second_recorded": sum(1 for i in marked if secondary[i] and secondary[i]["intent"] == ev[i]["second"]),
            "primary_right_of_those": sum(1 for i in marked if pred[i] == ev[i]["label"]),
            "injection_rows": len(inj), "injection_rows_recording_a_secondary": sum(1 for i in inj if secondary[i]),
            "other_rows_recording_a_secondary": sum(1 for i, e in enumerate(ev) if secondary[i] and not e.get("second") and kind(e) != "injection")}


def fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def groups_md(ev_report: dict) -> list[str]:
    g = ev_report.get("groups")
    if not g:
        return []
    L = ["## By language and by kind (issue 43)", "",
         "Routed predictions; macro-F1 over the labels present in the group. Targets per language: macro-F1 ≥ 0.95, precision and recall of `unknown` ≥ 0.9 (`other` is the off-domain tickets in further languages, all `unknown`).", "",
         "| group | examples | macro-F1 | accuracy | precision of `unknown` | recall of `unknown` | errors | targets |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for axis in ("language", "kind"):
        for name, m in g[axis].items():
            ok = ""
            if axis == "language" and name in LANGUAGES:
                met = m["macro_f1"] >= 0.95 and (m["unknown_precision"] or 0) >= 0.9 and (m["unknown_recall"] or 0) >= 0.9
                ok = "met" if met else "**missed**"
            L.append(f"| {axis} `{name}` | {m['n']} | {m['macro_f1']:.3f} | {m['accuracy']:.3f} | {fmt(m['unknown_precision'])} | {fmt(m['unknown_recall'])} | {m['errors']} | {ok} |")
    s = ev_report.get("secondary")
    if s:
        L += ["", f"Secondary intent (recorded with the route, never acted on): of {s['rows_with_second']} mixed tickets whose second ask is known, "
              f"{s['second_recorded']} record it and {s['primary_right_of_those']} route to the primary ask. {s['injection_rows_recording_a_secondary']} of {s['injection_rows']} injection tickets record "
              f"the injected instruction as a second ask (a note for a person; it never reaches the flow or the tools); {s['other_rows_recording_a_secondary']} other tickets record one "
              "(the rows written before issue 43 do not name their second ask)."]
    f = ev_report.get("pre_step")
    L += ["", f"Pre-step: `{f}` (models/ticket_focus.py)." if f else "Pre-step: none (MODELS_NO_FOCUS=1)."]
    return L + [""]
