#!/usr/bin/env bash
# Instructions per simulated I/O of workloads the criterion benches time
# (crates/flashpath-core/benches/sim_speed.rs and sim_randread.rs), counted by
# valgrind's cachegrind (--cache-sim=no) over the whole `flashpath fio` process, in a
# release build: each workload runs with IOS and with IOS/10 I/Os, and the difference
# over the 0.9 IOS I/Os between is the cost per I/O without the start-up (presets,
# preconditioning, report). Instruction counts barely move from run to run (wall-clock
# timings on a shared 2-core machine move by 10-25 %), so a change to the hot paths is
# checked with these, before and after, on the same machine.
#
# usage: scripts/instructions.sh [IOS]   (default 200000; needs valgrind)
#        BIN=path/to/flashpath scripts/instructions.sh   counts that build (an older
#        one, to compare) instead of building this checkout
#        scripts/instructions.sh --check   counts at 200000 I/Os and compares each
#        workload with its line in scripts/instructions.baseline: exits 1 when one costs
#        more than 2 % over it. Counts of another compiler than the file's are shown,
#        not checked (they move with the compiler's version).
#        scripts/instructions.sh --bless   writes this build's counts to that file: in
#        the commit that makes a path dearer on purpose, saying why there (or cheaper:
#        the gain is then kept).
set -euo pipefail
cd "$(dirname "$0")/.."
BASELINE=scripts/instructions.baseline
TOLERANCE_PCT=2
MODE=print
case "${1:-}" in
  --check) MODE=check; shift ;;
  --bless) MODE=bless; shift ;;
