"""Any benchmark against an older checkout in the same run: `MCPWATCH_BENCH_BASELINE=DIR mcpwatch bench NAME`.

A change is judged against what it replaces under the same load, not against a figure from another day: NAME runs
from this checkout and from DIR alternately (this, DIR, DIR, this), each in a fresh process, so a drift in the
machine's load hits both alike. The report holds each side's first figures and, for every number both report, the
ratio of the medians this ÷ DIR: below 1 is less time, fewer bytes, fewer events (or a lower rate).
(`bench wrap` puts the baseline's wrapper beside its other paths instead, call by call.)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpwatch.errors import UserError

BASELINE_ENV = "MCPWATCH_BENCH_BASELINE"
ORDER = ("this", "baseline", "baseline", "this")
HOW = "point it at another checkout, e.g. `git worktree add --detach /tmp/base HEAD~1`"


def _package_root(directory: Path) -> Path:
    """The directory holding the `mcpwatch` package that DIR's Python would import, checked, not assumed."""
    if not (directory / "mcpwatch" / "__init__.py").is_file():
        raise UserError(f"{BASELINE_ENV}={directory}: it holds no mcpwatch package to compare with; {HOW}")
    probe = subprocess.run(
        [sys.executable, "-c", "import mcpwatch, os; print(os.path.dirname(os.path.dirname(mcpwatch.__file__)))"],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": str(directory)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = Path(probe.stdout.strip() or ".").resolve()
    if probe.returncode != 0 or found != directory.resolve():
        raise UserError(f"{BASELINE_ENV}={directory}: it holds no mcpwatch package to compare with; {HOW}")
    return directory


def baseline_root() -> str | None:
    """`MCPWATCH_BENCH_BASELINE`'s directory, checked to hold a package to compare with; None when unset."""
    directory = os.environ.get(BASELINE_ENV)
    return str(_package_root(Path(directory).expanduser())) if directory else None


def _run_once(name: str, quick: bool, package_root: Path) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if key != BASELINE_ENV}
    env["PYTHONPATH"] = str(package_root)
    argv = [sys.executable, "-m", "mcpwatch", "bench", name, *(["--quick"] if quick else [])]
    done = subprocess.run(argv, cwd=package_root, env=env, capture_output=True, text=True)
    try:
        figures = json.loads(done.stdout)
    except json.JSONDecodeError:
        figures = None
    if done.returncode != 0 or not isinstance(figures, dict):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"bench {name} from {package_root} failed ({last}); run it there alone to see why")
    return figures


def numbers(figures: Any, prefix: str = "") -> dict[str, float]:
    """Every number in a benchmark's figures by its dotted path (list items by their `name`, else their index)."""
    if isinstance(figures, bool):
        return {}
    if isinstance(figures, int | float):
        return {prefix: float(figures)}
    if isinstance(figures, dict):
        items: list[tuple[str, Any]] = list(figures.items())
    elif isinstance(figures, list):
        items = [(str(v.get("name", i)) if isinstance(v, dict) else str(i), v) for i, v in enumerate(figures)]
    else:
        return {}
    found: dict[str, float] = {}
    for key, value in items:
        found.update(numbers(value, f"{prefix}.{key}" if prefix else key))
    return found


def ratios(this: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> dict[str, float | None]:
    """this ÷ baseline of the medians, for every number both sides report (None where the baseline's is 0)."""
    ours = [numbers(f) for f in this]
    theirs = [numbers(f) for f in baseline]
    common = sorted(set.intersection(*(set(n) for n in ours + theirs)))
    found: dict[str, float | None] = {}
    for path in common:
        mine = statistics.median(n[path] for n in ours)
        base = statistics.median(n[path] for n in theirs)
        found[path] = float(f"{mine / base:.3g}") if base else None  # 3 significant digits
    return found


def compare(name: str, quick: bool, baseline: str) -> dict[str, Any]:
    """Run NAME from here and from `baseline` alternately; both sides' figures and the ratios between them."""
    roots = {
        "this": Path(__file__).resolve().parents[2],
        "baseline": _package_root(Path(baseline).expanduser()),
    }
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    for side in ORDER:
        runs[side].append(_run_once(name, quick, roots[side]))
    return {
        "baseline": str(roots["baseline"]),
        "order": list(ORDER),
        "ratio_this_to_baseline": ratios(runs["this"], runs["baseline"]),
        "this": runs["this"][0],
        "baseline_figures": runs["baseline"][0],
    }
