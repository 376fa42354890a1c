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
set -euo pipefail
cd "$(dirname "$0")/.."
IOS=${1:-200000}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p flashpath-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/flashpath
fi
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
  printf "%-36s %14s instructions at %d I/Os, %8.1f per I/O past start-up\n" \
    "$name" "$big" "$IOS" "$(awk "BEGIN{print ($big - $small) / ($IOS * 0.9)}")"
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
