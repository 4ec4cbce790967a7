#!/usr/bin/env bash
# Installs what vramsim needs to build and test on Debian 12, from Debian's packages
# (libfmt formats numbers and messages; md4c renders the report pages' Markdown to HTML; gnuplot draws the sweep reports' charts; mpirun and chromium are used by the sweep tests;
# python3-yaml is for scripts/leave-one-card-out.py).
# Run as root (or with sudo). Skips apt entirely when everything is already there.
set -euo pipefail

packages=(build-essential cmake pkg-config git
          libsimgrid-dev libtbb-dev libyaml-cpp-dev catch2 libmd4c-dev libmd4c-html0-dev libfmt-dev
          clang libclang-rt-14-dev
          time python3 python3-yaml
          gnuplot-nox openmpi-bin libopenmpi-dev chromium)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
