"""The examples (examples/*.py) run, shortened (FLASHPATH_EXAMPLES_QUICK=1), and draw
their charts."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

EXAMPLES = {
    "hsq_before_after.py": ["hsq_before_after.svg"],
    "map_cache_sweep.py": ["map_cache_sweep.svg"],
    "hpb_sweep.py": ["hpb_sweep.svg", "hpb_latency_cdf.svg"],
    "request_spans.py": ["request_spans.svg"],
    "ray_sweep.py": ["ray_sweep.svg"],
    "calibrate_fit.py": ["calibration_fit.svg"],
}


def test_every_example_is_listed():
    found = {p.name for p in (REPO / "examples").glob("*.py") if not p.name.startswith("_")}
    assert found == set(EXAMPLES)


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs_and_draws(script, tmp_path):
    if script == "ray_sweep.py" and not os.environ.get("CI"):
        pytest.importorskip("ray")
    env = {**os.environ, "FLASHPATH_EXAMPLES_QUICK": "1", "FLASHPATH_PROGRESS": "0"}
    env.pop("RAY_ADDRESS", None)
    p = subprocess.run([sys.executable, str(REPO / "examples" / script), str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    for chart in EXAMPLES[script]:
        text = (tmp_path / chart).read_text()
        assert "<svg" in text
        assert f"chart: {tmp_path / chart}" in p.stdout
