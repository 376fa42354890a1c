"""flashpath.run and the commands' wrappers against the command line."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

import flashpath
from conftest import REPO, SMALL, SYSTEM


def cli(bin_, *args):
    return subprocess.run([bin_, *args], capture_output=True, text=True)


def test_run_rows_are_the_reports_figures():
    r = flashpath.run(SMALL, **SYSTEM)
    assert r.status == 0 and not r.interrupted
    df = r.to_frame()
    assert df[["job", "dir", "ios"]].values.tolist() == [["r", "read", 500]]
    read = r.jobs[0]["read"]
    row = df.iloc[0]
    assert row["iops"] == read["iops"]
    assert row["clat_mean_ns"] == read["clat_ns"]["mean"]
    assert row["clat_p99_ns"] == read["clat_ns"]["percentile"]["99.000000"]
    assert row["device.map_hits"] == r.counters["device"]["map_hits"]
    assert row["driver"] == "mmc-legacy" and r.configuration["device"] == "emmc51-hs400-32g"
    spans = r.spans()
    assert set(spans["span"]) >= {"pre", "hw", "post"}
    assert row["span_hw_mean_ns"] == spans.set_index("span").loc["hw", "mean_ns"]
    # The pairing note the command prints on standard error is kept, not printed.
    assert any("runs on host 'sprd-sc9863a'" in n for n in r.notes)


def test_a_job_as_text_as_a_file_and_as_arguments_runs_the_same(tmp_path):
    text = "[r]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=500\ndirect=1\n"
    path = tmp_path / "r.fio"
    path.write_text(text)
    a = flashpath.run(text, **SYSTEM).rows()
    b = flashpath.run(path, **SYSTEM).rows()
    c = flashpath.run(str(path), **SYSTEM).rows()
    d = flashpath.run(SMALL, **SYSTEM).rows()
    assert a == b == c == d


def test_errors_raise_the_command_lines_message(flashpath_bin):
    for args, kw in ((["--name=r", "--rw=bogus"], {}),
                     (SMALL, {"device": "no-such-device"}),
                     (SMALL, {"set": {"device.nand.t_read": "fast"}}),
                     (SMALL, {"driver": "ufs"})):
        with pytest.raises(flashpath.Error) as e:
            flashpath.run(args, **kw)
        sysargs = flashpath._api.system_args(**kw)
        p = cli(flashpath_bin, "fio", *sysargs, *args)
        assert p.returncode == 1
        assert p.stderr.strip().splitlines()[-1] == f"flashpath: error: {e.value}"
    with pytest.raises(flashpath.Error, match="--output-format"):
        flashpath.run([*SMALL, "--output-format=normal"])
    with pytest.raises(flashpath.Error, match="no such job file"):
        flashpath.run("missing.fio")
    with pytest.raises(flashpath.Error, match="must start with 'device.' or 'host.'"):
        flashpath.run(SMALL, set={"nand.t_read": "1us"})
    with pytest.raises(flashpath.Error, match="not embedded"):
        flashpath.command(["serve", "--nbd", "unix:/tmp/x.sock"])


def test_a_failed_job_is_a_result_with_fio_exit_status():
    # A write past the end of a 1 GiB file: fio's ENOSPC-less error path is a job error;
    # a verify run that finds bad data is the same. Here: verify with a bad pattern.
    r = flashpath.run(["--name=v", "--rw=randwrite", "--bs=4k", "--size=1m",
                       "--verify=crc32c", "--verify_fatal=1", "--do_verify=1",
                       "--number_ios=64", "--direct=1",
                       "--verify_only=1"], **SYSTEM)
    assert r.status != 0
    assert r.jobs[0]["error"] != 0


LONG = ["--name=r", "--rw=randread", "--bs=4k", "--size=1g", "--time_based",
        "--runtime=1000", "--direct=1"]


def test_stop_ends_a_run_as_interrupted():
    t = time.monotonic()
    c = flashpath.command(["fio", "--precondition=sequential", *LONG,
                           "--output-format=json"], _stop=lambda: True)
    assert time.monotonic() - t < 5
    assert c.status == 128
    assert "interrupted" in json.loads(c.stdout)["flashpath"]


def test_ctrl_c_stops_the_simulation_and_raises_keyboard_interrupt(ctrl_c):
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        flashpath.run(LONG, precondition="sequential")
    assert time.monotonic() - t < 5
    # The next run is not stopped by the old signal.
    assert flashpath.run(SMALL, **SYSTEM).status == 0


def test_ctrl_c_stops_a_command_that_simulates_in_worker_threads(ctrl_c):
    # validate runs its reproductions on all cores; a minute or more without a stop.
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        flashpath.validate(in_sample=True)
    assert time.monotonic() - t < 10
    assert flashpath.run(SMALL, **SYSTEM).status == 0


def test_a_runs_progress_bar_ends_each_phase_whole(capsys):
    r = flashpath.run(LONG[:-3] + ["--number_ios=400000", "--direct=1"],
                      device="emmc51-hs400-32g", precondition="random",
                      set={"device.geometry.capacity": "2GiB"}, progress=True)
    assert r.status == 0
    err = capsys.readouterr().err.replace("\r", "\n")
    for phase in ("precondition", "jobs"):
        shown = [line for line in err.splitlines() if f"flashpath: {phase}:" in line]
        assert shown and "100%" in shown[-1], err[-2000:]


def test_an_exception_in_the_progress_display_stops_the_run():
    def broken(phase, share):
        raise ValueError("display broke")

    t = time.monotonic()
    with pytest.raises(ValueError, match="display broke"):
        flashpath.command(["fio", "--precondition=sequential", *LONG,
                           "--output-format=json"], _progress=broken)
    assert time.monotonic() - t < 5


def test_the_gil_is_released_while_simulating():
    count = 0
    running = True

    def spin():
        nonlocal count
        while running:
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        start = count
        flashpath.run([*SMALL[:-2], "--number_ios=100000", "--direct=1"], **SYSTEM)
        ran = count - start
    finally:
        running = False
        t.join()
    # With the GIL held for the whole run, the other thread would count almost nothing.
    assert ran > 100_000, ran


def test_presets_match_the_command_line(flashpath_bin):
    df = flashpath.presets()
    listed = cli(flashpath_bin, "presets").stdout
    for _, p in df.iterrows():
        assert p["name"] in listed and p["description"] in listed
    emmc = df.set_index("name").loc["emmc51-hs400-32g"]
    assert emmc["kind"] == "device" and "mmc-hsq" in emmc["drivers"]
    assert "sprd-sc9863a" in emmc["hosts"]
    assert (df["kind"] == "host").any()


def test_compare_is_the_command_lines_compare(flashpath_bin, tmp_path):
    job = tmp_path / "w.fio"
    job.write_text("[w]\nrw=randwrite\nbs=4k\nsize=16m\nnumber_ios=400\ndirect=1\n"
                   "iodepth=8\nioengine=libaio\n")
    df = flashpath.compare(job, {"driver": ["mmc-legacy", "mmc-hsq"]}, **SYSTEM)
    p = cli(flashpath_bin, "compare", "--vary", "driver=mmc-legacy,mmc-hsq", "--json", "-",
            "--device=emmc51-hs400-32g", "--precondition=sequential", str(job))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert df["driver"].tolist() == ["mmc-legacy", "mmc-hsq"]
    for (_, row), cfg in zip(df.iterrows(), out["configs"]):
        assert row["iops"] == cfg["jobs"][0]["dirs"]["write"]["iops"]
    assert df["iops_change_pct"].iloc[0] == 0
    assert df["iops_change_pct"].iloc[1] == pytest.approx(
        (df["iops"].iloc[1] / df["iops"].iloc[0] - 1) * 100)


def test_validate_gives_a_row_per_check(flashpath_bin):
    df = flashpath.validate(only="hsq-randread", in_sample=True)
    p = cli(flashpath_bin, "validate", "--only", "hsq-randread", "--in-sample")
    figures = df[df["kind"] == "figure"]
    assert len(figures) > 0
    for _, f in figures.iterrows():
        assert f"{f['simulated']:.2f}" in p.stdout
        assert f["sample"] in ("in-sample", "predicted")
    assert df.attrs["summary"][0] in p.stdout
    assert (df.attrs["failed"] is None) == (p.returncode == 0)
