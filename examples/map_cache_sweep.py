"""The device's map cache against the I/O range: 4 KiB random reads at QD1 over a
growing range of the 32 GB eMMC, for three sizes of its L2P map cache. Once the range's
map no longer fits, reads wait for map reads from NAND and bandwidth falls.

Prints the sweep and draws bandwidth against range, one line per cache size
(map_cache_sweep.svg)."""

import os

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

JOB = f"""
[r]
filename=/dev/mmcblk0
rw=randread
bs=4k
direct=1
size={{range}}
number_ios={ios(4000)}
"""

df = flashpath.sweep(
    {"device.map_cache.size": ["256KiB", "1MiB", "4MiB"],
     "range": ["256m", "1g", "4g", "16g"]},
    {"randread": JOB},
    device="emmc51-hs400-32g", precondition="sequential")
print(df[["device.map_cache.size", "range", "bw_bytes", "device.map_misses"]]
      .to_string(index=False))
path = os.path.join(out_dir(), "map_cache_sweep.svg")
plot.save(plot.sweep_lines(df, "range", "bw_bytes", line="device.map_cache.size",
                           title="4 KiB random reads at QD1: map cache size against range"),
          path)
print(f"chart: {path}")
