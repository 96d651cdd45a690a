"""`hosts wrap|unwrap`: pick the servers, plan every file's edits first, and write only when every file's plan
and every file's checks succeeded, so bad input changes nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mcpwatch.errors import UserError
from mcpwatch.hostconfig import records as kept
from mcpwatch.hostconfig.entries import ConfigFile, ServerEntry, display
from mcpwatch.hostconfig.plan import Plan, PlanError, entry_edits, plan
from mcpwatch.hostconfig.wrapargs import Program
from mcpwatch.hostconfig.writer import WriteRefused, check_writable, diff, target, write


class ChangeError(ValueError):
    """One line: what was asked that cannot be done. Nothing was changed."""


@dataclass
class Outcome:
    plans: list[Plan] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # what happened, for a person


def choose(
    files: Iterable[ConfigFile], names: list[str], every: bool, host: str | None
) -> dict[Path, tuple[ConfigFile, list[ServerEntry]]]:
    """The entries asked for, by file. ChangeError for a name that matches nothing or a file that cannot be read."""
    if not names and not every:
        raise ChangeError("name the servers to change, or give --all")
    considered = [f for f in files if host is None or f.host.key == host]
    broken = [f for f in considered if f.problem is not None]
    if broken:  # it may hold a server asked for: refuse rather than change only some of them
        first = broken[0]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        raise ChangeError(
            f"{display(first.path)}: {first.problem}{more}; fix it or leave its host out with --host; "
            "nothing was changed"
        )
    chosen: dict[Path, tuple[ConfigFile, list[ServerEntry]]] = {}
    matched: set[str] = set()
    for config in considered:
        picked = [s for s in config.servers if every or s.key in names]
        if picked:
            matched.update(s.key for s in picked)
            chosen[config.path] = (config, picked)
    missing = [n for n in names if n not in matched]
    if missing:
        known = sorted({s.key for f in considered for s in f.servers})
        where = f" for {host}" if host else ""
        raise ChangeError(
            f"no server named {', '.join(repr(m) for m in missing)}{where} "
            f"(servers: {', '.join(known) or 'none'}); nothing was changed"
        )
    return chosen


def prepare(
    chosen: dict[Path, tuple[ConfigFile, list[ServerEntry]]], action: str, program: Program, explicit: bool
) -> Outcome:
    """Every file's plan, checked writable; ChangeError for the first refusal (then nothing is written). With
    `explicit` (servers named) a server that cannot be changed is an error; with --all it is skipped and said."""
    records = kept.load()
    outcome = Outcome()
    for config, entries in chosen.values():
        usable = []
        for entry in entries:
            try:
                entry_edits(config, entry, action, program, records)
            except PlanError as exc:
                if explicit:
                    raise ChangeError(f"{display(config.path)}: {exc}; nothing was changed") from None
                outcome.lines.append(f"skipped {entry.host.label} {entry.key} ({display(config.path)}): {exc}")
                continue
            except ValueError as exc:
                raise ChangeError(f"{display(config.path)}: {exc}; nothing was changed") from None
            usable.append(entry)
        if not usable:
            continue
        try:
            result = plan(config, usable, action, program, records)
        except ValueError as exc:
            raise ChangeError(f"{display(config.path)}: {exc}; nothing was changed") from None
        if result.changed:
            try:
                check_writable(config.path)
            except WriteRefused as exc:
                raise ChangeError(str(exc)) from None
        outcome.plans.append(result)
    return outcome


def describe(result: Plan, written: Path | None, dry_run: bool) -> list[str]:
    config = result.config
    lines = []
    via = ""
    real = target(config.path) if config.path.is_symlink() else None
    if real is not None:
        via = f" (a symlink: {'would edit' if dry_run else 'edited'} {display(real)})"
    for entry, what in result.done:
        verb = f"would be {what}" if dry_run and what not in ("already wrapped", "not wrapped") else what
        lines.append(f"{entry.host.label} {entry.key} ({entry.scope}, {display(config.path)}): {verb}")
    if result.changed:
        how = "would edit the file in place" if dry_run else "edited the file in place"
        lines.append(f"  {how}{via}" + ("" if written is None else f"; the old file is kept at {display(written)}"))
    return lines


def carry_out(outcome: Outcome, dry_run: bool) -> list[str]:
    """Write every planned file (or, dry, show its diff); the records are saved after each file written."""
    lines = list(outcome.lines)
    for result in outcome.plans:
        if dry_run:
            lines += describe(result, None, True)
            if result.changed:
                lines.append(diff(result.config.path, result.config.text, result.text).rstrip("\n"))
            continue
        written = None
        if result.changed:
            try:
                written = write(result.config.path, result.config.text, result.text)
            except (WriteRefused, OSError) as exc:
                done = f" (already changed: {'; '.join(lines)})" if lines else ""
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise ChangeError(f"{display(result.config.path)}: {reason}{done}") from None
            try:
                kept.save(result.records)
            except (OSError, UserError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                lines += describe(result, written, False)
                raise ChangeError(
                    f"{'; '.join(lines)}; but the originals for an exact unwrap could not be kept ({reason}): "
                    "unwrap will rebuild these entries from their wrap lines"
                ) from None
        lines += describe(result, written, False)
    return lines
