#!/usr/bin/env bash
# Peak memory of the README's first command (20 psync threads x 1 GiB of 4 KiB random
# writes: 5.2 M I/Os) with every fio log, --blktrace and --trace on, against the same
# run with none, in a release build. Reports the maximum resident set size (GNU time's
# ru_maxrss of the child) and the wall time of each.
#
# usage: scripts/peak-memory-5m.sh [WORKDIR]   (default: a new directory under /tmp;
#        JOB=FILE runs another job file)
# The outputs take about 15 GB of disk (the timeline alone ~13 GB) while it runs and
# are deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d /tmp/flashpath-5m.XXXXXX)}
mkdir -p "$W"
cargo build --release -q -p flashpath-cli
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/flashpath
JOB=${JOB:-$PWD/jobs/hsq/randwrite.fio}
measure() {
  local name=$1; shift
  ( cd "$W" && /usr/bin/time -f "%M %e %U %S" -o "$W/$name.time" "$BIN" fio "$JOB" "$@" >"$W/$name.out" )
  read -r kb secs user sys <"$W/$name.time"
  printf "%-6s peak RSS %7.1f MB   wall %7.1f s   CPU user %6.1f s sys %6.1f s   %s\n" \
    "$name" "$(awk "BEGIN{print $kb/1024}")" "$secs" "$user" "$sys" \
    "$(grep -o 'issued rwts: total=[^ ]*' "$W/$name.out" | head -1)"
}
measure plain
measure logs --write_bw_log=l --write_iops_log=l --write_lat_log=l --write_hist_log=l \
  --log_hist_msec=1000
rm -f "$W"/*.log
measure all --write_bw_log=l --write_iops_log=l --write_lat_log=l --write_hist_log=l \
  --log_hist_msec=1000 --trace="$W/t.json" --blktrace="$W/bt"
du -sh "$W"
rm -rf "$W"/*.log "$W/t.json" "$W/bt"
