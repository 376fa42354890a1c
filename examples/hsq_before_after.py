"""The MMC host software queue, before and after (docs/published-results.md §1): the
published random-write workload (20 psync threads of 4 KiB random writes over 1 GiB
each) on the shipped eMMC and board, through the legacy MMC path and through hsq.

Prints the comparison and draws it as a bar chart (hsq_before_after.svg)."""

import os

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

JOB = f"""
[global]
filename=/dev/mmcblk0p30
direct=1
bs=4K
size=1G
group_reporting
numjobs=20
number_ios={ios(20_000, 50)}

[test]
rw=randwrite
"""

df = flashpath.compare(JOB, {"driver": ["mmc-legacy", "mmc-hsq"]},
                       device="emmc51-hs400-32g", precondition="sequential")
print(df[["driver", "dir", "bw_bytes", "iops", "clat_mean_ns", "iops_change_pct"]]
      .to_string(index=False))
path = os.path.join(out_dir(), "hsq_before_after.svg")
plot.save(plot.compare_bars(df, "iops", title="4 KiB random writes, 20 threads: legacy vs hsq"),
          path)
print(f"chart: {path}")
