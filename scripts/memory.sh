#!/usr/bin/env bash
# Resident memory of long runs, in a release build: the process's peak resident set
# (GNU time's maximum RSS), which is what a user's machine pays. The simulator's own
# memory tests (crates/flashpath-core/tests/device_memory.rs) count the bytes it
# allocates; they cannot see memory the C library keeps after it is freed, and that is
# how a change once grew the peak of a whole-device write by 27 % with its allocations
# counted as smaller (docs/performance.md, "The L2P's dense regions").
#
# Three workloads, each run at two lengths:
# - reads: 4 KiB random reads, QD32, over the whole of the UFS 4.0 preset at 1 TB
#   (16 dies), sequentially preconditioned, 1 M and 100 M I/Os. Reads of a sequential
#   layout make no map: the longer run's peak must be the shorter's (within FLAT_MIB),
#   and under 1 GB (issue 32's figure for 100 M I/Os).
# - writes: 4 KiB random writes, QD32, over the whole 32 GB eMMC, once (every page
#   written once: fio's random map) and twice over (the second pass with garbage
#   collection). The second pass writes no new page: its peak must be the first's
#   (within FLAT_MIB). And its peak must be within what the model says written data
#   costs: the L2P's 4 bytes per page plus 672 bytes per 256 MiB region and the
#   96 KiB it rebuilds tables in (device/l2p.rs), the reverse map's resident budget
#   (16 MiB, device/reverse_map.rs), over the base (the same job at 10 K I/Os), with
#   SLACK_MIB for the allocator.
# - scattered: 4 KiB random writes, QD32, over the reads' 1 TB, sequentially
#   preconditioned, 10 K and 2 M I/Os (norandommap: fio's random map would be 32 MiB
#   of the job's own). Each write is a page of its own in a region written in part:
#   the longer run's peak must be within the base, plus the L2P's 64/3 bytes at most
#   per page written (a hash table's 8-byte buckets at least three eighths full) and
#   672 bytes per region, its 96 KiB, the reverse map's 16 MiB, and SLACK_MIB. (The
#   L2P before it made 256 bytes per page written here: 457 MiB.)
#
# usage: scripts/memory.sh            measures and prints
#        scripts/memory.sh --check    also checks the bounds above: exits 1 when one
#                                     is broken, naming it
#        BIN=path/to/flashpath scripts/memory.sh   measures that build instead of
#        building this checkout
# Takes about a minute (the 100 M reads are most of it).
set -euo pipefail
cd "$(dirname "$0")/.."
FLAT_MIB=1
SLACK_MIB=4
MODE=print
case "${1:-}" in
  --check) MODE=check; shift ;;
