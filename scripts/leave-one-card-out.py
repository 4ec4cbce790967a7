#!/usr/bin/env python3
"""Leave-one-card-out check of the public corpus (issue 24: the what-if for unbought hardware).

For each catalogue card with simulated rows in configs/validation/public-corpus.yaml, every
catalogue parameter CALIBRATED on a figure measured on that card is refitted on the same kind of
figure measured on another card (the ALTERNATES below, each from the same source table where
one has it), in a copy of the catalogue; then the corpus is simulated with that copy and the
card's rows are scored, every role included (a row that calibrated something on the card is a
prediction once its parameter comes from another card). A parameter with no figure on another
card is KEPT and said so: that card's error is then not independent of its own rows.

Parameters of the host rather than the card (hybrid-cpu-experts' cpu_expert_bytes_per_flop and
cpu_matrix_efficiency, calibrated on the kTransformers rig of an RTX 4090D and a Xeon Gold
6454S) are kept: the what-if replaces the card, not the host; the rows that calibrated them stay
calibration rows.

Nothing here changes the catalogue. Output: one table, median |predicted / measured - 1| by kind,
next to validate's own per-card figures (prediction rows, catalogue as it is).

usage: scripts/leave-one-card-out.py [path/to/vramsim]   (default build/bin/vramsim; ~2 min)
"""
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KINDS = ["decode", "prefill", "offload", "serving", "multi-card"]

# One calibrated scalar: where its value is written (an engine preset's top-level key, or
# `engine.KEY=VALUE` in the datasets' run sets), the card and row it was calibrated on, and the
# row on another card that refits it (None: no such figure; `why` says so).
PARAMETERS = [
    dict(key="dequant_gemm_efficiency", where="run-set", unit="", card="rtx-3080",
         row=("public-corpus", "[xd] 3080 10GB, Llama 3 8B Q4_K_M pp512"),
         alternate=("public-corpus", "[xd] 4080 16GB, Llama 3 8B Q4_K_M pp512")),
    dict(key="gpu_compute_efficiency", where="llama.cpp", unit="", card="rtx-3090",
         row=("community", "RTX 3090, llama 8B Q6_K pp2048"),
         alternate=("community", "RTX 4090, llama 8B Q5_0 pp2048")),  # the same table, PR 8062
    dict(key="matvec_compute_efficiency", where="llama.cpp", unit="", card="rtx-3090",
         row=("community", "RTX 3090, llama 8B Q4_0, ub 8 pp512"), alternate=None,
         why="no other card's dense micro-batch of 2-8 quantized tokens is in the datasets"),
    dict(key="gemm_half_rows", where="llama.cpp", unit="", card="rtx-4090",
         row=("PR 7860", "RTX 4090 micro-batch sweep"), alternate=None,
         why="the micro-batch sweeps it is fitted to (PRs 7860, 8062) are RTX 4090 columns only"),
    dict(key="moe_layer_sync", where="llama.cpp", unit="us", card="rtx-4090", floor=0.0,
         row=("community", "RTX 4090, gpt-oss-20b MXFP4 tg128"),
         alternate=("community", "RTX 5090, gpt-oss-20b MXFP4 tg128")),
    dict(key="quantized_gemm_efficiency", where="vllm", unit="", card="h100-sxm",
         row=("public-corpus", "[gs] H100 SXM, vLLM v0.11.0, gpt-oss-20b, 500 at once, 4000 in / 105 out, output tok/s"),
         alternate=("public-corpus", "[gs] A100 80GB SXM, vLLM v0.11.0, gpt-oss-20b, 500 at once, 4000 in / 107 out, output tok/s")),
]
# The llama.cpp preset's decode fit (two parameters, scripts/fit-llama-cpp-decode.py) spans four
# cards: without one of them it is refitted on the other three's rows.
DECODE_FIT_CARDS = {"rtx-3080", "rtx-4080", "rtx-3090", "rtx-4090"}
# Calibration rows of host parameters (kept; see above): they stay out of every card's score.
HOST_CALIBRATION_ROWS = {
    "[kt] V0.2 one socket, DeepSeek-V3 Q4_K_M, 8 experts, decode",
    "[kt] V0.2 one socket, DeepSeek-V3 Q4_K_M, 8 experts, prefill 500",
}


