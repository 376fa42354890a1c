"""Charts of flashpath's results (matplotlib), each from the data the package returns:

- :func:`compare_bars`: a before/after bar chart of :func:`flashpath.compare`'s rows;
- :func:`sweep_lines`: a one-axis sweep, one line per value of another column
  (bandwidth against I/O range, one line per driver);
- :func:`span_bars`: the white paper's stacked request-pre / hardware / request-post
  bars, one per workload;
- :func:`latency_cdf`: completion-latency CDFs from fio's JSON+ histogram bins;
- :func:`validate_scatter`: simulated against published, in-sample, predicted and
  out-of-sample figures marked apart;
- :func:`calibration_fit`: each measured figure at the preset's values and at the fit.

Each returns the matplotlib Figure; :func:`save` writes it (SVG keeps its text as text).
``python -m flashpath.plot compare|validate|calibrate INPUT.json OUT`` draws the
command line's ``--json`` outputs (what the commands' ``--plot`` runs).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Mapping, Sequence

#: Figure names and units of the columns people plot.
METRICS = {
    "bw_bytes": ("bandwidth", "MiB/s", 1 / 2**20),
    "iops": ("IOPS", "I/Os per second", 1.0),
    "clat_mean_ns": ("mean completion latency", "µs", 1e-3),
    "clat_p99_ns": ("p99 completion latency", "µs", 1e-3),
    "lat_mean_ns": ("mean total latency", "µs", 1e-3),
}


def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "svg", "pdf") and not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    return plt


def _interactive() -> bool:
    return "ipykernel" in sys.modules


def _metric(metric: str) -> tuple[str, str, float]:
    return METRICS.get(metric, (metric, "", 1.0))


def save(fig, path: str) -> None:
    """Writes ``fig`` to ``path`` (its format from the suffix: .svg, .png, .pdf)."""
    fig.savefig(path, bbox_inches="tight")


def compare_bars(df, metric: str = "iops", title: str | None = None):
    """Bars of ``metric`` per configuration (x) for each job and direction, each bar
    labelled with its change from the first configuration. ``df``:
    :func:`flashpath.compare`'s DataFrame."""
    plt = _plt()
    name, unit, scale = _metric(metric)
    configs = list(dict.fromkeys(df["config"]))
    series = list(dict.fromkeys(zip(df["job"], df["dir"])))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(configs) * max(1, len(series)) ** 0.5), 3.6))
    width = 0.8 / len(series)
    for k, (job, d) in enumerate(series):
        rows = df[(df["job"] == job) & (df["dir"] == d)].set_index("config")
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(configs))]
        ys = [rows.loc[c, metric] * scale if c in rows.index else 0.0 for c in configs]
        bars = ax.bar(xs, ys, width, label=f"{job} {d}")
        change = f"{metric}_change_pct"
        for b, c in zip(bars, configs):
            if c in rows.index and change in rows and not _nan(rows.loc[c, change]):
                pct = rows.loc[c, change]
                ax.annotate(f"{pct:+.1f} %", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(configs)), configs, rotation=15 if len(configs) > 3 else 0)
    ax.set_xlabel("configuration")
    ax.set_ylabel(f"{name} ({unit})" if unit else name)
    ax.set_title(title or f"{name} by configuration")
    if len(series) > 1:
        ax.legend()
    ax.margins(y=0.12)
    return fig


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _size_key(v: Any) -> float:
    """A sweep value's position on its axis: numbers as they are, sizes with fio's
    suffixes (k, m, g, t; KiB ...) as bytes, anything else in its given order."""
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip().lower().rstrip("b").rstrip("i")
    mult = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    try:
        if s and s[-1] in mult:
            return float(s[:-1]) * mult[s[-1]]
        return float(s)
    except ValueError:
        return math.nan


