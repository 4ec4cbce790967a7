#!/usr/bin/env python3
"""Fits the llama.cpp preset's decode parameters to one published table of llama-bench runs.

A decode step of a dense model with every layer on one GPU takes
    t = bytes read / (bandwidth x gpu_bandwidth_efficiency) + layers x layer_launch
(configs/engines/llama.cpp.yaml). The simulator itself gives the bytes term: each row is run
with gpu_bandwidth_efficiency=1 and layer_launch=0, and the measured step times are then
regressed on it (least squares, two parameters, seven rows):
    1 / measured tok/s = (1 / efficiency) x simulated bytes time + layers x layer_launch.

Source: XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README, "LLaMA 3" NVIDIA table (snapshots
of May 2024; llama-bench, one GPU, -ngl 10000): tg 512 in tok/s, Llama 3 8B (the catalogue's
llama-3.1-8b has its shapes). llama-bench allocates a context of its test's length, so the
runs use a 1,024-token context (the F16 model on the 16 GB RTX 4080 would not fit 4,096).

usage: scripts/fit-llama-cpp-decode.py [path/to/vramsim]   (default build/bin/vramsim)
"""
import json
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


def fit(vramsim, configs=None, rows=ROWS):
    """Least squares over `rows`; returns (gpu_bandwidth_efficiency, layer_launch in us, bytes ms per row)."""
    x = [step_ms(vramsim, configs, g, q, "engine.gpu_bandwidth_efficiency=1", "engine.layer_launch=0s") for g, q, _ in rows]
    y = [1e3 / m for _, _, m in rows]
    n = len(x)
    sx, sy = sum(x), sum(y)
    sxx = sum(v * v for v in x)
    sxy = sum(a * b for a, b in zip(x, y))
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    intercept = (sy - slope * sx) / n
    return 1 / slope, 1e3 * intercept / LAYERS, x


def main():
    vramsim = sys.argv[1] if len(sys.argv) > 1 else "build/bin/vramsim"
    efficiency, launch_us, x = fit(vramsim)
    print(f"gpu_bandwidth_efficiency = {efficiency:.3f}, layer_launch = {launch_us:.1f} us")
    print(f"{'card':10} {'format':7} {'bytes ms':>9} {'fit tok/s':>10} {'measured':>9} {'error':>7}")
    for (g, q, m), b in zip(ROWS, x):
        fitted = 1e3 / (b / efficiency + LAYERS * launch_us / 1e3)
        print(f"{g:10} {q:7} {b:9.3f} {fitted:10.1f} {m:9.2f} {100 * (fitted / m - 1):+6.1f}%")


if __name__ == "__main__":
    main()
