"""The controller's warm-up writes the rewritten bytecode pytest itself would write, where pytest looks for it: a
pytest run after it reads that file instead of rewriting the module again (a canary for the private parts of
`_pytest.assertion.rewrite` it uses)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bytecode_warmup
import pytest

SAMPLE = "def test_sample():\n    seen = 1\n    assert seen == 2\n"


def test_a_warmed_module_is_read_by_pytest_as_rewritten_and_not_rewritten_again(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    source = tmp_path / "test_sample.py"
    source.write_text(SAMPLE)
    (tmp_path / "helper.py").write_text("VALUE = 1\n")

    assert bytecode_warmup.PYC_TAIL, "pytest's assertion rewriting moved: the warm-up does nothing"
    assert bytecode_warmup.warm(pytestconfig, tmp_path) == 1
    assert bytecode_warmup.warm(pytestconfig, tmp_path) == 0  # fresh now: nothing rewritten twice
    cache = tmp_path / "__pycache__"
    warmed = {(p.name, p.stat().st_ino) for p in cache.iterdir()}
    plain = f"{sys.implementation.cache_tag}.pyc"
    assert not (cache / f"test_sample.{plain}").exists()  # no plain bytecode for test modules
    assert (cache / f"helper.{plain}").exists()

    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # none of the suite's options or plugins
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--rootdir", tmp_path,
         "-c", tmp_path / "pytest.ini", source],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert "assert 1 == 2" in run.stdout, run.stdout + run.stderr  # the rewritten assertion explained the failure
    # pytest read the warmed file: had it rewritten the module, it would have written a file beside it or replaced it
    assert {(p.name, p.stat().st_ino) for p in cache.iterdir()} == warmed
