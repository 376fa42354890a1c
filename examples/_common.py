"""What the examples share: where their charts go, and how long they run.

``python examples/NAME.py [OUT_DIR]`` writes the example's charts into OUT_DIR (default:
the current directory). ``FLASHPATH_EXAMPLES_QUICK=1`` shortens every run to a few
hundred I/Os: what the tests (python/tests/test_examples.py) use; the figures then show
the mechanism less clearly."""

import os
import sys

QUICK = os.environ.get("FLASHPATH_EXAMPLES_QUICK") == "1"


def out_dir() -> str:
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(d, exist_ok=True)
    return d


def ios(full: int, quick: int = 200) -> int:
    """An I/O count: `full` normally, `quick` in the tests."""
    return quick if QUICK else full
