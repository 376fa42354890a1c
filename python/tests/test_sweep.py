"""flashpath.sweep: the grid, job parameters, failures in their rows, saving and
resuming, and the same rows on every backend and as the command line gives them."""

import json
import subprocess

import pandas as pd
import pytest

import flashpath
from flashpath import _sweep
from flashpath._api import frame_rows
from conftest import SYSTEM

JOB = "[r]\nrw=randread\nbs=4k\nsize={range}\nnumber_ios=300\ndirect=1\n"


def test_the_grid_runs_every_combination_in_order():
    df = flashpath.sweep({"driver": ["mmc-legacy", "mmc-hsq"], "range": ["16m", "256m"]},
                         {"rr": JOB}, progress=False, **SYSTEM)
    assert df[["driver", "range", "job", "fio_job", "dir"]].values.tolist() == [
        ["mmc-legacy", "16m", "rr", "r", "read"],
        ["mmc-legacy", "256m", "rr", "r", "read"],
        ["mmc-hsq", "16m", "rr", "r", "read"],
        ["mmc-hsq", "256m", "rr", "r", "read"],
    ]
    assert df["ios"].tolist() == [300] * 4
    assert df["error"].isna().all()
    # The job parameter reached the job: the larger range misses the map cache more.
    assert (df["device.map_misses"].iloc[1] > df["device.map_misses"].iloc[0])


def test_a_list_of_configurations_and_preset_fields():
    job = JOB.replace("{range}", "16m")
    df = flashpath.sweep([{"device.nand.t_read": "40us"}, {"device.nand.t_read": "80us"}],
                         job, progress=False, **SYSTEM)
    assert df["device.nand.t_read"].tolist() == ["40us", "80us"]
    assert df["clat_mean_ns"].iloc[1] > df["clat_mean_ns"].iloc[0]
    assert df["job"].tolist() == ["job", "job"]


def test_bad_grids_are_errors():
    with pytest.raises(flashpath.Error, match="grid key 'rnage'"):
        flashpath.sweep({"rnage": ["1g"]}, {"rr": JOB}, progress=False)
    with pytest.raises(flashpath.Error, match="must be a list"):
        flashpath.sweep({"driver": "mmc-hsq"}, {"rr": JOB}, progress=False)
    with pytest.raises(flashpath.Error, match="backend"):
        flashpath.sweep({"driver": ["mmc-hsq"]}, {"rr": JOB}, backend="spark")


def test_a_failed_configuration_is_its_row_and_the_others_are_kept():
    df = flashpath.sweep({"driver": ["mmc-legacy", "ufs", "mmc-hsq"], "range": ["16m"]},
                         {"rr": JOB}, progress=False, **SYSTEM)
    assert df["driver"].tolist() == ["mmc-legacy", "ufs", "mmc-hsq"]
    assert pd.isna(df["error"].iloc[0]) and pd.isna(df["error"].iloc[2])
    assert "driver 'ufs' needs a device with interface = \"ufs\"" in df["error"].iloc[1]
    assert pd.isna(df["iops"].iloc[1]) and df["iops"].iloc[2] > 0


def counted_tasks(monkeypatch, key):
    """The list the sweep's tasks append their configuration's `key` to as they run."""
    ran = []
    real = _sweep._task

    def counting(spec, stop=None):
        ran.append(spec["config"][key])
        return real(spec, stop)

    monkeypatch.setattr(_sweep, "_task", counting)
    return ran


def test_a_saved_sweep_resumes_with_what_is_missing(tmp_path, monkeypatch):
    save = tmp_path / "sweep.jsonl"
    grid = {"driver": ["mmc-legacy", "mmc-hsq"], "range": ["16m"]}
    first = flashpath.sweep(grid, {"rr": JOB}, save=save, progress=False, **SYSTEM)
    assert len(save.read_text().splitlines()) == 2
    ran = counted_tasks(monkeypatch, "driver")
    grid["driver"].append("mmc-hsq-v6")
    again = flashpath.sweep(grid, {"rr": JOB}, save=save, progress=False, **SYSTEM)
    assert ran == ["mmc-hsq-v6"]
    pd.testing.assert_frame_equal(again.iloc[:2].reset_index(drop=True),
                                  first.reset_index(drop=True))
    # A line cut short (an interrupted write) is run again, not an error.
    with open(save, "a") as f:
        f.write('{"key": "cut')
    ran.clear()
    flashpath.sweep(grid, {"rr": JOB}, save=save, progress=False, **SYSTEM)
    assert ran == []


def _cli_rows(bin_, job_path, **system):
    args = flashpath._api.system_args(**system)
    p = subprocess.run([bin_, "fio", *args, str(job_path), "--output-format=json+"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return frame_rows(json.loads(p.stdout))


def test_cli_run_local_and_ray_sweeps_give_identical_figures(flashpath_bin, ray_local,
                                                             tmp_path):
    grid = {"driver": ["mmc-legacy", "mmc-hsq"], "range": ["16m", "256m"]}
    local = flashpath.sweep(grid, {"rr": JOB}, progress=False, **SYSTEM)
    on_ray = flashpath.sweep(grid, {"rr": JOB}, backend="ray", progress=False, **SYSTEM)
    pd.testing.assert_frame_equal(local, on_ray)
    for (_, row), (driver, rng) in zip(local.iterrows(),
                                       [(d, r) for d in grid["driver"] for r in grid["range"]]):
        path = tmp_path / f"{driver}-{rng}.fio"
        path.write_text(JOB.replace("{range}", rng))
        cli = _cli_rows(flashpath_bin, path, driver=driver, **SYSTEM)
        api = flashpath.run(path, driver=driver, **SYSTEM).rows()
        assert cli == api
        (one,) = cli
        for k, v in one.items():
            if k == "job":
                assert row["fio_job"] == v
            else:
                assert row[k] == v, k


def test_ctrl_c_stops_a_sweep_and_it_resumes_from_what_it_saved(tmp_path, monkeypatch, ctrl_c):
    import os
    import signal
    import threading
    import time

    save = tmp_path / "sweep.jsonl"
    job = ("[r]\nrw=randread\nbs=4k\nsize=1g\nnumber_ios={n}\ndirect=1\n"
           "ioengine=libaio\niodepth=8\n")
    grid = {"n": [200_000 + k for k in range(12)]}
    whole = flashpath.sweep(grid, {"rr": job}, workers=2, progress=False, **SYSTEM)
    # Ctrl-C once the first configurations have been saved.
    def interrupt():
        while not save.exists() or not save.read_text().count("\n"):
            if done.is_set():
                return
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    done = threading.Event()
    t = threading.Thread(target=interrupt)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            flashpath.sweep(grid, {"rr": job}, workers=2, save=save, progress=False,
                            **SYSTEM)
    finally:
        done.set()
        t.join()
    saved = len([line for line in save.read_text().splitlines() if line.strip()])
    assert 1 <= saved < 12
    ran = counted_tasks(monkeypatch, "n")
    resumed = flashpath.sweep(grid, {"rr": job}, workers=2, save=save, progress=False,
                              **SYSTEM)
    assert len(ran) == 12 - saved
    pd.testing.assert_frame_equal(resumed, whole)
