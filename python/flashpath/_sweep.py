"""sweep: many configurations × jobs, on this machine's cores or on Ray, as one
DataFrame; saved as it goes and resumed from what was saved."""

from __future__ import annotations

import itertools
import json
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Iterable, Mapping, Sequence

from . import _api
from ._api import SYSTEM_KEYS, Error


def _configurations(grid: Any) -> list[dict]:
    """A grid (key → values: every combination, the first key outermost) or a list of
    configurations (dicts), as a list of dicts."""
    if isinstance(grid, Mapping):
        keys = list(grid)
        values = []
        for k in keys:
            v = grid[k]
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise Error(f"sweep: grid['{k}'] must be a list of values, not {v!r}")
            v = list(v)
            if not v:
                raise Error(f"sweep: grid['{k}'] has no values")
            values.append(v)
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    if isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        confs = []
        for i, c in enumerate(grid):
            if not isinstance(c, Mapping):
                raise Error(f"sweep: configuration {i} must be a dict, not {c!r}")
            confs.append(dict(c))
        if not confs:
            raise Error("sweep: the grid has no configurations")
        return confs
    raise Error("sweep: grid must be a dict of key → values or a list of configurations")


def _named_jobs(jobs: Any) -> list[tuple[str, Any]]:
    """The jobs as (name, job): a dict's keys, else one job named after its file."""
    if isinstance(jobs, Mapping):
        if not jobs:
            raise Error("sweep: no jobs")
        return [(str(k), v) for k, v in jobs.items()]
    if isinstance(jobs, (str, os.PathLike)) and "\n" not in str(jobs) \
            and os.path.isfile(jobs):
        name = os.path.splitext(os.path.basename(os.fspath(jobs)))[0]
        return [(name, jobs)]
    return [("job", jobs)]


def _job_spec(job: Any, params: dict) -> Any:
    """The job with the configuration's job parameters put in its ``{key}``
    placeholders: a text or a list of arguments (a file's path is made absolute, so a
    worker elsewhere on a shared file system finds it)."""

    def fill(s: str) -> str:
        for k, v in params.items():
            s = s.replace("{" + k + "}", _api._value(v))
        return s

    if isinstance(job, os.PathLike) or (isinstance(job, str) and "\n" not in job
                                        and not job.lstrip().startswith("[")):
        path = os.path.abspath(os.fspath(job))
        if params and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if any("{" + k + "}" in text for k in params):
                return fill(text)
        return path
    if isinstance(job, str):
        return fill(job)
    if isinstance(job, (list, tuple)):
        return [fill(_api._str_arg(a)) for a in job]
    raise TypeError(f"flashpath: a job must be a path, a text or a list, not {type(job).__name__}")


def _uses(job: Any, key: str) -> bool:
    mark = "{" + key + "}"
    if isinstance(job, (list, tuple)):
        return any(mark in str(a) for a in job)
    if isinstance(job, os.PathLike) or (isinstance(job, str) and os.path.isfile(job)):
        with open(job, encoding="utf-8") as f:
            return mark in f.read()
    return isinstance(job, str) and mark in job


def _split(config: dict, base: dict, labels: Sequence[str]) -> tuple[dict, dict]:
    """A configuration's system keyword arguments (with ``base``'s under them) and its
    job parameters (its ``labels`` are neither)."""
    system = {k: v for k, v in base.items() if k != "set"}
    sets = dict(base.get("set") or {})
    params = {}
    for k, v in config.items():
        if k in labels:
            continue
        if k in SYSTEM_KEYS:
            system[k] = v
        elif k.startswith("device.") or k.startswith("host."):
            sets[k] = v
        else:
            params[k] = v
    if sets:
        system["set"] = sets
    return system, params


def _task(spec: dict, stop=None) -> dict:
    """Runs one configuration's job: its rows, or its error (a worker's function, on
    this machine's threads or as a Ray task). A run that ``stop`` ended raises
    KeyboardInterrupt: it is not a result."""
    try:
        r = _api.run(spec["job"], **spec["system"], _stop=stop)
    except Error as e:
        return {"rows": [], "error": str(e)}
    if r.interrupted:
        raise KeyboardInterrupt
    error = None
    if r.status != 0:
        error = f"fio exit status {r.status}" + (f": {' / '.join(r.notes)}" if r.notes else "")
    return {"rows": r.rows(), "error": error}


def _key(spec: dict) -> str:
    return json.dumps({"config": spec["config"], "job": spec["name"], "spec": spec["job"],
                       "system": spec["system"]}, sort_keys=True, default=str)


def _load_saved(path: str) -> dict[str, dict]:
    saved: dict[str, dict] = {}
    if not os.path.exists(path):
        return saved
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                saved[rec["key"]] = rec["result"]
            except (ValueError, KeyError, TypeError):
                # A line cut by an interruption: its task runs again.
                continue
    return saved


