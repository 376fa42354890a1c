"""A calibration, end to end, on a board whose answer is known: three fio runs are
simulated on the 32 GB eMMC with its NAND read time moved from the preset's 54 µs to
80 µs (the "board"), saved as fio JSON, and `flashpath.calibrate` fits the preset's
declared estimate `device.nand.t_read` back from them.

Prints the fit and draws each figure at the preset and at the fit
(calibration_fit.svg)."""

import json
import os
import tempfile

import flashpath
import flashpath.plot as plot
from _common import ios, out_dir

out = out_dir()
work = tempfile.mkdtemp(prefix="flashpath-board-")  # the board's JSON, the fitted preset
BOARD = {"device": "emmc51-hs400-32g", "precondition": "sequential"}
measured = []
for name, rw, bs in (("rr", "randread", "4k"), ("sr", "read", "128k"),
                     ("rw", "randwrite", "4k")):
    r = flashpath.run([f"--name={name}", f"--rw={rw}", f"--bs={bs}", "--size=256m",
                       f"--number_ios={ios(2000, 300)}", "--direct=1"],
                      set={"device.nand.t_read": "80us"}, **BOARD)
    path = os.path.join(work, f"board-{name}.json")
    with open(path, "w") as f:
        json.dump(r.json, f)
    measured.append(path)

cal = flashpath.calibrate(measured, os.path.join(work, "fitted.toml"),
                          fit=["device.nand.t_read"], extra=["--max-evals", "20"], **BOARD)
print(cal.fields[["field", "preset", "fitted", "sigma", "the_data"]].to_string(index=False))
print(f"chi2 {cal.chi2[0]:.2f} -> {cal.chi2[1]:.2f}")
path = os.path.join(out, "calibration_fit.svg")
plot.save(plot.calibration_fit(cal), path)
print(f"chart: {path}")