def sweep_lines(df, x: str, metric: str = "bw_bytes", line: str | None = None,
                title: str | None = None, log_x: bool | None = None):
    """``metric`` against the sweep column ``x``, one line per value of ``line`` (a
    column such as ``driver``), from :func:`flashpath.sweep`'s DataFrame. Sizes such as
    ``64m`` and ``4g`` are placed by their bytes; the axis is logarithmic when the
    values span more than a factor of 16 (``log_x`` decides otherwise)."""
    plt = _plt()
    name, unit, scale = _metric(metric)
    ok = df[df["error"].isna()] if "error" in df else df
    fig, ax = plt.subplots(figsize=(6, 3.8))
    groups = [(None, ok)] if line is None else list(ok.groupby(line, sort=False))
    ticks: dict[float, str] = {}
    for value, rows in groups:
        keys = [_size_key(v) for v in rows[x]]
        numeric = not any(math.isnan(k) for k in keys)
        order = sorted(range(len(keys)), key=lambda i: keys[i]) if numeric else range(len(keys))
        xs = [keys[i] if numeric else i for i in order]
        ys = [rows[metric].iloc[i] * scale for i in order]
        ax.plot(xs, ys, marker="o", label=None if line is None else f"{line}={value}")
        ticks.update({xv: str(rows[x].iloc[i]) for xv, i in zip(xs, order)})
    if log_x is None:
        pos = [v for v in ticks if v > 0]
        log_x = bool(pos) and max(pos) / min(pos) > 16
    if log_x:
        ax.set_xscale("log", base=2)
        ax.minorticks_off()
    # The sweep's own values mark the axis, after the scale (which sets its own).
    ax.set_xticks(list(ticks), list(ticks.values()))
    ax.set_xlabel(x)
    ax.set_ylabel(f"{name} ({unit})" if unit else name)
    ax.set_title(title or f"{name} against {x}")
    if line is not None:
        ax.legend()
    ax.grid(alpha=0.3)
    return fig


SPAN_PARTS = (("pre", "request-pre"), ("hw", "hardware"), ("post", "request-post"))


def span_bars(results: Mapping[str, Any] | Any, direction: str | None = None,
              title: str | None = None):
    """The mean request-pre, hardware and request-post times of each workload,
    stacked (µs), with the software share (pre + post) on top of each bar. ``results``
    maps a workload's label to a :class:`flashpath.Result` (its first job's spans are
    used: ``direction``'s where the report splits them), or is a DataFrame of rows
    with ``span_pre_mean_ns``, ``span_hw_mean_ns`` and ``span_post_mean_ns`` and a
    ``label`` column."""
    plt = _plt()
    labels, parts = [], {k: [] for k, _ in SPAN_PARTS}
    if hasattr(results, "columns"):
        for _, r in results.iterrows():
            labels.append(str(r["label"]))
            for k, _ in SPAN_PARTS:
                parts[k].append(r[f"span_{k}_mean_ns"] / 1e3)
    else:
        for label, res in results.items():
            spans = res.spans()
            job = spans["job"].iloc[0]
            s = spans[spans["job"] == job]
            d = direction if direction is not None and (s["dir"] == direction).any() else "all"
            s = s[s["dir"] == d].set_index("span")
            labels.append(label)
            for k, _ in SPAN_PARTS:
                parts[k].append(float(s.loc[k, "mean_ns"]) / 1e3 if k in s.index else 0.0)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(labels) + 1.5), 3.8))
    bottom = [0.0] * len(labels)
    for k, name in SPAN_PARTS:
        ax.bar(labels, parts[k], 0.6, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, parts[k])]
    for i, total in enumerate(bottom):
        if total > 0:
            sw = (parts["pre"][i] + parts["post"][i]) / total * 100
            ax.annotate(f"{sw:.0f} % software", (i, total), ha="center", va="bottom",
                        fontsize=8)
    ax.set_ylabel("mean time per request (µs)")
    ax.set_xlabel("workload")
    ax.set_title(title or "where a request's time goes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.margins(y=0.12)
    return fig


def _cdf_points(clat: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    bins = sorted((int(k), v) for k, v in clat.get("bins", {}).items())
    total = sum(v for _, v in bins)
    # From 0 at the first bin, so that a run of one latency is a step too.
    xs, ys, run = [bins[0][0] / 1e3], [0.0], 0
    for ns, n in bins:
        run += n
        xs.append(ns / 1e3)
        ys.append(run / total)
    return xs, ys


def latency_cdf(results: Mapping[str, Any] | Any, title: str | None = None,
                log_x: bool = True):
    """Completion-latency CDFs (µs) from fio's JSON+ histogram bins: one line per
    label, job and direction. ``results``: a :class:`flashpath.Result` or a dict of
    label → Result."""
    plt = _plt()
    if hasattr(results, "jobs"):
        results = {"": results}
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, res in results.items():
        for j in res.jobs:
            for d in ("read", "write", "trim"):
                clat = j.get(d, {}).get("clat_ns", {})
                if not clat.get("bins"):
                    continue
                xs, ys = _cdf_points(clat)
                name = " ".join(dict.fromkeys(p for p in (label, j["jobname"], d) if p))
                ax.step(xs, ys, where="post", label=name)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("completion latency (µs)")
    ax.set_ylabel("fraction of I/Os")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or "completion latency CDF")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


SAMPLES = (("in-sample", "o", "in sample (presets built on it)"),
           ("predicted", "s", "predicted (not fitted to)"),
           ("out-of-sample", "^", "out of sample (calibrated on before only)"))


def validate_scatter(df, title: str | None = None):
    """Simulated against published for every single published value of
    :func:`flashpath.validate`'s DataFrame (figures and out-of-sample predictions), on
    log axes with the y = x line; in-sample, predicted and out-of-sample figures are
    marked apart, and those outside their tolerance drawn hollow."""
    plt = _plt()
    pts = df[df["kind"].isin(["figure", "out_of_sample"]) & df["published"].notna()]
    fig, ax = plt.subplots(figsize=(5.2, 5.2))
    lo, hi = math.inf, 0.0
    for sample, marker, name in SAMPLES:
        s = pts[pts["sample"] == sample]
        if s.empty:
            continue
        for within, fill in ((True, None), (False, "none")):
            t = s[s["within"] == within]
            if t.empty:
                continue
            label = f"{name}, {'within' if within else 'outside'} tolerance ({len(t)})"
            kw = {"facecolors": fill} if fill else {}
            ax.scatter(t["published"], t["simulated"], marker=marker, label=label,
                       **kw, **({"edgecolors": f"C{[x[0] for x in SAMPLES].index(sample)}"}
                                if fill else {"color": f"C{[x[0] for x in SAMPLES].index(sample)}"}))
        lo = min(lo, s["published"].min(), s["simulated"].min())
        hi = max(hi, s["published"].max(), s["simulated"].max())
    if hi > 0:
        lo = max(lo, hi * 1e-6)
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, label="simulated = published")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("published")
    ax.set_ylabel("simulated")
    ax.set_title(title or "simulated against published")
    ax.legend(fontsize=7)
    return fig


