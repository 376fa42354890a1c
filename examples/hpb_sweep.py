"""UFS Host Performance Booster off and on over the I/O range (docs/published-results.md
§4): 16 processes of 4 KiB random reads, each over its own share of the range, on the
64 GB UFS 2.1 part, with the plain ufs driver and with ufs-hpb (the host caches the
device's L2P map and sends each read's physical address).

Prints the sweep, draws bandwidth against range (hpb_sweep.svg) and the completion
latency CDFs at the largest range (hpb_latency_cdf.svg)."""

import os

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

RANGES = {"1g": "64m", "4g": "256m", "16g": "1g"}  # range: each process's share
JOB = f"""
[global]
filename=/dev/sda
direct=1
rw=randread
bs=4k
size={{share}}
offset_increment={{share}}
numjobs=16
number_ios={ios(2000, 30)}
group_reporting

[iozone]
"""

grid = [{"driver": d, "range": r, "share": s} for d in ("ufs", "ufs-hpb")
        for r, s in RANGES.items()]
df = flashpath.sweep(grid, {"randread": JOB}, labels=["range"], device="ufs21-64g",
                     precondition="sequential")
print(df[["driver", "range", "bw_bytes", "clat_mean_ns"]].to_string(index=False))
out = out_dir()
path = os.path.join(out, "hpb_sweep.svg")
plot.save(plot.sweep_lines(df, "range", "bw_bytes", line="driver",
                           title="16 × 4 KiB random readers: HPB off and on"), path)
print(f"chart: {path}")

largest = list(RANGES)[-1]
runs = {d: flashpath.run(JOB.replace("{share}", RANGES[largest]), driver=d,
                         device="ufs21-64g", precondition="sequential")
        for d in ("ufs", "ufs-hpb")}
path = os.path.join(out, "hpb_latency_cdf.svg")
plot.save(plot.latency_cdf(runs, title=f"completion latency over {largest}"), path)
print(f"chart: {path}")
