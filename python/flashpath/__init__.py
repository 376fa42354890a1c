"""flashpath from Python: the simulator of the Linux I/O path to mobile flash storage.

Every function here runs the ``flashpath`` command's own code in this process (the
native module, with the GIL released while it simulates), so its figures are the
command line's, byte for byte. Errors in what you give (a job, a preset, an option)
raise :class:`Error` with the command's one-line message.

>>> import flashpath
>>> r = flashpath.run(["--name=r", "--rw=randread", "--bs=4k", "--size=4m",
...                    "--number_ios=500"], device="emmc51-hs400-32g",
...                   precondition="sequential")
>>> r.to_frame()[["job", "dir", "ios"]].values.tolist()
[['r', 'read', 500]]
"""

from ._api import (
    Calibration,
    CommandResult,
    Error,
    Result,
    calibrate,
    command,
    compare,
    presets,
    run,
    validate,
    version,
)
from ._sweep import sweep

__all__ = [
    "Calibration",
    "CommandResult",
    "Error",
    "Result",
    "calibrate",
    "command",
    "compare",
    "presets",
    "run",
    "sweep",
    "validate",
    "version",
]
