#!/usr/bin/env bash
# Peak memory of the README's first command (20 psync threads x 1 GiB of 4 KiB random
# writes: 5.2 M I/Os) with every fio log, --blktrace and --trace on, against the same
# run with none, in a release build. Reports the maximum resident set size (GNU time's
# ru_maxrss of the child) and the wall time of each.
#
# usage: scripts/peak-memory-5m.sh [WORKDIR]   (default: a new directory under /tmp)
# The outputs take about 15 GB of disk (the timeline alone ~13 GB) while it runs and
# are deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/flashpath-5m.XXXXXX)}
mkdir -p "$W"
cargo build --release -q -p flashpath-cli
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/flashpath
JOB=$PWD/jobs/hsq/randwrite.fio
measure() {
  local name=$1; shift
  ( cd "$W" && /usr/bin/time -f "%M %e" -o "$W/$name.time" "$BIN" fio "$JOB" "$@" >"$W/$name.out" )
  read -r kb secs <"$W/$name.time"
  printf '%-10s peak RSS %6.1f MB   wall %7.1f s   I/Os %s\n' "$name" "$(echo "$kb/1024" | bc -l)" "$secs" \
    "$(grep -o 'IOPS=[^,]*' "$W/$name.out" | head -1)"
}
measure plain
measure all --write_bw_log=l --write_iops_log=l --write_lat_log=l --write_hist_log=l \
  --log_hist_msec=1000 --trace="$W/t.json" --blktrace="$W/bt"
du -sh "$W"
rm -rf "$W"/*.log "$W/t.json" "$W/bt"
