"""Shared fixtures: the `flashpath` binary (the oracle the package must agree with) and
a small job."""

import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

#: A short run: 500 4 KiB random reads on the eMMC preset, laid out sequentially.
SMALL = ["--name=r", "--rw=randread", "--bs=4k", "--size=16m", "--number_ios=500",
         "--direct=1"]
SYSTEM = {"device": "emmc51-hs400-32g", "precondition": "sequential"}


@pytest.fixture(scope="session")
def flashpath_bin() -> str:
    """The command line's binary: $FLASHPATH_BIN, else this checkout's release or debug
    build, else `flashpath` on the PATH. Its absence fails the tests that need it:
    build it with `cargo build -p flashpath-cli`."""
    for c in (os.environ.get("FLASHPATH_BIN"), REPO / "target/release/flashpath",
              REPO / "target/debug/flashpath", shutil.which("flashpath")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return str(c)
    pytest.fail("no flashpath binary: run `cargo build -p flashpath-cli` or set FLASHPATH_BIN")


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt in the test, as in an interactive Python. A runner
    that starts the tests with SIGINT ignored (a background job of a non-interactive
    shell, nohup) leaves Python without its handler, and a test's own SIGINT would do
    nothing."""
    import signal
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance of two CPUs for the session."""
    ray = pytest.importorskip("ray") if not os.environ.get("CI") else __import__("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
