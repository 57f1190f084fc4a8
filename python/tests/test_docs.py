"""Runs docs/python.md's walk-through: every ```python block, in order, in
one namespace (the notebook-style example must stay true)."""

import os
import re

from conftest import REPO


def test_docs_walkthrough_runs(capsys, tmp_path, monkeypatch):
    text = open(os.path.join(REPO, "docs", "python.md"), encoding="utf-8").read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 10
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/python.md block {i + 1}", "exec"), ns)
    out = capsys.readouterr().out
    assert "refused: experience" in out  # MissingBoundsError names the column
    assert "region - " in out  # DataError names the column
    assert "refused: dplearn: --ledger" in out  # BudgetExceededError
    assert ns["ledger"].spent == (0.75, 1e-6)