def load_fit_module():
    spec = importlib.util.spec_from_file_location("fit_decode", os.path.join(HERE, "fit-llama-cpp-decode.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate(vramsim, configs, dataset):
    """`vramsim validate DATASET --json` against the catalogue at `configs`; its parsed output."""
    out = subprocess.run([vramsim, "validate", dataset, "--configs", configs, "--json"], capture_output=True, text=True)
    if out.returncode not in (0, 1) or not out.stdout.strip():
        sys.exit(f"vramsim validate {dataset} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def number(value):
    return f"{value:.4g}"


def write_parameter(configs, p, value):
    """Writes `value` for parameter p into the catalogue copy at `configs`."""
    text = number(value) + p["unit"]
    if p["where"] == "run-set":
        folder = os.path.join(configs, "validation")
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            with open(path) as f:
                s = f.read()
            t = re.sub(rf"engine\.{p['key']}=[^,\]\s]+", f"engine.{p['key']}={text}", s)
            if t != s:
                with open(path, "w") as f:
                    f.write(t)
        return
    path = os.path.join(configs, "engines", p["where"] + ".yaml")
    with open(path) as f:
        s = f.read()
    t, n = re.subn(rf"^{p['key']}:[ \t]*[^\s#]+", f"{p['key']}: {text}", s, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{path}: no top-level `{p['key']}:` to refit")
    with open(path, "w") as f:
        f.write(t)


def predict_row(vramsim, configs, dataset, case_name):
    """(predicted, measured) of one case of a dataset in the catalogue copy: a one-case dataset."""
    with open(os.path.join(configs, "validation", dataset + ".yaml")) as f:
        data = yaml.safe_load(f)
    case = next((c for c in data["cases"] if c["name"] == case_name), None)
    if case is None:
        sys.exit(f"{dataset}.yaml: no case named {case_name!r}")
    one = {"name": "refit", "source": "scripts/leave-one-card-out.py", "runs": {case["run"]: data["runs"][case["run"]]},
           "cases": [dict(case, role="calibration", tolerance="100%")]}
    for k in ("kind", "engine"):
        one["cases"][0].pop(k, None)
    path = os.path.join(configs, "refit.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(one, f)
    row = validate(vramsim, configs, path)["rows"][0]
    if row["predicted"] is None:
        sys.exit(f"{case_name}: no prediction")
    return row["predicted"], case["measured"]


def refit(vramsim, configs, p):
    """Secant search for the value at which p's alternate row is predicted as measured."""
    def g(x):
        write_parameter(configs, p, x)
        predicted, measured = predict_row(vramsim, configs, *p["alternate"])
        return predicted / measured - 1

    x0 = current_value(configs, p)
    x1 = x0 * 0.9 if x0 else 1.0  # downwards: an efficiency stays <= 1
    g0, g1 = g(x0), g(x1)
    for _ in range(12):
        if abs(g1) < 5e-4 or g1 == g0:
            break
        x2 = x1 - g1 * (x1 - x0) / (g1 - g0)
        if p["unit"] == "" and p["key"].endswith("efficiency"):
            x2 = min(x2, 1.0)
        if "floor" in p and x2 < p["floor"]:
            x2 = p["floor"]
            if x1 == x2:
                break
        x0, g0, x1 = x1, g1, x2
        g1 = g(x1)
    write_parameter(configs, p, x1)
    return x1, g1


def current_value(configs, p):
    if p["where"] == "run-set" and p.get("alternate"):
        with open(os.path.join(configs, "validation", p["alternate"][0] + ".yaml")) as f:
            m = re.search(rf"engine\.{p['key']}=([0-9.eE+-]+)", f.read())
    else:
        with open(os.path.join(configs, "engines", p["where"] + ".yaml")) as f:
            m = re.search(rf"^{p['key']}:[ \t]*([0-9.eE+-]+)", f.read(), flags=re.M)
    if not m:
        sys.exit(f"no value of {p['key']} found")
    return float(m.group(1))


def on_card(label, card):
    """Whether a row's card label ("rtx-3090", "2x rtx-3090", "a + b") includes `card`."""
    return card in re.split(r" \+ |\d+x ", label)


def score(rows, card, roles):
    errors = {k: [] for k in KINDS}
    for r in rows:
        if r.get("card") is None or not on_card(r["card"], card) or r["predicted"] is None or r["role"] not in roles:
            continue
        if r["name"] in HOST_CALIBRATION_ROWS:
            continue
        errors[r["kind"]].append(abs(r["predicted"] / r["measured"] - 1))
    every = [e for k in KINDS for e in errors[k]]
    return every, errors


def cell(errors):
    return f"{100 * statistics.median(errors):.1f}% ({len(errors)})" if errors else "-"


def main():
    vramsim = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "vramsim"))
    fit_module = load_fit_module()
    base = validate(vramsim, os.path.join(ROOT, "configs"), "public-corpus")
    cards = sorted({c for r in base["rows"] if r.get("card") for c in re.split(r" \+ |\d+x ", r["card"]) if c})
    print("Leave-one-card-out, public corpus: median |error| (rows) of each card's rows")
    print(f"{'card':16} {'catalogue':>13} {'held out':>13} " + " ".join(f"{k:>13}" for k in KINDS) + "  parameters")
    for card in cards:
        catalogue, _ = score(base["rows"], card, {"prediction"})
        moved, kept = [], [p["key"] + " (" + p["why"] + ")" for p in PARAMETERS if p["card"] == card and not p["alternate"]]
        if card in DECODE_FIT_CARDS or any(p["card"] == card and p["alternate"] for p in PARAMETERS):
            with tempfile.TemporaryDirectory() as tmp:
                configs = os.path.join(tmp, "configs")
                shutil.copytree(os.path.join(ROOT, "configs"), configs)
                if card in DECODE_FIT_CARDS:
                    rows = [r for r in fit_module.ROWS if r[0] != card]
                    # The fit's two parameters: a share of the bandwidth and a per-layer cost in SM
                    # cycles (scripts/fit-llama-cpp-decode.py).
                    share = dict(key="gpu_bandwidth_efficiency", where="llama.cpp", unit="")
                    cycles = dict(key="layer_launch_cycles", where="llama.cpp", unit="")
                    share_before, cycles_before = current_value(configs, share), current_value(configs, cycles)
                    efficiency, layer_cycles, _, _ = fit_module.fit(vramsim, configs, rows)
                    write_parameter(configs, share, efficiency)
                    write_parameter(configs, cycles, round(layer_cycles))
                    moved.append(f"gpu_bandwidth_efficiency {number(share_before)} -> {number(efficiency)}, layer_launch_cycles "
                                 f"{round(cycles_before)} -> {round(layer_cycles)} (decode fit without {card}: {len(rows)} rows)")
                for p in PARAMETERS:
                    if p["card"] != card or not p["alternate"]:
                        continue
                    before = current_value(configs, p)
                    value, residual = refit(vramsim, configs, p)
                    moved.append(f"{p['key']} {number(before)} -> {number(value)}{p['unit']} (on {p['alternate'][1]!r}, "
                                 f"{100 * residual:+.1f}%)")
                held = validate(vramsim, configs, "public-corpus")["rows"]
        else:
            held = base["rows"]
        every, by_kind = score(held, card, {"prediction", "calibration"})
        print(f"{card:16} {cell(catalogue):>13} {cell(every):>13} " + " ".join(f"{cell(by_kind[k]):>13}" for k in KINDS) +
              "  " + ("; ".join(moved) if moved else "none calibrated on this card"))
        for k in kept:
            print(f"{'':16} kept: {k}")


if __name__ == "__main__":
    main()