def calibration_fit(cal: Any, title: str | None = None):
    """Each measured figure's error (simulated against measured, %) at the preset's
    values (hollow) and at the fit (filled), an arrow from one to the other, over the
    band of the figure's spread. ``cal``: :func:`flashpath.calibrate`'s result, or the
    command's ``--json`` as a dict."""
    plt = _plt()
    data = cal.json if hasattr(cal, "json") else cal
    figs = data["figures"]
    labels = [f["measurement"] for f in figs]
    pre = [(f["preset"] / f["measured"] - 1) * 100 for f in figs]
    fit = [(f["fitted"] / f["measured"] - 1) * 100 for f in figs]
    spread = [f["spread"] * 100 for f in figs]
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(figs) + 1.6))
    ys = list(range(len(figs)))[::-1]
    for y, s in zip(ys, spread):
        ax.fill_betweenx([y - 0.35, y + 0.35], -s, s, color="0.9", lw=0)
    for y, a, b in zip(ys, pre, fit):
        ax.annotate("", (b, y), (a, y), arrowprops={"arrowstyle": "->", "color": "0.5"})
    ax.scatter(pre, ys, facecolors="none", edgecolors="C3",
               label=f"at the preset (chi2 {data['chi2_preset']:.2f})")
    ax.scatter(fit, ys, color="C0", label=f"at the fit (chi2 {data['chi2_fitted']:.2f})")
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(ys, labels)
    ax.set_xlabel("simulated against measured (%); grey: the figure's spread")
    fields = ", ".join(f"{f['field']} {f['preset']} → {f['fitted']}" for f in data["fields"])
    ax.set_title(title or f"calibration: {fields}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m flashpath.plot compare|validate|calibrate INPUT.json OUT [METRIC]``."""
    import pandas as pd

    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) not in (3, 4) or argv[0] not in ("compare", "validate", "calibrate"):
        print("usage: python -m flashpath.plot compare|validate|calibrate INPUT.json OUT "
              "[METRIC]", file=sys.stderr)
        return 2
    kind, src, dst = argv[:3]
    with open(src, encoding="utf-8") as f:
        out = json.load(f)
    if kind == "compare":
        from ._api import compare_rows

        df = pd.DataFrame(compare_rows(out))
        fig = compare_bars(df, argv[3] if len(argv) == 4 else "iops")
    elif kind == "validate":
        fig = validate_scatter(pd.DataFrame(out["records"]))
    else:
        fig = calibration_fit(out)
    save(fig, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
