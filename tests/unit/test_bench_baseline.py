"""`MCPWATCH_BENCH_BASELINE=DIR mcpwatch bench NAME`: the same benchmark from another checkout, in the same run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpwatch.bench.baseline import baseline_root, compare, numbers, ratios
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


def _marked_checkout(root: Path) -> tuple[Path, Path]:
    """A checkout whose package, once imported, leaves a mark: the refusal must come before any of its code runs."""
    mark = root.parent / f"{root.name}-imported"
    checkout = fake_checkout(root, "")
    (checkout / "mcpwatch" / "__init__.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    return checkout, mark


def _refusal(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MCPWATCH_BENCH_BASELINE", str(checkout))
    with pytest.raises(UserError) as caught:
        baseline_root()
    return str(caught.value)


def test_a_baseline_others_can_write_is_refused_before_its_code_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, mark = _marked_checkout(tmp_path / "base")
    (checkout / "mcpwatch" / "__main__.py").chmod(0o666)  # anyone may change what runs as this user
    message = _refusal(checkout, monkeypatch)
    assert "__main__.py is writable by other users (mode 0666)" in message
    assert f"chmod -R go-w {checkout}" in message and "\n" not in message and not mark.exists()
    (checkout / "mcpwatch" / "__main__.py").chmod(0o644)
    assert baseline_root() == str(checkout) and mark.exists()  # the same checkout, kept to its owner: used


def test_a_baseline_another_user_owns_is_refused_before_its_code_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout, mark = _marked_checkout(tmp_path / "base")
    if os.geteuid() == 0:
        os.chown(checkout, 65534, -1)
    else:  # the checkout is this user's: seen from another
        real = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: real + 1)
    message = _refusal(checkout, monkeypatch)
    assert "belongs to another user (uid" in message and "a checkout of your own" in message
    assert not mark.exists()


def test_a_baseline_in_a_folder_anyone_may_rename_in_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    checkout, mark = _marked_checkout(shared / "base")
    shared.chmod(0o777)  # no sticky bit: anyone may move `base` away and put their own in its place
    message = _refusal(checkout, monkeypatch)
    assert f"the folder {shared} above it" in message and not mark.exists()
    shared.chmod(0o1777)  # sticky, as /tmp: only the owner may move it
    assert baseline_root() == str(checkout)


@pytest.mark.parametrize(
    ("variable", "bench", "first_step"),
    [("MCPWATCH_BENCH_FRONT_ROOT", "hosts", "curve"), ("MCPWATCH_BENCH_BASELINE", "wrap", "_stdio_figures")],
)
def test_a_checkout_a_bench_runs_itself_is_checked_as_a_baseline_is(
    variable: str,
    bench: str,
    first_step: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`bench hosts` runs MCPWATCH_BENCH_FRONT_ROOT's wrapper, `bench wrap` the baseline's beside its own paths: a DIR
    holding no mcpwatch silently measured the installed one under DIR's name, a missing one was a traceback (hosts),
    and a DIR others could write ran their code as this user."""
    import importlib

    from mcpwatch.cli import main

    monkeypatch.setattr(importlib.import_module(f"mcpwatch.bench.{bench}"), first_step, None)  # nothing may start
    for name in ("MCPWATCH_BENCH_BASELINE", "MCPWATCH_BENCH_FRONT_ROOT"):
        monkeypatch.delenv(name, raising=False)
    checkout, mark = _marked_checkout(tmp_path / "checkout")
    (checkout / "mcpwatch").chmod(0o777)
    for directory, says in [(tmp_path, "holds no mcpwatch package"), (checkout, "writable by other users")]:
        monkeypatch.setenv(variable, str(directory))
        assert main(["bench", bench, "--quick"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{variable}={directory}: " in err[0] and says in err[0]
    assert not mark.exists()
