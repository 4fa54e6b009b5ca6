#!/usr/bin/env bash
# Plants each missing file piece of a rule in a scratch copy of the tree and expects
# test_rule_registry to fail on it with the message naming the piece; the unplanted copy must pass
# first, so a failure can only come from the plant.
# Usage: test_rule_registry_planted.sh TEST_RULE_REGISTRY SOURCE_DIR
set -euo pipefail
if (($# != 2)) || [[ ! -x $1 || ! -f $2/kernels/rules/rule_list.h ]]; then
  echo "usage: test_rule_registry_planted.sh TEST_RULE_REGISTRY SOURCE_DIR (an executable and a source tree)" >&2
  exit 2
fi
bin=$1
src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

fresh_copy() {
  rm -rf "$scratch/tree"
  mkdir -p "$scratch/tree/kernels/gpu" "$scratch/tree/oracles"
  cp -r "$src/kernels/rules" "$scratch/tree/kernels/rules"
  cp "$src"/kernels/gpu/rule_family_*.cu "$scratch/tree/kernels/gpu/"
  cp "$src/oracles/RULE_BOUNDS.md" "$scratch/tree/oracles/"
}

run_registry() {
  FH_RULE_REGISTRY_ROOT="$scratch/tree" "$bin" >"$scratch/out.txt" 2>&1
}

fresh_copy
if ! run_registry; then
  echo "FAIL: test_rule_registry fails on an unplanted copy of the tree:"; cat "$scratch/out.txt"; exit 1
fi

failures=0
# expect_caught WHAT EXPECTED_MESSAGE: the planted tree must fail with EXPECTED_MESSAGE in the output.
expect_caught() {
  if run_registry; then
    echo "FAIL: $1 planted, but test_rule_registry passed"; failures=$((failures + 1))
  elif ! grep -qF -- "$2" "$scratch/out.txt"; then
    echo "FAIL: $1 planted; test_rule_registry failed without \"$2\":"; cat "$scratch/out.txt"; failures=$((failures + 1))
  else
    echo "ok: $1 planted -> \"$2\""
  fi
  fresh_copy
}

rm "$scratch/tree/kernels/gpu/rule_family_lion.cu"
expect_caught "no device instantiation unit for lion" "lion: no device instantiation"

sed -i 's/FH_GPU_INSTANTIATE_RULE_FAMILY(Lion)/FH_GPU_INSTANTIATE_RULE_FAMILY(SGD)/' "$scratch/tree/kernels/gpu/rule_family_lion.cu"
expect_caught "lion's unit instantiating another rule" "does not instantiate FH_GPU_INSTANTIATE_RULE_FAMILY(Lion)"

sed -i '/^| lion |/d' "$scratch/tree/oracles/RULE_BOUNDS.md"
expect_caught "no bound row for lion" "lion: oracles/RULE_BOUNDS.md has no measured-bound row"

echo 'FH_GPU_INSTANTIATE_RULE_FAMILY(Toy)' >"$scratch/tree/kernels/gpu/rule_family_toy.cu"
expect_caught "a unit of an unlisted rule" "no rule toy in kernels/rules/rule_list.h"

rm "$scratch/tree/kernels/rules/lion.h"
expect_caught "no header for lion" "lion: no kernels/rules/lion.h"

if ((failures)); then echo "$failures planted defect(s) not caught"; exit 1; fi
echo "all planted defects caught"
