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
import stat
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcpwatch.errors import UserError

BASELINE_ENV = "MCPWATCH_BENCH_BASELINE"
ORDER = ("this", "baseline", "baseline", "this")
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
HOW = "point it at another checkout, e.g. `git worktree add --detach /tmp/base HEAD~1`"


def _package_root(directory: Path, env: str = BASELINE_ENV) -> Path:
    """The directory holding the `mcpwatch` package that DIR's Python would import, checked, not assumed."""
    if not (directory / "mcpwatch" / "__init__.py").is_file():
        raise UserError(f"{env}={directory}: it holds no mcpwatch package to compare with; {HOW}")
    _check_owned(directory, env)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import mcpwatch, os; print(os.path.dirname(os.path.dirname(mcpwatch.__file__)))"],
            cwd=directory,
            env={**os.environ, "PYTHONPATH": str(directory)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        raise UserError(f"{env}={directory}: importing its mcpwatch took over 60 s; {HOW}") from None
    found = Path(probe.stdout.strip() or ".").resolve()
    if probe.returncode != 0 or found != directory.resolve():
        raise UserError(f"{env}={directory}: it holds no mcpwatch package to compare with; {HOW}")
    return directory


def _check_owned(directory: Path, env: str) -> None:
    """Refuse a checkout that someone else could change before its code runs as this user: DIR and everything in
    its package must be this user's (or root's) and writable by no one else, and no folder above it may let another
    user move it (a `/tmp/base` another user made first, and `git worktree add` filled, would let them swap a module
    under the benchmark)."""
    me = os.geteuid()
    for above in reversed(directory.resolve().parents):
        info = _stat(above)
        if info is not None and (
            info.st_uid not in (me, 0) or (info.st_mode & _OTHERS_WRITE and not info.st_mode & stat.S_ISVTX)
        ):
            raise UserError(
                f"{env}={directory}: the folder {above} above it is another user's or writable by others, "
                f"who could swap the checkout run as you; use a checkout of your own: {HOW}"
            )
    for path in [directory, *_tree(directory / "mcpwatch")]:
        info = _stat(path)
        if info is None:
            continue  # gone meanwhile, or unreadable: the import tells
        if info.st_uid not in (me, 0):
            raise UserError(
                f"{env}={directory}: {path} belongs to another user (uid {info.st_uid}), whose code would "
                f"run as you; use a checkout of your own: {HOW}"
            )
        if info.st_mode & _OTHERS_WRITE:
            raise UserError(
                f"{env}={directory}: {path} is writable by other users (mode "
                f"{stat.S_IMODE(info.st_mode):04o}), who could change the code run as you; "
                f"fix it with `chmod -R go-w {directory}`"
            )


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _tree(root: Path) -> list[Path]:
    """`root` and every directory and file under it (a symlink's target is what `stat` checks)."""
    found = [root]
    for folder, folders, files in os.walk(root):
        found += [Path(folder, name) for name in (*folders, *files)]
    return found


def baseline_root(env: str = BASELINE_ENV) -> str | None:
    """The checkout the variable `env` names (`MCPWATCH_BENCH_BASELINE`'s by default), checked to hold a package
    of this user's to run; None when unset."""
    directory = os.environ.get(env)
    return str(_package_root(Path(directory).expanduser(), env)) if directory else None


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
