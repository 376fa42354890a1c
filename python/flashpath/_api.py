"""run, compare, presets, validate and calibrate: each one ``flashpath`` command run in
this process by the native module, its output read back."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from . import _native

Error = _native.FlashpathError
Error.__module__ = "flashpath"

#: The keyword arguments that choose the simulated system, as the command line's
#: flashpath options (``--device`` ...). Preset fields go in ``set``.
SYSTEM_KEYS = ("device", "host", "driver", "precondition", "costs_above_block")


def version() -> str:
    """The version of the flashpath crates the native module was built from."""
    return _native.version()


@dataclass
class CommandResult:
    """What ``flashpath ARGS`` ended with: its exit status, standard output, the lines
    it wrote on standard error, and its error line (``flashpath: error: ...`` without
    the prefix) if it failed."""

    status: int
    stdout: str
    notes: list[str]
    error: str | None = None


def command(args: Sequence[str], check: bool = True, _stop=None,
            _progress=None) -> CommandResult:
    """Runs ``flashpath ARGS`` (without the program's name) in this process: the
    command's exit status, output and standard error's lines. A refused or failed
    command raises :class:`Error` with its one-line message (with ``check=False`` the
    message is the result's ``error``); ``serve`` is refused (it runs as a process of
    its own)."""
    args = [_str_arg(a) for a in args]
    status, out, notes, error = _native.command(args, _stop, _progress)
    if error is not None and check:
        raise Error(error)
    return CommandResult(status, out.decode("utf-8", "replace"), list(notes), error)


def _str_arg(a: Any) -> str:
    if isinstance(a, os.PathLike):
        return os.fspath(a)
    if not isinstance(a, str):
        raise TypeError(f"flashpath: an argument must be a string, not {type(a).__name__} ({a!r})")
    return a


def system_args(
    device: str | os.PathLike | None = None,
    host: str | os.PathLike | None = None,
    driver: str | None = None,
    set: Mapping[str, Any] | None = None,
    precondition: str | None = None,
    costs_above_block: str | None = None,
) -> list[str]:
    """The command line's flashpath options for these keyword arguments."""
    out: list[str] = []
    for key, v in (("--device", device), ("--host", host), ("--driver", driver),
                   ("--precondition", precondition),
                   ("--costs-above-block", costs_above_block)):
        if v is not None:
            out.append(f"{key}={_str_arg(v)}")
    for f, v in (set or {}).items():
        if not (f.startswith("device.") or f.startswith("host.")):
            raise Error(f"set: field '{f}' must start with 'device.' or 'host.'")
        out.append(f"--set={f}={_value(v)}")
    return out


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class _JobArgs:
    """The fio arguments of a job given as a file path, a job file's text or a list of
    fio arguments; a text is written to a temporary file for the run."""

    def __init__(self, job: Any):
        self._dir: tempfile.TemporaryDirectory | None = None
        if isinstance(job, os.PathLike):
            self.args = [os.fspath(job)]
        elif isinstance(job, str):
            if "\n" in job or job.lstrip().startswith("["):
                self._dir = tempfile.TemporaryDirectory(prefix="flashpath-job-")
                path = os.path.join(self._dir.name, "job.fio")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(job if job.endswith("\n") else job + "\n")
                self.args = [path]
            elif os.path.isfile(job):
                self.args = [job]
            else:
                raise Error(
                    f"job '{job}': no such job file (a job is a file's path, a job file's "
                    "text, or a list of fio arguments)"
                )
        elif isinstance(job, (list, tuple)):
            self.args = [_str_arg(a) for a in job]
        else:
            raise TypeError(
                "flashpath: job must be a job file's path, a job file's text or a list of "
                f"fio arguments, not {type(job).__name__}"
            )
        for a in self.args:
            for switch in ("--output-format", "--output", "--status-interval"):
                if a == switch or a.startswith(switch + "="):
                    raise Error(
                        f"{switch}: flashpath.run reads the run's one report itself "
                        "(JSON+); leave it out"
                    )

    def __enter__(self) -> list[str]:
        return self.args

    def __exit__(self, *exc: Any) -> None:
        if self._dir is not None:
            self._dir.cleanup()


DIRS = ("read", "write", "trim")


@dataclass
class Result:
    """One simulated fio run.

    ``json`` is the report exactly as ``flashpath fio --output-format=json+`` prints
    it; the rest are views of it."""

    json: dict
    status: int
    notes: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)

    @property
    def jobs(self) -> list[dict]:
        """fio's job reports (``json["jobs"]``)."""
        return self.json.get("jobs", [])

    @property
    def configuration(self) -> dict:
        """How the simulated system was made: device, host, driver, precondition,
        layout, the ``--set`` fields (``json["flashpath"]["configuration"]``)."""
        return self.json.get("flashpath", {}).get("configuration", {})

    @property
    def counters(self) -> dict[str, dict[str, float]]:
        """The device's and system's counters by group (``device``, ``hpb``, ...)."""
        fp = self.json.get("flashpath", {})
        return {g: v for g, v in fp.items()
                if g not in ("configuration", "interrupted") and isinstance(v, dict)}

    @property
    def interrupted(self) -> bool:
        """The run was stopped (Ctrl-C) before its end; its figures are the time run."""
        return "interrupted" in self.json.get("flashpath", {})

    def spans(self):
        """The time spans of each job (pre / hw / post, blktrace's Q2G ... Q2C) as a
        DataFrame: one row per job, direction (``all`` where the report gives them
        for the job as a whole) and span."""
        import pandas as pd

        rows = []
        for j in self.jobs:
            fp = j.get("flashpath", {})
            for d in ("all",) + DIRS:
                spans = fp.get("spans", {}) if d == "all" else fp.get(d, {}).get("spans", {})
                for name, s in spans.items():
                    rows.append({"job": j["jobname"], "dir": d, "span": name, **s})
        return pd.DataFrame(rows, columns=["job", "dir", "span", "count", "mean_ns",
                                           "p50_ns", "p99_ns", "share"])

    def rows(self) -> list[dict]:
        """:meth:`to_frame`'s rows as dicts."""
        return frame_rows(self.json)

    def to_frame(self):
        """One row per job and direction that did I/O: fio's figures (bandwidth,
        IOPS, latency means and percentiles), the mean of each span, the run's
        counters and its configuration."""
        import pandas as pd

        return pd.DataFrame(self.rows())


