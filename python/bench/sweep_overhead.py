"""What the Python and Ray layers add to a sweep (docs/python.md, "Measurements").

N configurations (default 200) of one 100 k-I/O job (4 KiB random reads, libaio QD32,
over 1 GiB of the 32 GB eMMC, laid out sequentially; each configuration its own
randseed) are swept on W workers (default 2) with the local backend and with Ray (a
local instance of W CPUs). The yardstick is the command line: the median wall time of
the same job as one `flashpath fio` process (FLASHPATH_BIN, default target/release),
times N / W. Build both the same way (`pip install ./python` and `cargo build
--release` both use the release profile) and run on an otherwise idle machine.

usage: python3 python/bench/sweep_overhead.py [N] [W]
"""

import os
import statistics
import subprocess
import sys
import time

import flashpath

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
W = int(sys.argv[2]) if len(sys.argv) > 2 else 2
BIN = os.environ.get("FLASHPATH_BIN", os.path.join(ROOT, "target/release/flashpath"))
ARGS = ["--name=r", "--rw=randread", "--bs=4k", "--size=1g", "--ioengine=libaio",
        "--iodepth=32", "--direct=1", "--number_ios=100000"]
SYSTEM = {"device": "emmc51-hs400-32g", "precondition": "sequential"}


def cli_once(seed: int) -> float:
    t = time.perf_counter()
    subprocess.run([BIN, "fio", "--device=emmc51-hs400-32g", "--precondition=sequential",
                    *ARGS, f"--randseed={seed}", "--output-format=json"],
                   check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    cli_once(0)
    one = statistics.median(cli_once(s) for s in range(1, 12))
    t = time.perf_counter()
    for s in range(1, 12):
        flashpath.run([*ARGS, f"--randseed={s}"], **SYSTEM)
    in_process = (time.perf_counter() - t) / 11
    ideal = N * one / W
    grid = {"seed": list(range(N))}
    jobs = {"r": [*ARGS, "--randseed={seed}"]}
    print(f"one run: `flashpath fio` {one * 1e3:.1f} ms (median of 11), "
          f"flashpath.run {in_process * 1e3:.1f} ms (mean of 11)")
    print(f"{N} runs / {W} workers at the command line's speed: {ideal:.2f} s")
    t = time.perf_counter()
    local = flashpath.sweep(grid, jobs, workers=W, progress=False, **SYSTEM)
    tl = time.perf_counter() - t
    print(f"sweep, local backend: {tl:.2f} s ({tl / ideal:.3f} of that)")
    import ray

    ray.init(num_cpus=W, include_dashboard=False, log_to_driver=False)
    t = time.perf_counter()
    on_ray = flashpath.sweep(grid, jobs, backend="ray", progress=False, **SYSTEM)
    tr = time.perf_counter() - t
    print(f"sweep, Ray (local instance, started before the clock): {tr:.2f} s "
          f"({tr / ideal:.3f} of that)")
    ray.shutdown()
    assert local.equals(on_ray)
    assert local["error"].isna().all() and len(local) == N


if __name__ == "__main__":
    main()
