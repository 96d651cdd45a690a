"""Each xdist worker imports every test module, and in a fresh checkout each one re-runs pytest's assertion rewriting
of all of them at once (≈ 5 CPU-s a worker, 40 of the suite's CPU-s with eight workers on two cores). The controller
does it once, on every core, before the workers start; they then read the rewritten bytecode pytest caches.

What this leans on (pytest's private `_pytest.assertion.rewrite`: `_rewrite_test`, `_write_pyc_fp`, `_read_pyc`,
`PYC_TAIL`, `get_cache_dir`) is checked by `tests/unit/test_bytecode_warmup.py`; if pytest moves it, the warm-up
does nothing and each worker rewrites as before."""

from __future__ import annotations

import compileall
import fnmatch
import os
import re
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

try:
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc_fp, get_cache_dir
except ImportError:  # another pytest: the workers rewrite as they always did
    PYC_TAIL = ""

_config: Any = None  # the controller's config, inherited by the forked rewriters


def rewritten_pyc(source: Path) -> Path:
    """Where pytest caches a test module's rewritten bytecode."""
    return get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)


def rewritten_by_pytest(folder: Path, patterns: Iterable[str]) -> list[Path]:
    """The modules pytest rewrites when it imports them: conftest files and files named like tests."""
    wanted = [*patterns, "conftest.py"]
    return sorted(p for p in folder.rglob("*.py") if any(fnmatch.fnmatch(p.name, pattern) for pattern in wanted))


def _stale(source: Path) -> bool:
    return _read_pyc(source, rewritten_pyc(source)) is None


def _rewrite(source: Path) -> None:
    """Rewrite one module and cache it atomically (a worker may read it at any moment: it sees all or nothing)."""
    stat, code = _rewrite_test(source, _config)
    pyc = rewritten_pyc(source)
    pyc.parent.mkdir(exist_ok=True)
    partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
    with open(partial, "wb") as out:
        _write_pyc_fp(out, stat, code)
    os.replace(partial, pyc)


def warm(config: Any, folder: Path) -> int:
    """Rewrite and cache every stale test module under `folder`, and compile the rest of it and mcpwatch; returns how
    many modules were rewritten. Cheap when everything is cached (a header read per module)."""
    global _config
    if not PYC_TAIL or sys.dont_write_bytecode:
        return 0
    stale = [p for p in rewritten_by_pytest(folder, config.getini("python_files")) if _stale(p)]
    cores = len(os.sched_getaffinity(0))
    if stale:
        _config = config
        with ProcessPoolExecutor(min(cores, len(stale)), mp_context=get_context("fork")) as pool:
            list(pool.map(_rewrite, stale, chunksize=8))
    import mcpwatch

    names = [re.escape(p).replace(r"\*", "[^/]*") for p in [*config.getini("python_files"), "conftest.py"]]
    tests = re.compile(f"/(?:{'|'.join(names)})$")
    compileall.compile_dir(folder, rx=tests, quiet=2, workers=cores)  # the helpers' plain bytecode (once)
    for package in mcpwatch.__path__:  # an editable install's; an installed one was compiled by pip
        compileall.compile_dir(package, quiet=2, workers=cores)
    return len(stale)