esac
if [ "$MODE" = print ]; then
  [ $# -le 1 ] || { echo "instructions.sh: one argument at most, the I/O count (got $*)" >&2; exit 2; }
  IOS=${1:-200000}
  [[ $IOS =~ ^[0-9]+$ ]] && [ "$IOS" -ge 200 ] ||
    { echo "instructions.sh: IOS must be a whole number of I/Os, at least 200 (got '$IOS')" >&2; exit 2; }
else
  IOS=200000
  [ $# = 0 ] || { echo "instructions.sh: --$MODE takes no I/O count (it counts $IOS)" >&2; exit 2; }
fi
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (Debian: apt-get install valgrind)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p flashpath-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/flashpath
fi
COMPILER=$(rustc -V)
W=$(mktemp -d /tmp/flashpath-instr.XXXXXX)
trap 'rm -rf "$W"' EXIT
ir() {
  local name=$1; shift
  (cd "$W" && valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$W/$name.cg" \
      "$BIN" fio "$@" >"$W/$name.out" 2>"$W/$name.err") || { cat "$W/$name.err" >&2; exit 1; }
  grep -m1 '^summary:' "$W/$name.cg" | awk '{print $2}'
}
# count NAME DIVISOR ARGS...: the job's own number_ios is IOS/DIVISOR per thread.
count() {
  local name=$1 div=$2; shift 2
  local big small
  big=$(ir "$name" "$@" --number_ios=$((IOS / div)))
  small=$(ir "$name.small" "$@" --number_ios=$((IOS / 10 / div)))
  local per
  per=$(awk "BEGIN{printf \"%.1f\", ($big - $small) / ($IOS * 0.9)}")
  printf "%-36s %14s instructions at %d I/Os, %8.1f per I/O past start-up\n" \
    "$name" "$big" "$IOS" "$per"
  echo "$name $per" >>"$W/counts"
}
# 4 KiB random reads, libaio QD32, emmc51-hs400-32g, mmc-legacy.
count randread_4k_libaio_qd32 1 --device emmc51-hs400-32g --precondition sequential \
  --name=b --filename=/dev/mmcblk0 --rw=randread --bs=4k --size=4g --direct=1 \
  --ioengine=libaio --iodepth=32
# 4 KiB random writes, libaio QD32 over 1 GiB (passes over it again past 262,144 I/Os),
# as the criterion bench runs them.
count randwrite_4k_libaio_qd32 1 --device emmc51-hs400-32g --precondition sequential \
  --name=b --filename=/dev/mmcblk0 --rw=randwrite --bs=4k --size=1g --io_size=1t \
  --direct=1 --ioengine=libaio --iodepth=32
# 20 psync threads of 4 KiB random writes through mmc-hsq.
count hsq_randwrite_4k_psync_20threads 20 --device emmc51-hs400-32g --driver mmc-hsq \
  --precondition sequential --name=b --filename=/dev/mmcblk0 --rw=randwrite --bs=4k \
  --size=1g --direct=1 --numjobs=20
# 16 psync threads of 4 KiB random reads on ufs21-64g with ufs-hpb.
count ufs_hpb_randread_4k_psync_16threads 16 --device ufs21-64g --driver ufs-hpb \
  --precondition sequential --name=b --filename=/dev/sda --rw=randread --bs=4k \
  --size=256m --offset_increment=256m --direct=1 --numjobs=16
# 4 psync threads of 4 KiB random writes on the allocation-unit FTL.
count au_randwrite_4k_psync_4threads 4 --device emmc441-2011-au-8g \
  --precondition sequential --name=b --filename=/dev/mmcblk0 --rw=randwrite --bs=4k \
  --size=64m --offset_increment=64m --direct=1 --numjobs=4
# 4 KiB random reads, libaio QD32, over the whole of ufs40-512g at 1 TB (16 dies).
count ufs40_1tb_randread_4k_libaio_qd32 1 --device ufs40-512g --host sm8650-phone \
  --set device.geometry.capacity=1022202216448B --set device.geometry.dies_per_channel=4 \
  --precondition sequential --name=b --rw=randread --bs=4k --size=100% --direct=1 \
  --ioengine=libaio --iodepth=32
# 4 KiB random writes, libaio QD32, over the whole of that 1 TB: each a page of its own
# in a region of the L2P written in part (device/l2p.rs's sparse tables).
count ufs40_1tb_randwrite_4k_libaio_qd32 1 --device ufs40-512g --host sm8650-phone \
  --set device.geometry.capacity=1022202216448B --set device.geometry.dies_per_channel=4 \
  --precondition sequential --name=b --rw=randwrite --bs=4k --size=100% --direct=1 \
  --ioengine=libaio --iodepth=32

case $MODE in
  bless)
    {
      echo "# Instructions per simulated I/O past start-up of each workload of"
      echo "# scripts/instructions.sh at $IOS I/Os, release build. \`--check\` fails when one costs"
      echo "# more than $TOLERANCE_PCT % over its line, on this compiler; \`--bless\` rewrites the file."
      echo "compiler $COMPILER"
      cat "$W/counts"
    } >"$BASELINE"
    echo "instructions: wrote $BASELINE"
    ;;
  check)
    [ -f "$BASELINE" ] || { echo "instructions.sh: no $BASELINE (make it with --bless)" >&2; exit 2; }
    want=$(sed -n 's/^compiler //p' "$BASELINE")
    if [ "$want" != "$COMPILER" ]; then
      echo "instructions: not checked: $BASELINE is of $want, this build of $COMPILER"
      exit 0
    fi
    awk -v tol="$TOLERANCE_PCT" -v file="$BASELINE" '
      FNR == NR { if ($1 !~ /^#/ && $1 != "compiler") base[$1] = $2; next }
      {
        if (!($1 in base)) { printf "instructions: %s has no line in %s\n", $1, file; bad = 1; next }
        d = ($2 - base[$1]) / base[$1] * 100
        verdict = d > tol ? "OVER" : (d < -tol ? "cheaper (--bless keeps the gain)" : "ok")
        printf "instructions: %-36s %8.1f per I/O, baseline %8.1f, %+5.1f %%  %s\n", $1, $2, base[$1], d, verdict
        if (d > tol) bad = 1
        seen[$1] = 1
      }
      END {
        for (k in base) if (!(k in seen)) { printf "instructions: %s in %s was not counted\n", k, file; bad = 1 }
        if (bad) { printf "instructions: a workload costs more than %s %% over %s: make it cheaper, or --bless in the commit that makes it dearer on purpose and say why\n", tol, file; exit 1 }
      }' "$BASELINE" "$W/counts"
    ;;
esac
