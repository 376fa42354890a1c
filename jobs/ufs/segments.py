#!/usr/bin/env python3
"""Per-segment view of a steady-state write run's fio logs (jobs/ufs/steady-randwrite.fio).

Reads the 500 ms bandwidth log and the clat log (log_max_value=1: each line is the
window's largest latency) that fio (or flashpath) wrote, and prints one line per
SEGMENT MiB of completed writes: its IOPS, its 500 ms windows with no completion (fio
writes no line for an idle window), and its largest completion latency.

    python3 jobs/ufs/segments.py steady_bw.1.log steady_clat.1.log [SEGMENT_MIB=128]
"""
import sys


def lines(path):
    with open(path) as f:
        for line in f:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) >= 2 and fields[0]:
                yield int(fields[0]), int(fields[1])


def main():
    bw_log, clat_log = sys.argv[1], sys.argv[2]
    seg_bytes = int(sys.argv[3] if len(sys.argv) > 3 else 128) << 20
    # clat lines close a window at the first completion 500 ms after its start, so
    # they do not fall on the bandwidth log's times: each counts where it falls.
    clat = list(lines(clat_log))
    ci = 0
    print("segment  end_ms      IOPS  empty_windows  max_clat_ms")
    seg, seg_start_ms, done, prev_ms, empty, worst = 0, 0, 0, 0, 0, 0
    total_empty, total_worst = 0, 0
    for t_ms, kib_s in lines(bw_log):
        # A line covers the 500 ms before it (the job's last line: since the previous).
        window_ms = min(t_ms - prev_ms, 500)
        # Windows of 500 ms with no line between this one and the previous one.
        missing = max(0, (t_ms - prev_ms) // 500 - 1) if prev_ms else 0
        empty += missing
        done += kib_s * 1024 * window_ms // 1000
        while ci < len(clat) and clat[ci][0] <= t_ms:
            worst = max(worst, clat[ci][1])
            ci += 1
        prev_ms = t_ms
        if done >= (seg + 1) * seg_bytes:
            ios = seg_bytes // 4096
            iops = ios * 1000 / max(1, t_ms - seg_start_ms)
            print(f"{seg:7d} {t_ms:8d} {iops:9.0f} {empty:14d} {worst / 1e6:12.1f}")
            total_empty += empty
            total_worst = max(total_worst, worst)
            seg, seg_start_ms, empty, worst = seg + 1, t_ms, 0, 0
    total_empty += empty
    total_worst = max([total_worst, worst] + [v for _, v in clat[ci:]])
    print(f"total: {seg} segments, {total_empty} empty windows, max clat {total_worst / 1e6:.1f} ms")


main()
