"""Each chart rendered to SVG and read back: its axes, labels and series are the data's."""

import os
import subprocess
import sys

import pytest

matplotlib = pytest.importorskip("matplotlib") if not os.environ.get("CI") else __import__(
    "matplotlib")

import flashpath
import flashpath.plot as P
from conftest import SYSTEM

MIB = 2**20


def svg(fig, tmp_path, name):
    path = tmp_path / f"{name}.svg"
    P.save(fig, str(path))
    text = path.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    return text


@pytest.fixture(scope="module")
def compared():
    return flashpath.compare(["--name=w", "--rw=randwrite", "--bs=4k", "--size=16m",
                              "--number_ios=400", "--direct=1", "--ioengine=libaio",
                              "--iodepth=8"],
                             {"driver": ["mmc-legacy", "mmc-hsq"]}, **SYSTEM)


def test_compare_bars(compared, tmp_path):
    fig = P.compare_bars(compared, "iops")
    ax = fig.axes[0]
    assert [b.get_height() for b in ax.patches] == compared["iops"].tolist()
    assert [t.get_text() for t in ax.get_xticklabels()] == compared["config"].tolist()
    assert ax.get_ylabel() == "IOPS (I/Os per second)"
    change = compared["iops_change_pct"].iloc[1]
    notes = [t.get_text() for t in ax.texts]
    assert notes == ["+0.0 %", f"{change:+.1f} %"]
    text = svg(fig, tmp_path, "compare")
    for label in ["driver=mmc-legacy", "driver=mmc-hsq", f"{change:+.1f} %"]:
        assert label in text


def test_sweep_lines(tmp_path):
    job = "[r]\nrw=randread\nbs=4k\nsize={range}\nnumber_ios=300\ndirect=1\n"
    df = flashpath.sweep({"driver": ["mmc-legacy", "mmc-hsq"], "range": ["4g", "16m", "256m"]},
                         {"rr": job}, progress=False, **SYSTEM)
    fig = P.sweep_lines(df, "range", "bw_bytes", line="driver")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16m", "256m", "4g"]
    for line, driver in zip(ax.get_lines(), ["mmc-legacy", "mmc-hsq"]):
        rows = df[df["driver"] == driver].set_index("range")
        assert list(line.get_xdata()) == [16 * MIB, 256 * MIB, 4096 * MIB]
        assert list(line.get_ydata()) == [rows.loc[r, "bw_bytes"] / MIB
                                          for r in ["16m", "256m", "4g"]]
        assert line.get_label() == f"driver={driver}"
    assert ax.get_ylabel() == "bandwidth (MiB/s)" and ax.get_xlabel() == "range"
    assert "driver=mmc-hsq" in svg(fig, tmp_path, "sweep")


def test_span_bars(tmp_path):
    runs = {rw: flashpath.run([f"--name={rw}", f"--rw={rw}", "--bs=4k", "--size=16m",
                               "--number_ios=300", "--direct=1"], **SYSTEM)
            for rw in ("randread", "randwrite")}
    fig = P.span_bars(runs)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    want = []
    for part in ("pre", "hw", "post"):
        for rw, r in runs.items():
            s = r.spans()
            want.append(s[(s["dir"] == "all") & (s["span"] == part)]["mean_ns"].iloc[0] / 1e3)
    assert heights == pytest.approx(want)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "request-pre", "hardware", "request-post"]
    text = svg(fig, tmp_path, "spans")
    assert "request-pre" in text and "randwrite" in text


def test_latency_cdf(tmp_path):
    r = flashpath.run(["--name=r", "--rw=randread", "--bs=4k", "--size=1g", "--number_ios=2000",
                       "--direct=1", "--iodepth=4", "--ioengine=libaio"], **SYSTEM)
    fig = P.latency_cdf({"qd4": r})
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    bins = sorted((int(k), v) for k, v in r.jobs[0]["read"]["clat_ns"]["bins"].items())
    assert list(line.get_xdata())[1:] == [ns / 1e3 for ns, _ in bins]
    ys = list(line.get_ydata())
    assert ys[0] == 0 and ys[-1] == 1 and ys == sorted(ys)
    assert line.get_label() == "qd4 r read"
    assert ax.get_xlabel() == "completion latency (µs)"
    assert "qd4 r read" in svg(fig, tmp_path, "cdf")


def test_validate_scatter(tmp_path):
    df = flashpath.validate(only="hsq-rand", in_sample=True)
    fig = P.validate_scatter(df)
    ax = fig.axes[0]
    pts = sorted(tuple(p) for c in ax.collections for p in c.get_offsets())
    figs = df[df["kind"] == "figure"]
    assert pts == sorted(zip(figs["published"], figs["simulated"]))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("in sample") for label in labels)
    assert ax.get_xlabel() == "published" and ax.get_ylabel() == "simulated"
    assert "simulated = published" in svg(fig, tmp_path, "validate")


def test_the_command_lines_plot_option(flashpath_bin, tmp_path):
    out = tmp_path / "c.svg"
    env = {**os.environ, "FLASHPATH_PYTHON": sys.executable}
    p = subprocess.run([flashpath_bin, "compare", "--vary", "driver=mmc-legacy,mmc-hsq",
                        "--plot", str(out), "--device=emmc51-hs400-32g",
                        "--precondition=sequential", "--name=w", "--rw=randwrite", "--bs=4k",
                        "--size=16m", "--number_ios=200", "--direct=1"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "driver=mmc-hsq" in text and "IOPS" in text
    out = tmp_path / "v.svg"
    p = subprocess.run([flashpath_bin, "validate", "--only", "hsq-randread", "--in-sample",
                        "--plot", str(out)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "simulated against published" in out.read_text()


def test_calibration_fit(tmp_path):
    board = []
    for name, rw, bs in (("rr", "randread", "4k"), ("sr", "read", "128k")):
        r = flashpath.run([f"--name={name}", f"--rw={rw}", f"--bs={bs}", "--size=64m",
                           "--number_ios=300", "--direct=1"],
                          set={"device.nand.t_read": "80us"}, **SYSTEM)
        path = tmp_path / f"{name}.json"
        path.write_text(__import__("json").dumps(r.json))
        board.append(path)
    cal = flashpath.calibrate(board, tmp_path / "fit.toml", fit=["device.nand.t_read"],
                              extra=["--max-evals", "15"], **SYSTEM)
    (field,) = cal.fields.to_dict("records")
    assert field["field"] == "device.nand.t_read" and field["preset"] == "54us"
    assert 75 < float(field["fitted"].removesuffix("us")) < 85
    assert cal.chi2[1] < cal.chi2[0]
    assert "calibrated" in (tmp_path / "fit.toml").read_text()
    assert "fitted fields" in cal.text
    fig = P.calibration_fit(cal)
    ax = fig.axes[0]
    pre, fit = ax.collections[-2], ax.collections[-1]
    figs = cal.figures
    want_pre = ((figs["preset"] / figs["measured"] - 1) * 100).tolist()
    want_fit = ((figs["fitted"] / figs["measured"] - 1) * 100).tolist()
    assert [p[0] for p in pre.get_offsets()] == pytest.approx(want_pre)
    assert [p[0] for p in fit.get_offsets()] == pytest.approx(want_fit)
    ticks = {t.get_position()[1]: t.get_text() for t in ax.get_yticklabels()}
    assert [ticks[y] for y in sorted(ticks, reverse=True)] == figs["measurement"].tolist()
    text = svg(fig, tmp_path, "calibration")
    assert "device.nand.t_read 54us" in text and "at the fit" in text