def sweep(grid: Any, jobs: Any, *, backend: str = "local", workers: int | None = None,
          save: str | os.PathLike | None = None, progress: bool = True,
          ray_address: str | None = None, labels: Sequence[str] = (), **system: Any):
    """Runs every configuration of ``grid`` with every job of ``jobs``; returns a
    pandas DataFrame with one row per configuration, job and direction.

    ``grid`` is a dict of key → values (every combination, the first key outermost)
    or a list of configurations (dicts). A key is a system keyword of :func:`run`
    (``device``, ``host``, ``driver``, ``precondition``, ``costs_above_block``), a
    preset field (``device.map_cache.size``, ``host.cores``), or a job parameter: a
    name the jobs use as ``{name}`` in their text or arguments (``size={range}``), or a
    column only, named in ``labels`` (a value to plot by that the configuration's other
    keys decide). Any other key is an error: a misspelt key would vary nothing.
    ``jobs`` is one job (as :func:`run` takes) or a dict of name → job. The other
    keyword arguments choose the system under every configuration.

    ``backend="local"`` runs ``workers`` simulations at once in this process's threads
    (default: the machine's cores); ``backend="ray"`` sends each configuration's job as
    a Ray task to ``ray.init(address=ray_address)`` (a local instance by default, or an
    existing cluster's address; workers need flashpath installed and the job files at
    the same paths). Both give the same rows in the same order.

    A configuration that fails is a row with its ``error`` and no figures; the others'
    rows are kept. With ``save``, each finished configuration's rows are appended to
    that file (JSON lines) and a later sweep with the same file runs only what is not
    saved there (failures run again). ``progress`` shows a tqdm bar."""
    import pandas as pd

    if backend not in ("local", "ray"):
        raise Error(f"sweep: backend '{backend}': expected 'local' or 'ray'")
    if workers is not None and workers < 1:
        raise Error(f"sweep: workers={workers}: at least 1")
    unknown = [k for k in system if k not in SYSTEM_KEYS + ("set",)]
    if unknown:
        raise TypeError(f"sweep() got unexpected keyword arguments {unknown}")
    confs = _configurations(grid)
    named = _named_jobs(jobs)
    for k in {k for c in confs for k in c}:
        if k in SYSTEM_KEYS or k.startswith("device.") or k.startswith("host.") \
                or k in labels:
            continue
        if not any(_uses(j, k) for _, j in named):
            raise Error(
                f"sweep: grid key '{k}' is not a system key ({', '.join(SYSTEM_KEYS)}), "
                f"a preset field (device.*, host.*), a parameter a job uses as {{{k}}}, "
                "or a column named in labels=")
    specs = []
    for c in confs:
        sysargs, params = _split(c, system, labels)
        for name, job in named:
            specs.append({"config": {k: _plain(v) for k, v in c.items()}, "name": name,
                          "job": _job_spec(job, params), "system": sysargs})
    keys = [_key(s) for s in specs]
    saved = _load_saved(os.fspath(save)) if save is not None else {}
    results: list[dict | None] = [
        saved[k] if k in saved and saved[k].get("error") is None else None for k in keys]
    todo = [i for i, r in enumerate(results) if r is None]
    bar = _bar(progress, len(specs), len(specs) - len(todo))
    lock = threading.Lock()
    out = open(os.fspath(save), "a", encoding="utf-8") if save is not None else None

    def done(i: int, res: dict) -> None:
        results[i] = res
        with lock:
            if out is not None:
                out.write(json.dumps({"key": keys[i], "result": res}) + "\n")
                out.flush()
            if bar is not None:
                bar.update(1)
                if res.get("error"):
                    bar.set_postfix_str(f"{sum(1 for r in results if r and r.get('error'))} failed")

    try:
        if backend == "local":
            _run_local(specs, todo, workers or os.cpu_count() or 1, done)
        else:
            _run_ray(specs, todo, ray_address, done)
    finally:
        if out is not None:
            out.close()
        if bar is not None:
            bar.close()
    rows = []
    for s, res in zip(specs, results):
        base = {**s["config"], "job": s["name"]}
        if res is None:
            continue
        if res.get("error") is not None and not res["rows"]:
            rows.append({**base, "error": res["error"]})
            continue
        for r in res["rows"]:
            fio_job = r.pop("job")
            rows.append({**base, "fio_job": fio_job, **r, "error": res.get("error")})
    return pd.DataFrame(rows)


def _plain(v: Any) -> Any:
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return v


def _bar(progress: bool, total: int, initial: int):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="flashpath sweep", unit="run")


def _run_local(specs: list[dict], todo: list[int], workers: int, done) -> None:
    cancel = threading.Event()

    def one(i: int) -> dict:
        if cancel.is_set():
            raise KeyboardInterrupt
        return _task(specs[i], cancel.is_set)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, i): i for i in todo}
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in finished:
                    try:
                        res = f.result()
                    except KeyboardInterrupt:
                        continue
                    done(futures[f], res)
        except KeyboardInterrupt:
            cancel.set()
            for f in futures:
                f.cancel()
            raise


def _run_ray(specs: list[dict], todo: list[int], address: str | None, done) -> None:
    try:
        import ray
    except ImportError:
        raise Error("sweep: backend='ray' needs Ray (pip install 'ray')") from None
    if not ray.is_initialized():
        if address is None:
            # A local instance, quiet: the sweep's rows and bar say what happened.
            ray.init(log_to_driver=False, include_dashboard=False)
        else:
            ray.init(address=address)
    remote = ray.remote(num_cpus=1)(_task)
    refs = {remote.remote(specs[i]): i for i in todo}
    try:
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    res = ray.get(ref)
                except Exception as e:  # a worker that died: its row says so
                    res = {"rows": [], "error": f"ray: {type(e).__name__}: {e}"}
                done(refs[ref], res)
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
