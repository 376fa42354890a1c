"""Where an eMMC request's time goes (docs/published-results.md §3): the Micron white
paper splits each request into request-pre (the host's software before the command),
hardware (bus and device) and request-post (completion). Four 4 KiB workloads at QD1 on
the Jetson TX1 preset.

Prints the mean spans and draws them stacked per workload (request_spans.svg)."""

import os

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

runs = {}
for rw in ("read", "randread", "write", "randwrite"):
    runs[rw] = flashpath.run([f"--name={rw}", f"--rw={rw}", "--bs=4k", "--size=256m",
                              "--direct=1", f"--number_ios={ios(5000)}"],
                             device="emmc51-hs400-8g", precondition="sequential")
for rw, r in runs.items():
    s = r.spans()
    s = s[(s["dir"] == "all") & s["span"].isin(["pre", "hw", "post"])]
    print(rw, {k: round(v / 1e3, 1) for k, v in zip(s["span"], s["mean_ns"])}, "µs")
path = os.path.join(out_dir(), "request_spans.svg")
plot.save(plot.span_bars(runs, title="4 KiB at QD1 on the TX1: pre / hw / post"), path)
print(f"chart: {path}")
