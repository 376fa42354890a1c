"""docs/python.md cannot drift: its ```python blocks run, in order, in one namespace."""

import os
import re

from conftest import REPO


def test_the_python_blocks_of_the_docs_run(tmp_path, capsys):
    text = (REPO / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    ns: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for b in blocks:
            exec(compile(b, "docs/python.md", "exec"), ns)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "mmc-hsq" in out and "emmc51-hs400-32g" in out
