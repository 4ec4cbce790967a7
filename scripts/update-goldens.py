#!/usr/bin/env python3
"""Rewrites the expected output of golden files (tests/golden/*.tesh) from what the build prints now.

A change that moves a figure regenerates its goldens in the same commit, so that `git diff`
shows what moved. Only the `> ` lines are rewritten; comments, `!` directives and commands stay.

Usage: scripts/update-goldens.py [--build DIR] [FILE.tesh ...]   (default: build, every golden)
The commands run from the source tree, with the same variables as ctest gives tesh:
$vramsim (the binary), $blank (tests/golden/run-blanked.sh) and $tmpdir (a scratch folder).
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command, env):
    """Runs one tesh command as tesh does (shlex split, no shell, stderr into stdout)."""
    expanded = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), command)
    args = shlex.split(expanded)
    proc = subprocess.run(args, cwd=SRC, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    lines = re.sub(r"\x1b[^m]*m", "", proc.stdout).split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def update(path, env):
    out, ignore = [], False
    with open(path) as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if line.startswith(">"):
            continue
        out.append(line)
        if line.startswith("! output ignore"):
            ignore = True
        elif line.startswith("$ "):
            produced = run(line[2:], env)
            if not ignore:
                out.extend(("> " + l) if l else ">" for l in produced)
            ignore = False
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(SRC, "build"))
    parser.add_argument("files", nargs="*")
    opts = parser.parse_args()
    files = opts.files or sorted(glob.glob(os.path.join(SRC, "tests", "golden", "*.tesh")))
    for path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        env = dict(os.environ)
        env["vramsim"] = os.path.join(os.path.abspath(opts.build), "bin", "vramsim")
        env["blank"] = os.path.join(SRC, "tests", "golden", "run-blanked.sh")
        env["tmpdir"] = os.path.join(os.path.abspath(opts.build), "golden", name)
        os.makedirs(env["tmpdir"], exist_ok=True)
        update(path, env)
        print("updated", os.path.relpath(path, SRC))


if __name__ == "__main__":
    sys.exit(main())