class _RunBar:
    """A run's tqdm bar: the share of its phase done, a new bar per phase."""

    def __init__(self):
        self.bar = None
        self.phase = None

    def __call__(self, phase: str, share: float) -> None:
        from tqdm.auto import tqdm

        if phase != self.phase:
            if self.bar is not None:
                # The phase before has ended.
                self.bar.n = 100
                self.bar.refresh()
            self.close()
            self.phase = phase
            self.bar = tqdm(total=100, desc=f"flashpath: {phase}", unit="%",
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
        self.bar.n = round(share * 100, 1)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def frame_rows(report: dict) -> list[dict]:
    """The rows of :meth:`Result.to_frame` for a fio JSON report."""
    fp = report.get("flashpath", {})
    conf = fp.get("configuration", {})
    config_cols = {k: conf[k] for k in ("device", "host", "driver", "precondition")
                   if k in conf}
    counters = {}
    for g, v in fp.items():
        if g in ("configuration", "interrupted") or not isinstance(v, dict):
            continue
        for k, x in v.items():
            if isinstance(x, (int, float)):
                counters[f"{g}.{k}"] = x
    rows = []
    for j in report.get("jobs", []):
        jfp = j.get("flashpath", {})
        for d in DIRS:
            x = j.get(d, {})
            if not x.get("total_ios"):
                continue
            row: dict[str, Any] = {"job": j["jobname"], "dir": d}
            row["ios"] = x["total_ios"]
            row["io_bytes"] = x["io_bytes"]
            row["bw_bytes"] = x["bw_bytes"]
            row["iops"] = x["iops"]
            row["runtime_ms"] = x["runtime"]
            for lat in ("slat", "clat", "lat"):
                s = x.get(f"{lat}_ns", {})
                for stat in ("mean", "min", "max", "stddev"):
                    if stat in s:
                        row[f"{lat}_{stat}_ns"] = s[stat]
                for p, v in s.get("percentile", {}).items():
                    row[f"{lat}_p{_pct_name(p)}_ns"] = v
            spans = jfp.get(d, {}).get("spans") or jfp.get("spans", {})
            for name, s in spans.items():
                row[f"span_{name}_mean_ns"] = s["mean_ns"]
            row.update(counters)
            row.update(config_cols)
            if j.get("error"):
                row["job_error"] = j["error"]
            rows.append(row)
    return rows


def _pct_name(p: str) -> str:
    """fio's percentile key (``99.900000``) as a column's part (``99.9``)."""
    try:
        return f"{float(p):g}"
    except ValueError:
        return p


def run(job: Any, *, device=None, host=None, driver=None, set=None, precondition=None,
        costs_above_block=None, progress: bool = False, _stop=None) -> Result:
    """Simulates fio ``job`` on a system: ``flashpath fio [options] JOB``.

    ``job`` is a job file's path, a job file's text, or a list of fio arguments
    (``["--name=r", "--rw=randread", ...]``). ``device``, ``host`` and ``driver``
    name presets (``presets()``) or preset files; ``set`` maps preset fields to
    values (``{"device.nand.t_read": "60us"}``); ``precondition`` is ``auto``,
    ``random``, ``sequential`` or ``off``; ``costs_above_block`` is ``zero`` or
    ``simulated``. A job that fails (fio's error, a verify failure) is in the result
    (``status``, fio's exit value, and the job's ``error``); a refused job raises
    :class:`Error`. Ctrl-C stops the simulation and raises KeyboardInterrupt.
    ``progress=True`` shows a tqdm bar of the simulation (its preconditioning, then its
    jobs), in a terminal or a notebook."""
    sysargs = system_args(device, host, driver, set, precondition, costs_above_block)
    with _JobArgs(job) as jargs:
        args = ["fio", *sysargs, *jargs, "--output-format=json+"]
        bar = _RunBar() if progress else None
        try:
            c = command(args, _stop=_stop, _progress=bar)
        finally:
            if bar is not None:
                bar.close()
    # fio prints a failed job's error line (`fio: pid=0, err=84/...`) before the
    # report: it is kept with the notes.
    start = 0 if c.stdout.startswith("{") else c.stdout.find("\n{") + 1
    notes = c.notes + [line for line in c.stdout[:start].splitlines() if line]
    try:
        report = json.loads(c.stdout[start:])
    except ValueError as e:
        raise Error(f"the run's report is not JSON ({e}); standard error said: "
                    f"{' / '.join(c.notes)}") from None
    return Result(json=report, status=c.status, notes=notes, args=args[1:])


def compare(job: Any, vary: Mapping[str, Iterable[Any]], **system: Any):
    """``flashpath compare``: ``job`` across the grid of ``vary`` (key → values; keys
    as ``--vary``: driver, device, host or a preset field), on the system of the other
    keyword arguments (as :func:`run`'s). Returns a DataFrame: one row per
    configuration, job and direction, with the configuration's values as columns,
    bandwidth, IOPS, mean and p99 completion latency, and each figure's change from the
    first configuration (``*_change_pct``). Published figures, where the job is a
    shipped reproduction, are in ``df.attrs["published"]``."""
    import itertools

    import pandas as pd

    if not vary:
        raise Error("compare needs at least one axis in vary")
    axes = [(k, [_value(v) for v in vs]) for k, vs in vary.items()]
    for k, vs in axes:
        if not vs:
            raise Error(f"vary {k}: no values")
    sysargs = system_args(**system)
    with _JobArgs(job) as jargs:
        args = ["compare"]
        for k, vs in axes:
            args += ["--vary", f"{k}={','.join(vs)}"]
        c = command([*args, "--json", "-", *sysargs, *jargs])
    out = json.loads(c.stdout)
    combos = list(itertools.product(*[vs for _, vs in axes]))
    values = {cfg["config"]: dict(zip((k for k, _ in axes), combo))
              for cfg, combo in zip(out["configs"], combos)}
    df = pd.DataFrame([{**values[r["config"]], **r} for r in compare_rows(out)])
    df.attrs["published"] = [{**values[cfg["config"]], "config": cfg["config"], **p}
                             for cfg in out["configs"] for p in cfg["published"]]
    return df


def compare_rows(out: Mapping[str, Any]) -> list[dict]:
    """The rows of ``flashpath compare --json``'s output: one per configuration, job and
    direction, with each figure's change from the first configuration."""
    changes = {}
    for ch in out["changes"]:
        for i, v in enumerate(ch["change_pct"]):
            changes[(i, ch["job"], ch["dir"], ch["metric"])] = v
    rows = []
    for i, cfg in enumerate(out["configs"]):
        for j in cfg["jobs"]:
            for d, figs in j["dirs"].items():
                row = {"config": cfg["config"], "job": j["name"], "dir": d, **figs}
                for col, metric in (("bw_bytes", "bw"), ("iops", "iops"),
                                    ("clat_mean_ns", "clat_mean"),
                                    ("clat_p99_ns", "clat_p99")):
                    row[f"{col}_change_pct"] = changes.get((i, j["name"], d, metric))
                rows.append(row)
    return rows


def presets():
    """The shipped presets (``flashpath presets --json``) as a DataFrame: kind, name,
    description, and for each device the hosts and drivers it goes with."""
    import pandas as pd

    return pd.DataFrame(json.loads(command(["presets", "--json"]).stdout))


def validate(only: str | None = None, jobs: str | os.PathLike | None = None,
             in_sample: bool = False):
    """``flashpath validate``: the shipped reproductions simulated against their
    published figures (those whose name contains ``only``; ``jobs``: another
    reproductions directory; ``in_sample``: without the out-of-sample calibrations,
    which take minutes). Returns a DataFrame with one row per check (``kind``: figure,
    range, prediction, comparison, out_of_sample; ``sample``: in-sample, predicted or
    out-of-sample; simulated, published, error_pct, within, verdict).
    ``df.attrs["summary"]`` holds the summary lines and ``df.attrs["failed"]`` the
    command's error line when a check left its tolerance unexpectedly."""
    import pandas as pd

    args = ["validate", "--json", "-"]
    if jobs is not None:
        args += ["--jobs", os.fspath(jobs)]
    if only is not None:
        args += ["--only", only]
    if in_sample:
        args.append("--in-sample")
    c = command(args, check=False)
    if not c.stdout:
        raise Error(c.error or "validate gave no report")
    out = json.loads(c.stdout)
    df = pd.DataFrame(out["records"])
    df.attrs["summary"] = out["summary"]
    df.attrs["failed"] = c.error
    return df


@dataclass
class Calibration:
    """A calibration's fit (``flashpath calibrate``): the fitted preset's path, and as
    DataFrames the fields (preset value, fitted value, 1-sigma interval, physical
    range, what the data say of it), the figures (measured, at the preset, at the
    fit, spread, how many spreads the fit is off) and the predictions (at the fit,
    min, max over the parameter sets that fit)."""

    preset: str
    fields: Any
    figures: Any
    predictions: Any
    chi2: tuple[float, float]
    text: str
    json: dict

    def __str__(self) -> str:
        return self.text


def calibrate(measurements: Sequence[str | os.PathLike], out: str | os.PathLike, *,
              fit: Sequence[str] | None = None, predict: Sequence[str | os.PathLike] = (),
              extra: Sequence[str] = (), **system: Any) -> Calibration:
    """``flashpath calibrate``: fits the device preset's declared estimates to
    ``measurements`` (fio JSON files of a real board, or a TOML of published figures)
    and writes the fitted preset to ``out``. ``fit`` names the fields to fit (else the
    screening picks them), ``predict`` jobs to predict, ``extra`` any other calibrate
    options (``["--max-evals", "40"]``); the system is chosen as for :func:`run`."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="flashpath-calibrate-") as d:
        data_path = os.path.join(d, "fit.json")
        args = ["calibrate", *system_args(**system),
                *[os.fspath(m) for m in measurements], "--out", os.fspath(out),
                "--json", data_path]
        if fit:
            args += ["--fit", ",".join(fit)]
        for p in predict:
            args += ["--predict", os.fspath(p)]
        c = command([*args, *extra])
        with open(data_path, encoding="utf-8") as f:
            data = json.load(f)
    return Calibration(
        preset=os.fspath(out),
        fields=pd.DataFrame(data["fields"]),
        figures=pd.DataFrame(data["figures"]),
        predictions=pd.DataFrame(data["predictions"],
                                 columns=["figure", "at_fit", "min", "max", "sets"]),
        chi2=(data["chi2_preset"], data["chi2_fitted"]),
        text=c.stdout,
        json=data,
    )
