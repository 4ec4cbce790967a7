#!/usr/bin/env python3
"""Fits the llama.cpp preset's decode parameters to one published table of llama-bench runs.

A decode step of a dense model with every layer on one GPU takes
    t = bytes read / (bandwidth x gpu_bandwidth_efficiency) + layers x layer_launch_cycles / clock
(configs/engines/llama.cpp.yaml): the per-layer cost is latency-bound kernels, counted in SM
cycles at the card's boost clock (compute.boost_clock of configs/gpus/). The simulator itself
gives the bytes term: each row is run with gpu_bandwidth_efficiency=1 and layer_launch=0, and
the measured step times are then regressed on it and on layers / clock (least squares through
the origin, two parameters, seven rows):
    1 / measured tok/s = (1 / efficiency) x simulated bytes time + cycles x layers / clock.
--constant fits the older form, one layer_launch in seconds for every card (0.948, 92.6 us;
residual rms 4.1% against 3.9%: these rows do not tell the two apart).

Source: XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README, "LLaMA 3" NVIDIA table (snapshots
of May 2024; llama-bench, one GPU, -ngl 10000): tg 512 in tok/s, Llama 3 8B (the catalogue's
llama-3.1-8b has its shapes). llama-bench allocates a context of its test's length, so the
runs use a 1,024-token context (the F16 model on the 16 GB RTX 4080 would not fit 4,096).

usage: scripts/fit-llama-cpp-decode.py [path/to/vramsim]   (default build/bin/vramsim)
"""
import json
import os
import re
import subprocess
import sys

VRAMSIM = sys.argv[1] if len(sys.argv) > 1 else "build/bin/vramsim"
LAYERS = 32
ROWS = [  # (catalogue GPU, weights format, measured tg 512 in tok/s)
    ("rtx-3080", "Q4_K_M", 109.57),
    ("rtx-4080", "Q4_K_M", 108.15),
    ("rtx-4080", "F16", 40.58),
    ("rtx-3090", "Q4_K_M", 115.42),
    ("rtx-3090", "F16", 47.40),
    ("rtx-4090", "Q4_K_M", 130.58),
    ("rtx-4090", "F16", 54.84),
]


def step_ms(vramsim, configs, gpu, quant, *sets):
    cmd = [vramsim, "run", "--model", "llama-3.1-8b", "--gpu", gpu, "--quant", quant, "--context", "1024",
           "--set", "workload.requests=1", "--set", "workload.prompt_tokens=1", "--set", "workload.gen_tokens=512",
           "--set", "engine.vram_rule=engine", "--json"]
    if configs:
        cmd += ["--configs", configs]
    for s in sets:
        cmd += ["--set", s]
    d = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return 1e3 / d["decode_tok_s"]["p50"]


def boost_clock_ghz(gpu, configs=None):
    """The card's compute.boost_clock (configs/gpus/GPU.yaml), in GHz."""
    root = configs or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")
    with open(os.path.join(root, "gpus", gpu + ".yaml")) as f:
        m = re.search(r"^\s+boost_clock:\s*([0-9.]+)\s*(MHz|GHz)", f.read(), re.M)
    return float(m.group(1)) / (1e3 if m.group(2) == "MHz" else 1.0)


def lstsq2(a, b, y):
    """y = p a + q b, least squares through the origin."""
    saa, sbb, sab = sum(v * v for v in a), sum(v * v for v in b), sum(u * v for u, v in zip(a, b))
    say, sby = sum(u * v for u, v in zip(a, y)), sum(u * v for u, v in zip(b, y))
    det = saa * sbb - sab * sab
    return (say * sbb - sby * sab) / det, (sby * saa - say * sab) / det


def fit(vramsim, configs=None, rows=ROWS, constant=False):
    """Least squares over `rows`; returns (gpu_bandwidth_efficiency, per-layer cost, bytes ms per row, per-layer regressor):
    the cost in cycles (regressor layers / clock in GHz, ms) or, `constant`, in us (regressor layers)."""
    x = [step_ms(vramsim, configs, g, q, "engine.gpu_bandwidth_efficiency=1", "engine.layer_launch=0s") for g, q, _ in rows]
    y = [1e3 / m for _, _, m in rows]
    z = [LAYERS * (1.0 if constant else 1.0 / boost_clock_ghz(g, configs)) for g, _, _ in rows]
    p, q = lstsq2(x, z, y)  # q: ms per layer (constant) or ms x GHz = 1e6 cycles per layer
    return 1 / p, (1e3 * q if constant else 1e6 * q), x, z


def main():
    args = [a for a in sys.argv[1:] if a != "--constant"]
    constant = "--constant" in sys.argv[1:]
    vramsim = args[0] if args else "build/bin/vramsim"
    efficiency, cost, x, z = fit(vramsim, constant=constant)
    unit = "us" if constant else "cycles"
    print(f"gpu_bandwidth_efficiency = {efficiency:.3f}, per-layer cost = {cost:.{1 if constant else 0}f} {unit}")
    print(f"{'card':10} {'format':7} {'bytes ms':>9} {'fit tok/s':>10} {'measured':>9} {'error':>7}")
    errors = []
    for (g, q, m), b, r in zip(ROWS, x, z):
        per_layer_ms = cost / 1e3 if constant else cost / 1e6
        fitted = 1e3 / (b / efficiency + r * per_layer_ms)
        errors.append(fitted / m - 1)
        print(f"{g:10} {q:7} {b:9.3f} {fitted:10.1f} {m:9.2f} {100 * (fitted / m - 1):+6.1f}%")
    print(f"residual rms {100 * (sum(e * e for e in errors) / len(errors)) ** 0.5:.2f}%")


if __name__ == "__main__":
    main()
