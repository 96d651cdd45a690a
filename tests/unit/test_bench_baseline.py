"""`MCPWATCH_BENCH_BASELINE=DIR mcpwatch bench NAME`: the same benchmark from another checkout, in the same run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpwatch.bench.baseline import compare, numbers, ratios
from mcpwatch.errors import UserError

from checkout import REPO


def fake_checkout(root: Path, main: str) -> Path:
    """A directory holding an `mcpwatch` package of its own, whose `python -m mcpwatch` is `main`."""
    package = root / "mcpwatch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(textwrap.dedent(main))
    return root


def test_numbers_are_found_by_path_and_ratios_use_both_sides_medians() -> None:
    figures = {"a": 2, "ok": True, "name": "x", "nested": {"b": 1.5}, "figures": [{"name": "lookup", "value": 4}, 8]}
    assert numbers(figures) == {"a": 2.0, "nested.b": 1.5, "figures.lookup.value": 4.0, "figures.1": 8.0}
    this = [{"t": 2, "only_here": 1}, {"t": 4}]
    base = [{"t": 6, "z": 0}, {"t": 6, "z": 0}]
    assert ratios(this, base) == {"t": 0.5}
    assert ratios([{"z": 1}], [{"z": 0}]) == {"z": None}


@pytest.mark.bench
def test_the_baseline_side_really_runs_the_other_checkouts_package(tmp_path: Path) -> None:
    baseline = fake_checkout(
        tmp_path / "old",
        """
        import json, sys
        assert sys.argv[1:] == ["bench", "core", "--quick"], sys.argv
        print(json.dumps({"benchmark": "core", "figures": [{"name": "cached policy resolution", "value": -1.0}]}))
        """,
    )
    report = compare("core", True, str(baseline))
    assert report["order"] == ["this", "baseline", "baseline", "this"]
    assert report["baseline_figures"]["figures"] == [{"name": "cached policy resolution", "value": -1.0}]
    ours = next(f["value"] for f in report["this"]["figures"] if f["name"] == "cached policy resolution")
    ratio = report["ratio_this_to_baseline"]["figures.cached policy resolution.value"]
    assert ours > 0 and ratio < 0  # the real benchmark ran on this side, the fake on the baseline side


def test_a_failing_baseline_is_one_line_naming_it(tmp_path: Path) -> None:
    baseline = fake_checkout(tmp_path / "broken", "import sys; sys.exit('ImportError: no module named gone')")
    with pytest.raises(UserError, match=r"bench core from .*broken failed \(ImportError: no module named gone\)"):
        compare("core", True, str(baseline))


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_baseline_that_is_no_checkout_is_refused_in_one_line(tmp_path: Path, where: str) -> None:
    directory = tmp_path / where
    if where == "empty":
        directory.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "mcpwatch", "bench", "core", "--quick"],
        cwd=REPO,
        env={**os.environ, "MCPWATCH_BENCH_BASELINE": str(directory)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"mcpwatch: MCPWATCH_BENCH_BASELINE={directory}: it holds no mcpwatch package to compare with; "
        "point it at another checkout, e.g. `git worktree add --detach /tmp/base HEAD~1`"
    ]
