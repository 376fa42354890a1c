#!/usr/bin/env bash
# A profile-guided (PGO) release build of flashpath, and the speed benches on it.
#
# The simulator's hot loop is branchy code spread over many functions (the event loop,
# the driver, the block layer, the FTL): what the compiler inlines and which side of
# each branch it lays out straight decide much of its speed. A profile of real runs
# tells it; the outputs are the same bytes (the golden corpus checks that).
#
# Training set: the golden corpus (crates/flashpath-cli/tests/data/golden/cases.txt),
# 59 small runs that cover every driver, every device preset, buffered and direct I/O
# and every output format. The speed benches' own workloads are not in it.
#
# usage: scripts/pgo.sh                 builds target/pgo/release/flashpath
#        scripts/pgo.sh bench [ARGS...]  also runs the sim_speed benches (criterion,
#                                        with ARGS) built with the profile
# needs: llvm-profdata of the LLVM version rustc uses (`rustc -vV`): from
#        `rustup component add llvm-tools`, or a distribution's llvm-N package.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=""
for c in "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata \
  "$(command -v "llvm-profdata-$major" || true)" "/usr/lib/llvm-$major/bin/llvm-profdata" \
  "$(command -v llvm-profdata || true)"; do
  if [ -n "$c" ] && [ -x "$c" ] && "$c" merge --version 2>/dev/null | grep -q "LLVM version $major\."; then
    profdata=$c
    break
  fi
done
if [ -z "$profdata" ]; then
  echo "scripts/pgo.sh: no llvm-profdata of LLVM $major (rustc's): run 'rustup component add llvm-tools', or install your distribution's llvm-$major" >&2
  exit 1
fi
W=$(mktemp -d /tmp/flashpath-pgo.XXXXXX)
trap 'rm -rf "$W"' EXIT

# The command line and the benches are built in one selection: cargo then builds
# flashpath-core once for both, with the same symbol names, and a profile taken
# through the command line applies to the benches. (`cargo bench -p flashpath-core`
# alone builds it with another metadata hash, so every function has another name and
# the profile matched nothing; why cargo hashes the two selections apart, probably
# the dev-dependencies' features, was not looked into.)
build() {
  cargo build --profile bench -q -p flashpath-cli -p flashpath-core --bins --benches
}
echo "pgo: instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$W/raw" CARGO_TARGET_DIR=$ROOT/target/pgo-gen build
gen=$ROOT/target/pgo-gen/release/flashpath

echo "pgo: training on the golden corpus" >&2
n=0
while IFS= read -r line; do
  line=${line%%#*}
  [ -z "${line// /}" ] && continue
  args=${line#*|}
  mkdir -p "$W/run" && rm -rf "$W/run"/*
  words=()
  for a in $args; do
    if [[ $a == jobs/* ]] && [ -f "$ROOT/$a" ]; then
      cp "$ROOT/$a" "$W/run/"
      a=$(basename "$a")
    fi
    words+=("$a")
  done
  # A case may end in an error on purpose (the corpus has bad inputs too).
  (cd "$W/run" && "$gen" "${words[@]}" >/dev/null 2>&1) || true
  n=$((n + 1))
done <crates/flashpath-cli/tests/data/golden/cases.txt
echo "pgo: $n runs" >&2
"$profdata" merge -o "$W/flashpath.profdata" "$W"/raw/*.profraw
mkdir -p target/pgo
cp "$W/flashpath.profdata" target/pgo/flashpath.profdata

# Functions the training never ran (the bench harness, for one) have no profile: not
# an error.
USE="-Cprofile-use=$ROOT/target/pgo/flashpath.profdata -Cllvm-args=-pgo-warn-missing-function=false"
echo "pgo: optimized build (target/pgo)" >&2
RUSTFLAGS="$USE" CARGO_TARGET_DIR=$ROOT/target/pgo build
echo "pgo: built target/pgo/release/flashpath" >&2
if [ "${1:-}" = bench ]; then
  shift
  bench=$(ls -t "$ROOT"/target/pgo/release/deps/sim_speed-* | grep -v '\.d$' | head -1)
  "$bench" --bench "$@"
fi
