"""Train, convert to ONNX and evaluate one of the small text classifiers.

    python3 models/train.py error-classifier      # or intent-router, or all
    bash models/train.sh error-classifier         # the same inside .infra/models-venv (made from requirements.txt)

For a task directory models/<task>/ this:
1. generates the training set with models/<task>/generate.py (seeded) into models/<task>/train.jsonl
   (not committed: it is regenerated bit-for-bit; its sha256 is in the report);
2. featurizes with models/featurize.py (the twin of features/text/);
3. fits a scikit-learn LogisticRegression (L2, lbfgs, multinomial) and writes it as an ONNX graph over
   the sparse features (inputs `indices` int32 [N, M] and `values` float32 [N, M]; outputs `label` int64
   [N] and `probabilities` float32 [N, K]) to models/<task>/model.onnx (see sparse_graph), plus its
   dense-input twin made by skl2onnx (model-dense.onnx, not committed, for the latency comparison);
4. evaluates the *ONNX file* with onnxruntime (one thread) on the hand-written held-out set
   models/<task>/eval.jsonl and writes labels.json, eval-report.json and eval-report.md.

Prediction rule (the Node classes use the same): predicted = argmax of `probabilities` (first on a tie),
confidence = that probability. For the intent router the routed intent is `unknown` when the
confidence is below the routing threshold (0.4); the report gives both the raw and the routed numbers.

Everything is seeded and single-threaded, so a re-run gives the same training set, the same
eval numbers and (on the same machine and package versions) the same model bytes.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

MODELS = Path(__file__).resolve().parent
sys.path.insert(0, str(MODELS))
import featurize as F  # noqa: E402
import routing_eval as RV  # noqa: E402
import ticket_focus as TF  # noqa: E402

TASKS = {
    "error-classifier": {
        "C": 100.0,
        "adoption_threshold": 0.95,
        "routing_threshold": None,
        "description": "Error-payload classifier for Observation: the kind of failure an API response body shows.",
    },
    "intent-router": {
        "C": 100.0,
        "adoption_threshold": 0.95,
        "routing_threshold": 0.4,
        "focus": True,  # the ticket-focus pre-step (models/ticket_focus.py; MODELS_NO_FOCUS=1 turns it off to measure it)
        "description": "Ticket intent router for Thought (English, Chinese, Japanese, Spanish, German).",
    },
}
MAX_ITER = 3000
OPSET = {"": 17, "ai.onnx.ml": 3}


def sha256_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def load_generator(task_dir: Path):
    spec = importlib.util.spec_from_file_location(f"generate_{task_dir.name.replace('-', '_')}", task_dir / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def read_jsonl(p: Path) -> list[dict]:
    with p.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def metrics(labels: list[str], gold: list[str], pred: list[str]) -> dict:
    """Per-label precision/recall/F1 (0 when undefined), macro-F1, accuracy, confusion matrix [gold][pred]."""
    idx = {l: i for i, l in enumerate(labels)}
    k = len(labels)
    cm = [[0] * k for _ in range(k)]
    for g_, p_ in zip(gold, pred):
        cm[idx[g_]][idx[p_]] += 1
    per = {}
    f1s = []
    for i, l in enumerate(labels):
        tp = cm[i][i]
        fp = sum(cm[r][i] for r in range(k)) - tp
        fn = sum(cm[i]) - tp
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per[l] = {"precision": prec, "recall": rec, "f1": f1, "support": tp + fn, "predicted": tp + fp}
        f1s.append(f1)
    correct = sum(1 for g_, p_ in zip(gold, pred) if g_ == p_)
    return {"per_label": per, "macro_f1": sum(f1s) / k, "accuracy": correct / len(gold) if gold else 0.0, "n": len(gold), "confusion": {"labels": labels, "matrix": cm}}


BIN_EDGES = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0000001]
SWEEP = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99]


def calibration(labels: list[str], gold: list[str], pred: list[str], conf: list[float], cfg: dict) -> dict:
    """Confidence against accuracy: reliability bins of the argmax confidence, the expected calibration
    error, and what each candidate threshold would give (adoption share/accuracy; for a router the routed
    macro-F1 and the precision of `unknown`)."""
    bins = []
    ece = 0.0
    n = len(gold)
    for lo, hi in zip(BIN_EDGES, BIN_EDGES[1:]):
        idx = [i for i in range(n) if lo <= conf[i] < hi]
        if not idx:
            bins.append({"lo": lo, "hi": min(hi, 1.0), "n": 0, "mean_confidence": None, "accuracy": None})
            continue
        mc = sum(conf[i] for i in idx) / len(idx)
        acc = sum(1 for i in idx if pred[i] == gold[i]) / len(idx)
        ece += len(idx) / n * abs(mc - acc)
        bins.append({"lo": lo, "hi": min(hi, 1.0), "n": len(idx), "mean_confidence": mc, "accuracy": acc})
    sweep = []
    for t in SWEEP:
        adopted = [i for i in range(n) if conf[i] >= t]
        row = {"threshold": t, "share": len(adopted) / n, "accuracy": (sum(1 for i in adopted if pred[i] == gold[i]) / len(adopted)) if adopted else None}
        if cfg["routing_threshold"] is not None:
            routed = [p if conf[i] >= t else "unknown" for i, p in enumerate(pred)]
            m = metrics(labels, gold, routed)
            row.update({"routed_macro_f1": m["macro_f1"], "unknown_precision": m["per_label"]["unknown"]["precision"], "min_recall": min(v["recall"] for v in m["per_label"].values())})
        sweep.append(row)
    return {"bins": bins, "ece": ece, "sweep": sweep}


def nearest_train_similarity(x_eval, x_train) -> list[float]:
    """Cosine similarity (vectors are unit length) of each eval example to its nearest training example."""
    sims = (x_eval @ x_train.T).toarray() if hasattr(x_eval, "toarray") else x_eval @ x_train.T
    return [float(v) for v in sims.max(axis=1)] if sims.shape[1] else [0.0] * sims.shape[0]


def sparse_input(text: str) -> dict:
    """The model's inputs for one text, as TextModel.predict builds them: the featurizer's sorted
    non-zero indices (int32 [1, M]) and values (float32 [1, M]); one (0, 0.0) pair when there are none."""
    idx, vals = F.featurize_sparse(text)
    if not idx:
        idx, vals = [0], [0.0]
    return {"indices": np.array([idx], dtype=np.int32), "values": np.array([vals], dtype=np.float32)}


def sparse_graph(clf, labels: list[str], task: str, cfg: dict):
    """The fitted multinomial LogisticRegression as an ONNX graph over a *sparse* input (issue 17):
    inputs `indices` int32 [N, M] and `values` float32 [N, M] (the non-zero features of each row, padded
    with value 0), logits = sum_m values[n, m] * W[indices[n, m], :] + b (Gather + Mul + ReduceSum),
    outputs `probabilities` = softmax(logits) float32 [N, K] and `label` = argmax int64 [N], as before.
    A row costs M x K multiply-adds (M ~ a few hundred) instead of the dense D x K (D = 16,384), and the
    caller sends ~2 x M numbers instead of a 64 KB vector."""
    from onnx import TensorProto, helper, numpy_helper

    coef = np.asarray(clf.coef_, dtype=np.float64)
    if coef.shape != (len(labels), F.DIMS):
        raise SystemExit(f"{task}: expected a multinomial model with coef_ [{len(labels)}, {F.DIMS}], got {list(coef.shape)}")
    w = numpy_helper.from_array(np.ascontiguousarray(coef.T.astype(np.float32)), "W")
    b = numpy_helper.from_array(np.asarray(clf.intercept_, dtype=np.float32), "b")
    axis_rows = numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_rows")
    axis_last = numpy_helper.from_array(np.array([2], dtype=np.int64), "axis_last")
    nodes = [
        helper.make_node("Gather", ["W", "indices"], ["rows"], axis=0),
        helper.make_node("Unsqueeze", ["values", "axis_last"], ["values3"]),
        helper.make_node("Mul", ["rows", "values3"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axis_rows"], ["dot"], keepdims=0),
        helper.make_node("Add", ["dot", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
        helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        task.replace("-", "_"),
        [helper.make_tensor_value_info("indices", TensorProto.INT32, ["N", "M"]), helper.make_tensor_value_info("values", TensorProto.FLOAT, ["N", "M"])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]), helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", len(labels)])],
        initializer=[w, b, axis_rows, axis_last],
    )
    onx = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET[""])], producer_name="tao-kafka models/train.py")
    onx.ir_version = 8
    onx.doc_string = (f"{task}: {cfg['description']} Input: featurizer {F.FEATURIZER_VERSION} non-zero features of each row "
                      f"(indices int32 [N, M] into {F.DIMS} dims, values float32 [N, M]). Labels: {', '.join(labels)}.")
    return onx


def train_task(task: str) -> dict:
    import onnx
    import onnxruntime as ort
    import scipy
    import skl2onnx
    import sklearn
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LogisticRegression

    cfg = TASKS[task]
    task_dir = MODELS / task
    gen = load_generator(task_dir)
    labels: list[str] = list(gen.LABELS)
    seed: int = gen.DEFAULT_SEED

    t0 = time.perf_counter()
    rows = gen.generate(seed)
    train_path = task_dir / "train.jsonl"
    with train_path.open("w", encoding="utf-8") as f:
        for text, label in rows:
            f.write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
    t_gen = time.perf_counter() - t0

    texts = [t for t, _ in rows]
    focus = bool(cfg.get("focus")) and RV.focus_enabled()
    fit_texts = [RV.training_text(t) for t in texts] if focus else texts
    y = np.array([labels.index(l) for _, l in rows], dtype=np.int64)
    t1 = time.perf_counter()
    x_train = F.featurize_matrix(fit_texts)
    t_feat = time.perf_counter() - t1

    t2 = time.perf_counter()
    clf = LogisticRegression(C=cfg["C"], max_iter=MAX_ITER, solver="lbfgs", tol=1e-6)
    clf.fit(x_train, y)
    t_fit = time.perf_counter() - t2
    train_acc = float((clf.predict(x_train) == y).mean())

    onx = sparse_graph(clf, labels, task, cfg)
    for key, value in (("labels", json.dumps(labels)), ("featurizer", json.dumps(F.CONFIG, sort_keys=True))):
        p = onx.metadata_props.add()
        p.key, p.value = key, value
    model_path = task_dir / "model.onnx"
    model_path.write_bytes(onx.SerializeToString())
    model_sha = sha256_file(model_path)
    # The dense-input twin (same weights, input `features` [N, D], the graph before issue 17): not
    # committed (models/.gitignore); bench/models-latency.ts times it beside model.onnx in the same run.
    dense = convert_sklearn(clf, initial_types=[("features", FloatTensorType([None, F.DIMS]))], options={id(clf): {"zipmap": False}}, target_opset=OPSET)
    dense.graph.name = task.replace("-", "_") + "_dense"
    (task_dir / "model-dense.onnx").write_bytes(dense.SerializeToString())
    t_total_train = time.perf_counter() - t0

    # ---- evaluate the ONNX file itself
    ev = read_jsonl(task_dir / "eval.jsonl")
    for e in ev:
        if e["label"] not in labels:
            raise SystemExit(f"eval.jsonl: unknown label {e['label']!r}")
    ev_texts = [e["text"] for e in ev]
    gold = [e["label"] for e in ev]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    # One row per run, as the Node classes do: onnxruntime takes a different (GEMV vs GEMM) path for a
    # single row than for a batch, which changes the last bits of the probabilities.
    label_rows = []

    def run_row(t: str):
        lo, po = sess.run(out_names, sparse_input(t))
        label_rows.append((int(lo[0]), int(po[0].argmax())))
        return po[0]

    secondary = None
    if focus:
        # As IntentRouter.route: the pre-step's primary part, the cleaned whole text when that is unknown.
        chosen, prob_rows, secondary = RV.route_rows(run_row, ev_texts, labels, cfg["routing_threshold"])
    else:
        chosen, prob_rows = ev_texts, [run_row(t) for t in ev_texts]
    x_eval_sparse = F.featurize_matrix(chosen)
    probs = np.asarray(prob_rows, dtype=np.float32)
    # The graph must compute what the fitted model does (the sum runs in another order: float32 noise only).
    max_dev = float(np.abs(probs - clf.predict_proba(x_eval_sparse)).max())
    if max_dev > 1e-4:
        raise SystemExit(f"{task}: model.onnx deviates from the fitted model by {max_dev:.2e} in probability")
    top = probs.argmax(axis=1)
    conf = probs[np.arange(len(top)), top]
    raw_pred = [labels[i] for i in top]
    if not all(a == b for a, b in label_rows):
        print("warning: ONNX label output differs from argmax(probabilities) on some rows", file=sys.stderr)

    raw = metrics(labels, gold, raw_pred)
    report: dict = {
        "task": task,
        "description": cfg["description"],
        "model": {"file": "model.onnx", "sha256": model_sha, "id": f"{task}@{model_sha[:12]}", "bytes": model_path.stat().st_size, "inputs": [i.name for i in sess.get_inputs()], "outputs": out_names, "opset": OPSET, "max_probability_deviation_from_sklearn": max_dev},
        "featurizer": F.CONFIG,
        "labels": labels,
        "training": {
            "generator": f"models/{task}/generate.py",
            "seed": seed,
            "examples": len(rows),
            "per_label": {l: int((y == i).sum()) for i, l in enumerate(labels)},
            "train_jsonl_sha256": sha256_file(train_path),
            "estimator": "sklearn.linear_model.LogisticRegression",
            "params": {"C": cfg["C"], "penalty": "l2", "solver": "lbfgs", "max_iter": MAX_ITER, "tol": 1e-6},
            "iterations": int(np.max(clf.n_iter_)),
            "train_accuracy": train_acc,
            "seconds": {"generate": round(t_gen, 2), "featurize": round(t_feat, 2), "fit": round(t_fit, 2), "total_to_onnx": round(t_total_train, 2)},
        },
        "eval": {
            "file": "eval.jsonl",
            "sha256": sha256_file(task_dir / "eval.jsonl"),
            "n": len(ev),
            "raw": raw,
        },
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__, "skl2onnx": skl2onnx.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__},
    }

    thr = cfg["adoption_threshold"]
    adopted = [i for i in range(len(ev)) if conf[i] >= thr]
    report["eval"]["adoption"] = {
        "threshold": thr,
        "share": len(adopted) / len(ev),
        "count": len(adopted),
        "accuracy": (sum(1 for i in adopted if raw_pred[i] == gold[i]) / len(adopted)) if adopted else None,
    }
    final_pred = raw_pred
    if cfg["routing_threshold"] is not None:
        rt = cfg["routing_threshold"]
        routed = [p if conf[i] >= rt else "unknown" for i, p in enumerate(raw_pred)]
        report["eval"]["routed"] = {"threshold": rt, **metrics(labels, gold, routed)}
        final_pred = routed
    # The held-out set grew in rounds written apart from each other (`set`; rows without one are the
    # first two rounds): each round scored alone shows whether the older, much-scored rows flatter.
    subsets: dict = {}
    for name in sorted({e.get("set", "r1-r2") for e in ev}):
        ix = [i for i, e in enumerate(ev) if e.get("set", "r1-r2") == name]
        present = sorted({gold[i] for i in ix} | {final_pred[i] for i in ix}, key=labels.index)
        m = metrics(present, [gold[i] for i in ix], [final_pred[i] for i in ix])
        subsets[name] = {"n": len(ix), "macro_f1_over_present_labels": m["macro_f1"], "accuracy": m["accuracy"],
                         "unknown_precision": m["per_label"]["unknown"]["precision"] if "unknown" in m["per_label"] else None, "errors": sum(1 for i in ix if final_pred[i] != gold[i])}
    report["eval"]["subsets"] = subsets
    if cfg["routing_threshold"] is not None:
        report["eval"]["groups"] = RV.by_group(metrics, labels, ev, gold, final_pred)
        report["eval"]["pre_step"] = TF.FOCUS_VERSION if focus else None
        if secondary is not None:
            report["eval"]["secondary"] = RV.secondary_summary(ev, final_pred, secondary)
    report["eval"]["calibration"] = calibration(labels, gold, raw_pred, [float(c) for c in conf], cfg)
    report["eval"]["primary"] = "routed" if cfg["routing_threshold"] is not None else "raw"
    report["eval"]["macro_f1"] = report["eval"]["routed" if cfg["routing_threshold"] is not None else "raw"]["macro_f1"]

    # ---- how far is the held-out set from the training set?
    sims = nearest_train_similarity(x_eval_sparse, x_train)
    exact = sum(1 for t in ev_texts if t in set(texts))
    norm_train = {F.normalize(t) for t in texts}
    exact_norm = sum(1 for t in ev_texts if F.normalize(t) in norm_train)
    s_sorted = sorted(sims)
    report["eval"]["overlap_with_training"] = {
        "exact_duplicates": exact,
        "normalized_duplicates": exact_norm,
        "nearest_cosine_median": s_sorted[len(s_sorted) // 2],
        "nearest_cosine_p90": s_sorted[int(len(s_sorted) * 0.9)],
        "share_nearest_cosine_ge_0_9": sum(1 for s in sims if s >= 0.9) / len(sims),
        "share_nearest_cosine_ge_0_8": sum(1 for s in sims if s >= 0.8) / len(sims),
    }
    report["eval"]["errors"] = [
        {"text": ev_texts[i][:200], "gold": gold[i], "predicted": final_pred[i], "raw": raw_pred[i], "confidence": round(float(conf[i]), 4), "source": ev[i].get("source") or ev[i].get("lang", "")}
        for i in range(len(ev)) if final_pred[i] != gold[i]
    ]
    report["eval"]["predictions_sha256"] = hashlib.sha256(json.dumps([[p, round(float(c), 6)] for p, c in zip(raw_pred, conf)]).encode()).hexdigest()

    labels_json = {"task": task, "labels": labels, "featurizer": F.CONFIG, "model_sha256": model_sha, "adoption_threshold": thr}
    if cfg["routing_threshold"] is not None:
        labels_json["routing_threshold"] = cfg["routing_threshold"]
        labels_json["pre_step"] = TF.FOCUS_VERSION if focus else None
    (task_dir / "labels.json").write_text(json.dumps(labels_json, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (task_dir / "eval-report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    render_md(task_dir)
    return report


def fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def metrics_table(m: dict, labels: list[str]) -> list[str]:
    lines = ["| label | precision | recall | F1 | support | predicted |", "|---|---:|---:|---:|---:|---:|"]
    for l in labels:
        p = m["per_label"][l]
        lines.append(f"| `{l}` | {fmt(p['precision'])} | {fmt(p['recall'])} | {fmt(p['f1'])} | {p['support']} | {p['predicted']} |")
    lines.append(f"| **macro** | | | **{m['macro_f1']:.3f}** | {m['n']} | accuracy {m['accuracy']:.3f} |")
    return lines


def confusion_table(m: dict) -> list[str]:
    labels = m["confusion"]["labels"]
    short = [l.replace("_", "\u200b_") for l in labels]
    lines = ["| gold \\ predicted | " + " | ".join(short) + " |", "|---|" + "---:|" * len(labels)]
    for l, row in zip(short, m["confusion"]["matrix"]):
        lines.append(f"| {l} | " + " | ".join(str(v) if v else "·" for v in row) + " |")
    return lines


def latency_section(task: str) -> list[str]:
    p = MODELS / "latency-report.json"
    out = ["<!-- latency:start -->", "## Inference latency (Node, onnxruntime-node, CPU, 1 thread)", ""]
    if not p.exists():
        out.append("Not measured yet: run `node --import tsx bench/models-latency.ts`.")
    else:
        lat = json.loads(p.read_text(encoding="utf-8"))
        t = lat.get("tasks", {}).get(task)
        if not t:
            out.append("Not measured yet: run `node --import tsx bench/models-latency.ts`.")
        else:
            m = lat.get("machine", {})
            load = ""
            if m.get("load_average_1_5_15_before"):
                load = (f" Load average (1/5/15 min) {' / '.join(str(x) for x in m['load_average_1_5_15_before'])} before, {' / '.join(str(x) for x in m.get('load_average_1_5_15_after', []))} after: "
                        "wall-clock tails include waiting for a core; `CPU time` rows are what a call costs (process.cpuUsage, µs resolution).")
            # the same sentence bench/models-latency.ts writes, so re-rendering leaves the section as it was
            out.append(f"From `models/latency-report.json` ({lat.get('measured_at', '?')}, {m.get('cpus', '?')} × {m.get('cpu_model', '?')}, Node {m.get('node', '?')}, model `{t.get('model', '?')}`), per call over the eval set after warm-up." + load)
            out.append("")
            out.append("| call | calls | P50 ms | P99 ms | mean ms | max ms |")
            out.append("|---|---:|---:|---:|---:|---:|")
            for name, s in t.get("calls", {}).items():
                out.append(f"| `{name}` | {s['n']} | {s['p50_ms']:.3f} | {s['p99_ms']:.3f} | {s['mean_ms']:.3f} | {s['max_ms']:.3f} |")
    out.append("<!-- latency:end -->")
    return out


def calibration_md(r: dict) -> list[str]:
    c = r["eval"].get("calibration")
    if not c:
        return []
    L = ["## Calibration: confidence against accuracy", "", f"Reliability bins of the model's top probability on the held-out set (argmax, before any threshold); expected calibration error {c['ece']:.3f}.", "",
         "| confidence | examples | mean confidence | accuracy |", "|---|---:|---:|---:|"]
    for b in c["bins"]:
        L.append(f"| [{b['lo']:.2f}, {b['hi']:.2f}{']' if b['hi'] >= 1.0 else ')'} | {b['n']} | {fmt(b['mean_confidence'])} | {fmt(b['accuracy'])} |")
    routed = "routed_macro_f1" in c["sweep"][0]
    L += ["", "What each threshold would give:", ""]
    if routed:
        L += ["| threshold | share ≥ threshold | accuracy there | routed macro-F1 | precision of `unknown` | lowest recall |", "|---:|---:|---:|---:|---:|---:|"]
        for s in c["sweep"]:
            L.append(f"| {s['threshold']:.2f} | {s['share']:.1%} | {fmt(s['accuracy'])} | {s['routed_macro_f1']:.3f} | {s['unknown_precision']:.3f} | {s['min_recall']:.3f} |")
    else:
        L += ["| threshold | share adopted | accuracy of the adopted |", "|---:|---:|---:|"]
        for s in c["sweep"]:
            L.append(f"| {s['threshold']:.2f} | {s['share']:.1%} | {fmt(s['accuracy'])} |")
    L += ["", *threshold_reading(r, c, routed)]
    return L


def threshold_reading(r: dict, c: dict, routed: bool) -> list[str]:
    """One paragraph, computed from the sweep: what the configured threshold buys on this set."""
    sweep = {s["threshold"]: s for s in c["sweep"]}
    if routed:
        t = r["eval"]["routed"]["threshold"]
        best = max(c["sweep"], key=lambda s: (s["routed_macro_f1"], -s["threshold"]))
        ok = [s["threshold"] for s in c["sweep"] if s["unknown_precision"] >= 0.9 and s["min_recall"] >= 0.9]
        here = sweep.get(t)
        if not here:
            return []
        return [f"Reading: routing threshold {t}: routed macro-F1 {here['routed_macro_f1']:.3f}, precision of `unknown` {here['unknown_precision']:.3f}, lowest recall {here['min_recall']:.3f}. "
                f"The best routed macro-F1 in the sweep is {best['routed_macro_f1']:.3f} at {best['threshold']}; thresholds meeting both `unknown` precision ≥ 0.9 and every recall ≥ 0.9: {', '.join(str(x) for x in ok) or 'none'}. "
                "A higher threshold sends in-domain tickets to `unknown` (its precision falls fast), a lower one lets off-domain tickets through; the router planner asks for the intent's missing id anyway, so a wrong `unknown` costs more than a low-confidence route."]
    t = r["eval"]["adoption"]["threshold"]
    here = sweep.get(t)
    if not here or here["accuracy"] is None:
        return []
    first99 = next((s["threshold"] for s in c["sweep"] if s["accuracy"] is not None and s["accuracy"] >= 0.99), None)
    return [f"Reading: adoption threshold {t}: {here['share']:.1%} of the held-out bodies are adopted, {here['accuracy']:.3f} of them correctly. "
            f"The lowest threshold in the sweep whose adopted labels are ≥ 0.99 accurate is {first99}; below it accuracy falls towards the raw argmax's {r['eval']['raw']['accuracy']:.3f}. "
            "An adopted label overrides Observation's hard checks, so a wrong adoption costs more than a fallback to them: the threshold stays on the high side of that point."]


def requirements_md(r: dict) -> list[str]:
    ev = r["eval"]
    m = ev[ev["primary"]]
    per = m["per_label"]
    low = min(per, key=lambda l: per[l]["recall"])
    checks = [
        (f"macro-F1 ({ev['primary']}) ≥ 0.95", m["macro_f1"] >= 0.95, f"{m['macro_f1']:.3f}"),
        ("recall ≥ 0.9 for every label", all(v["recall"] >= 0.9 for v in per.values()), f"lowest: `{low}` {per[low]['recall']:.3f}"),
    ]
    if "unknown" in per:
        checks.append(("precision of `unknown` ≥ 0.9", per["unknown"]["precision"] >= 0.9, f"{per['unknown']['precision']:.3f}"))
    L = ["## Targets (issue 15) on this held-out set", "", "| target | met | value |", "|---|---|---|"]
    L += [f"| {name} | {'yes' if ok else '**no**'} | {v} |" for name, ok, v in checks]
    return L + [""]


def render_md(task_dir: Path) -> None:
    r = json.loads((task_dir / "eval-report.json").read_text(encoding="utf-8"))
    task, labels, ev, tr = r["task"], r["labels"], r["eval"], r["training"]
    L: list[str] = [f"# {task}: evaluation report", "", r["description"], ""]
    L += [
        f"- model: `{r['model']['id']}` ({r['model']['bytes']:,} bytes, sha256 `{r['model']['sha256']}`)",
        f"- featurizer: `{r['featurizer']['name']}` ({r['featurizer']['dims']} dims, char {r['featurizer']['char_ngrams'][0]}–{r['featurizer']['char_ngrams'][1]}-grams + word uni/bigrams, FNV-1a, inputs truncated to {r['featurizer']['max_input_code_points']} code points)",
        f"- training: {tr['examples']} generated examples (seed {tr['seed']}, `{tr['generator']}`, train.jsonl sha256 `{tr['train_jsonl_sha256'][:16]}…`), LogisticRegression C={tr['params']['C']}, {tr['iterations']} lbfgs iterations, train accuracy {tr['train_accuracy']:.4f}",
        f"- training time: {tr['seconds']['total_to_onnx']} s in total (generate {tr['seconds']['generate']} s, featurize {tr['seconds']['featurize']} s, fit {tr['seconds']['fit']} s)",
        f"- held-out eval: `{ev['file']}`, {ev['n']} hand-written examples (sha256 `{ev['sha256'][:16]}…`), evaluated by running `model.onnx` in onnxruntime {r['versions']['onnxruntime']}",
        f"- reproduce: `bash models/train.sh {task}` (or `python3 models/train.py {task}` with models/requirements.txt installed)",
        "",
        f"**Macro-F1 ({ev['primary']}): {ev['macro_f1']:.4f}**",
        "",
    ]
    L += requirements_md(r)
    if "routed" in ev:
        L += [f"## Routed (intent `unknown` when confidence < {ev['routed']['threshold']}), what `IntentRouter.route` returns", ""]
        L += metrics_table(ev["routed"], labels) + [""]
        L += ["## Raw argmax (no threshold)", ""]
        L += metrics_table(ev["raw"], labels) + [""]
    else:
        L += ["## Per label (argmax), what `ErrorClassifier.classify` returns", ""]
        L += metrics_table(ev["raw"], labels) + [""]
    a = ev["adoption"]
    L += [
        f"## Confidence adoption threshold {a['threshold']}",
        "",
        f"{a['count']} of {ev['n']} eval examples ({a['share']:.1%}) have confidence ≥ {a['threshold']}; accuracy on those: {fmt(a['accuracy'])}. Below the threshold a caller should not adopt the label (Observation falls back to its hard checks).",
        "",
        "## Confusion matrix (" + ev["primary"] + ")",
        "",
    ]
    L += confusion_table(ev[ev["primary"]]) + [""]
    if ev.get("subsets"):
        L += ["## By round of the held-out set", "", "Each round was written apart from the generators and from the other rounds (models/README.md says how); rows without a `set` are rounds 1–2.", "",
              "| set | examples | macro-F1 (labels present) | accuracy | precision of `unknown` | errors |", "|---|---:|---:|---:|---:|---:|"]
        for name, m in ev["subsets"].items():
            L.append(f"| {name} | {m['n']} | {m['macro_f1_over_present_labels']:.3f} | {m['accuracy']:.3f} | {fmt(m['unknown_precision'])} | {m['errors']} |")
        L.append("")
    L += RV.groups_md(ev)
    L += calibration_md(r) + [""]
    o = ev["overlap_with_training"]
    L += [
        "## Distance of the held-out set from the training set",
        "",
        f"Exact duplicates of training texts: {o['exact_duplicates']} (after normalization: {o['normalized_duplicates']}). Cosine similarity of each eval example to its nearest training example (same featurizer): median {o['nearest_cosine_median']:.3f}, p90 {o['nearest_cosine_p90']:.3f}; {o['share_nearest_cosine_ge_0_8']:.1%} ≥ 0.8, {o['share_nearest_cosine_ge_0_9']:.1%} ≥ 0.9.",
        "",
        f"## Misclassified eval examples ({len(ev['errors'])})",
        "",
    ]
    if ev["errors"]:
        L += ["| gold | predicted | confidence | source | text |", "|---|---|---:|---|---|"]
        for e in ev["errors"]:
            t = e["text"].replace("|", "\\|").replace("\n", "⏎").replace("\r", "")
            if len(t) > 110:
                t = t[:110] + "…"
            L.append(f"| `{e['gold']}` | `{e['predicted']}` | {e['confidence']:.3f} | {e['source']} | {t} |")
        L.append("")
    L += latency_section(task)
    L += ["", "## Versions", "", ", ".join(f"{k} {v}" for k, v in r["versions"].items()), ""]
    (task_dir / "eval-report.md").write_text("\n".join(L), encoding="utf-8")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "render":
        for task in (argv[1:] or list(TASKS)):
            render_md(MODELS / task)
        return 0
    tasks = list(TASKS) if argv[0] == "all" else argv
    for task in tasks:
        if task not in TASKS:
            print(f"unknown task {task!r}; one of: {', '.join(TASKS)}, all", file=sys.stderr)
            return 2
        r = train_task(task)
        ev = r["eval"]
        print(f"{task}: {r['training']['examples']} training examples, model {r['model']['id']} ({r['model']['bytes']} bytes), "
              f"eval n={ev['n']} macro-F1({ev['primary']})={ev['macro_f1']:.4f} accuracy(raw)={ev['raw']['accuracy']:.4f}, "
              f"≥{ev['adoption']['threshold']}: {ev['adoption']['share']:.1%} (accuracy {fmt(ev['adoption']['accuracy'])}), "
              f"{r['training']['seconds']['total_to_onnx']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
