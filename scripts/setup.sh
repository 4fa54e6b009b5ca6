#!/usr/bin/env bash
# Installs the Debian packages forge-harness builds against, when any is missing.
# The CUDA 13.0 toolkit itself (nvcc, cuBLAS) is expected under /usr/local/cuda.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config libmpfr-dev libgmp-dev libmpfrc++-dev
      libeigen3-dev libhdf5-dev hdf5-tools libgtest-dev libbenchmark-dev zlib1g-dev
      python3 python3-h5py python3-numpy python3-matplotlib nlohmann-json3-dev libpugixml-dev chromium
      clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: clang++-14 and libFuzzer
      ccache)  # scripts/build.sh: the compile cache
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: the CUDA 13.0 toolkit (nvcc) was not found in PATH or /usr/local/cuda/bin" >&2
  exit 1
fi
