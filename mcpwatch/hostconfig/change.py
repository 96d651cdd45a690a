"""`hosts wrap|unwrap`: pick the servers, plan every file's edits first, and write only when every file's plan
and every file's checks succeeded, so bad input changes nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mcpwatch.errors import UserError
from mcpwatch.hostconfig import host_cli
from mcpwatch.hostconfig import records as kept
from mcpwatch.hostconfig.entries import ConfigFile, ServerEntry, display
from mcpwatch.hostconfig.formats import CLAUDE_CODE
from mcpwatch.hostconfig.plan import Plan, PlanError, Record, entry_edits, plan, record_key, reread, span_of
from mcpwatch.hostconfig.wrapargs import Program
from mcpwatch.hostconfig.writer import WriteRefused, backup, check_writable, diff, target, write


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


def describe(result: Plan, written: Path | None, dry_run: bool, how: str | None = None) -> list[str]:
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
        how = how or ("would edit the file in place" if dry_run else "edited the file in place")
        lines.append(f"  {how}{via}" + ("" if written is None else f"; the old file is kept at {display(written)}"))
    return lines


def _through_claude(result: Plan, home: Path, project: Path) -> tuple[Path, dict[str, Record | None]] | str:
    """Carry out a Claude Code file's plan with `claude mcp remove` + `add-json`; returns the backup and the records,
    or why the file is edited in place instead."""
    claude = host_cli.find_claude()
    config = result.config
    changed = [e for e, what in result.done if what not in ("already wrapped", "not wrapped")]
    scopes = [host_cli.claude_scope(e, home, project) for e in changed]
    if config.host is not CLAUDE_CODE:
        return f"{config.host.label} has no CLI that carries every field"
    if claude is None:
        return "`claude` is not on PATH"
    if any(scope is None for scope in scopes):
        return "claude mcp cannot name this file's scope from here"
    wanted = {(s.where, s.key): s.raw for s in reread(config, result.text).servers}
    real = target(config.path)
    check_writable(config.path)
    if real.read_bytes() != config.text.encode("utf-8"):
        raise WriteRefused(f"{display(real)} changed since mcpwatch read it; nothing was changed, run again")
    saved = backup(real, config.text)
    for entry, scope in zip(changed, scopes, strict=True):
        assert scope is not None
        try:
            host_cli.replace_entry(claude, entry, scope, wanted[(entry.where, entry.key)])
        except host_cli.HostCliError as exc:
            raise ChangeError(f"{exc}; the old file is kept at {display(saved)}") from None
    after = reread(config, real.read_text(encoding="utf-8"))
    by_place = {(s.where, s.key): s for s in after.servers}
    records: dict[str, Record | None] = {}
    for entry in changed:
        now = by_place.get((entry.where, entry.key))
        if now is None or now.raw != wanted[(entry.where, entry.key)]:
            raise ChangeError(
                f"{entry.key}: claude mcp add-json wrote something else than asked; the old file is kept at "
                f"{display(saved)}"
            )
        key = record_key(entry)
        old = result.records.get(key)
        if old is not None:
            span = span_of(after, now)
            records[key] = Record(old.original, after.text[span.start : span.end])
        else:
            records[key] = None
    return saved, records


def carry_out(
    outcome: Outcome, dry_run: bool, via_cli: bool = False, home: Path | None = None, project: Path | None = None
) -> list[str]:
    """Write every planned file (or, dry, show its diff); the records are saved after each file written. With
    `via_cli`, a Claude Code file is changed by `claude mcp` where it can be (the output says which way)."""
    lines = list(outcome.lines)
    for result in outcome.plans:
        if dry_run:
            lines += describe(result, None, True)
            if result.changed:
                lines.append(diff(result.config.path, result.config.text, result.text).rstrip("\n"))
            continue
        written = None
        if result.changed and via_cli:
            try:
                done = _through_claude(result, home or Path.home(), project or Path.cwd())
            except (WriteRefused, OSError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise ChangeError(f"{display(result.config.path)}: {reason}") from None
            if not isinstance(done, str):
                written, records = done
                kept.save(records)
                lines += describe(result, written, False, "changed by Claude Code's own CLI (claude mcp add-json)")
                continue
            lines.append(f"  {display(result.config.path)}: {done}; editing the file in place")
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
