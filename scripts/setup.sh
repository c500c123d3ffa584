#!/usr/bin/env bash
# Installs the Debian packages HetSim builds against, only those that are missing.
set -euo pipefail

packages=(build-essential cmake pkg-config libsimgrid-dev libboost-dev libeigen3-dev nlohmann-json3-dev
          libcli11-dev doctest-dev libbenchmark-dev libgloo-dev iproute2 libopenmpi-dev openmpi-bin gnuplot-nox python3
          zlib1g-dev shellcheck)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
