"""A two-axis sweep on Ray: three MMC drivers × four thread counts of 4 KiB random
writes on the 32 GB eMMC, each configuration a Ray task. Here Ray starts a local
instance; give ``ray.init`` a cluster's address (or RAY_ADDRESS) to spread the tasks
over its machines (each needs flashpath installed).

Prints the sweep and draws IOPS against thread count, one line per driver
(ray_sweep.svg)."""

import os

import ray

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
         log_to_driver=False)
JOB = f"""
[global]
filename=/dev/mmcblk0
direct=1
bs=4k
size=256m
offset_increment=256m
group_reporting
numjobs={{threads}}
number_ios={ios(5000, 50)}

[w]
rw=randwrite
"""
df = flashpath.sweep({"driver": ["mmc-legacy", "mmc-hsq", "mmc-hsq-v6"],
                      "threads": [1, 2, 8, 20]},
                     {"randwrite": JOB}, backend="ray",
                     device="emmc51-hs400-32g", precondition="sequential")
print(df[["driver", "threads", "iops", "clat_mean_ns"]].to_string(index=False))
path = os.path.join(out_dir(), "ray_sweep.svg")
plot.save(plot.sweep_lines(df, "threads", "iops", line="driver", log_x=False,
                           title="4 KiB random writes: IOPS against threads"), path)
print(f"chart: {path}")
ray.shutdown()