esac
[ $# = 0 ] || { echo "memory.sh: unexpected argument '$1' (usage: scripts/memory.sh [--check])" >&2; exit 2; }
[ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1 ||
  { echo "memory.sh: needs GNU time as /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p flashpath-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/flashpath
fi
W=$(mktemp -d /tmp/flashpath-memory.XXXXXX)
trap 'rm -rf "$W"' EXIT

# peak NAME ARGS...: runs `flashpath fio ARGS`, prints its peak RSS and wall time, and
# keeps the peak (KiB) in $W/NAME.kb and the report in $W/NAME.json.
peak() {
  local name=$1; shift
  (cd "$W" && /usr/bin/time -f "%M %e" -o "$W/$name.time" "$BIN" fio "$@" \
      --output-format=json --output="$W/$name.json" >"$W/$name.out" 2>"$W/$name.err") ||
    { echo "memory.sh: $name failed:" >&2; cat "$W/$name.err" >&2; exit 1; }
  local kb secs
  read -r kb secs <"$W/$name.time"
  printf "memory: %-12s peak RSS %6.1f MiB  (%5.1f s wall)\n" "$name" "$(awk "BEGIN{print $kb/1024}")" "$secs"
  echo "$kb" >"$W/$name.kb"
}
kib() { cat "$W/$1.kb"; }
mib() { awk "BEGIN{printf \"%.1f MiB\", $1/1024}"; }
# json NAME EXPR: a field of NAME's report (python3 reads it).
json() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$W/$1.json"
}

READS=(--device ufs40-512g --host sm8650-phone --set device.geometry.capacity=1022202216448B
  --set device.geometry.dies_per_channel=4 --precondition sequential --name=b --rw=randread
  --bs=4k --size=100% --direct=1 --ioengine=libaio --iodepth=32)
WRITES=(--device emmc51-hs400-32g --precondition sequential --name=b --filename=/dev/mmcblk0
  --rw=randwrite --bs=4k --size=100% --direct=1 --ioengine=libaio --iodepth=32)

peak reads_1m "${READS[@]}" --number_ios=1000000
peak reads_100m "${READS[@]}" --number_ios=100000000
peak writes_10k "${WRITES[@]}" --number_ios=10000
peak writes_1x "${WRITES[@]}"
capacity=$(json writes_1x 'r["jobs"][0]["write"]["io_bytes"]')
peak writes_2x "${WRITES[@]}" --io_size=$((2 * capacity))
SCATTERED=(--device ufs40-512g --host sm8650-phone --set device.geometry.capacity=1022202216448B
  --set device.geometry.dies_per_channel=4 --precondition sequential --name=b --rw=randwrite
  --bs=4k --size=100% --norandommap --direct=1 --ioengine=libaio --iodepth=32)
peak scattered_10k "${SCATTERED[@]}" --number_ios=10000
peak scattered_2m "${SCATTERED[@]}" --number_ios=2000000
r1=$(kib reads_1m) r100=$(kib reads_100m) w0=$(kib writes_10k) w1=$(kib writes_1x) w2=$(kib writes_2x)
s0=$(kib scattered_10k) s2=$(kib scattered_2m)
[ "$(json reads_100m 'r["jobs"][0]["read"]["total_ios"]')" = 100000000 ] ||
  { echo "memory.sh: reads_100m did not run 100 M I/Os" >&2; exit 1; }
[ "$(json writes_2x 'r["jobs"][0]["write"]["io_bytes"]')" = $((2 * capacity)) ] ||
  { echo "memory.sh: writes_2x did not write the device twice over" >&2; exit 1; }

# The model's cost of the written device, KiB: 4 bytes per 4 KiB page and 672 bytes per
# region of 65,536 pages, the L2P's 96 KiB to rebuild a table in, plus the reverse
# map's 16 MiB.
pages=$((capacity / 4096))
model_kib=$(awk "BEGIN{printf \"%d\", ($pages * 4 + int(($pages + 65535) / 65536) * 672) / 1024 + 96 + 16 * 1024}")
bound_kib=$((w0 + model_kib + SLACK_MIB * 1024))
# The model's bound on the scattered writes' cost, KiB: 2 M pages at 64/3 bytes, 672
# bytes for each of the 3,808 regions of 1 TB, 96 KiB, the reverse map's 16 MiB.
regions=$(( (1022202216448 / 4096 + 65535) / 65536 ))
scattered_kib=$(awk "BEGIN{printf \"%d\", (2000000 * 64 / 3 + $regions * 672) / 1024 + 96 + 16 * 1024}")
scattered_bound=$((s0 + scattered_kib + SLACK_MIB * 1024))
echo "memory: scattered_2m bound: base $(mib "$s0") + L2P and reverse map $(mib "$scattered_kib") + $SLACK_MIB MiB = $(mib "$scattered_bound")"
echo "memory: writes_2x bound: base $(mib "$w0") + L2P and reverse map $(mib "$model_kib") ($capacity bytes written) + $SLACK_MIB MiB = $(mib "$bound_kib")"

[ "$MODE" = check ] || exit 0
bad=0
verdict() { # NAME OK? TEXT
  if [ "$2" = 1 ]; then echo "memory: ok    $1: $3"; else echo "memory: OVER  $1: $3"; bad=1; fi
}
verdict "reads flat" $((r100 <= r1 + FLAT_MIB * 1024)) \
  "100 M reads $(mib "$r100"), 1 M $(mib "$r1") (within $FLAT_MIB MiB)"
verdict "reads under 1 GB" $((r100 * 1024 < 1000000000)) "100 M reads $(mib "$r100")"
verdict "writes flat" $((w2 <= w1 + FLAT_MIB * 1024)) \
  "twice over $(mib "$w2"), once $(mib "$w1") (within $FLAT_MIB MiB)"
verdict "writes modelled" $((w2 <= bound_kib)) "twice over $(mib "$w2"), bound $(mib "$bound_kib")"
verdict "scattered modelled" $((s2 <= scattered_bound)) "2 M scattered writes $(mib "$s2"), bound $(mib "$scattered_bound")"
if [ "$bad" = 1 ]; then
  echo "memory: a run's resident memory broke a bound above: something grows with the run, or holds memory the model does not count (scripts/memory.sh says how each bound is made)"
  exit 1
fi
