"""Settings from `mcpwatch.toml` (and the environment), typed and validated once at load.

Any problem is a `UserError` naming the file and the key, so the CLI prints one line and exits 2.
The deadline environment variables are read fresh for every call by `reliability.deadline`; this module
only supplies the file's values beneath them.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from mcpwatch import paths
from mcpwatch.errors import UserError
from mcpwatch.reliability.setting_checks import (
    Check,
    Problem,
    check_of,
    flag,
    inside,
    megabytes,
    one_of,
    path_text,
    rate,
    seconds,
    setting,
    setting_table,
    tables,
    text,
    toml_key,
    whole,
)

# The reliability core owns its sections (it never imports this module); re-exported for callers of config.
from mcpwatch.reliability.settings import DeadlineSettings as DeadlineSettings
from mcpwatch.reliability.settings import ReusePolicy as ReusePolicy
from mcpwatch.reliability.settings import StateSyncSettings as StateSyncSettings
from mcpwatch.reliability.settings import TombstoneSettings as TombstoneSettings

# --- the checks of values no generic check covers (declared before the settings that use them) ------------


def _keymap(value: Any) -> dict[str, str]:
    """[console.keys]: binding id = "key" or "key1,key2" (Textual key names)."""
    if not isinstance(value, dict):
        raise Problem('must be a table of binding id = "keys" (e.g. "main.set_margin" = "M")')
    keys: dict[str, str] = {}
    for binding_id, spec in value.items():
        if not isinstance(spec, str) or not spec.strip() or any(not k.strip() for k in spec.split(",")):
            raise Problem(f"{binding_id} must be a key name or comma-separated key names, got {spec!r}")
        keys[str(binding_id)] = spec.replace(" ", "")
    return keys


def _http_url(value: Any) -> str:
    from urllib.parse import urlsplit

    if isinstance(value, str):
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018  (raises on a port out of range)
        except ValueError:  # also "http://[::1": an unclosed IPv6 address
            parts = None
        if parts is not None and parts.scheme in ("http", "https") and parts.hostname:
            return value
    raise Problem(f"must be an http:// or https:// URL with a host, got {value!r}")


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)


def _headers(value: Any) -> dict[str, str]:
    """HTTP headers for the OTLP exporter: a name that is a token, a value without a line break or a control
    character (the HTTP client refuses such a header only when it sends, on the exporter's thread)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise Problem("must be a table of header name = text")
    for name, header in value.items():
        if not _HEADER_NAME.fullmatch(name):
            raise Problem(f"has a header name that is not one (letters, digits and !#$%&'*+.^_`|~-), got {name!r}")
        if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in header):
            raise Problem(f"{name} must be text without line breaks or control characters")
    return dict(value)


def _globs(value: Any) -> tuple[str, ...]:
    """A list of State Sync style tool globs (`docs.*`, `consult_council`)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Problem(f"must be a list of tool name globs, got {value!r}")
    return tuple(inside(f"[{index}]", _glob, pattern) for index, pattern in enumerate(value))


def _glob(value: Any) -> str:
    """A State Sync style tool glob (`docs.*`, `consult_council`)."""
    from mcpwatch.reliability.statesync.validate import pattern_problem

    pattern = text(value)
    problem = pattern_problem(pattern)
    if problem is not None:
        raise Problem(f"{pattern!r} {problem}")
    return pattern


def _reuse_policy(item: dict[str, Any]) -> ReusePolicy:
    """One `[[late_results.reuse]]` table: a State Sync style glob and a TTL in seconds."""
    return ReusePolicy(
        inside(".match", _glob, item["match"]), inside(".ttl_s", seconds(allow_zero=False), item["ttl_s"])
    )


_REUSE: Check = tables("late_results.reuse", ("match", "ttl_s"), required=("match", "ttl_s"), build=_reuse_policy)


@dataclass(frozen=True)
class UpstreamSettings:
    health_tool: str | None = setting(None, text)
    backoff_base_s: float = setting(0.5, seconds(allow_zero=False))
    # an upstream that takes none of its input this long is stuck (and restarted)
    write_timeout_s: float = setting(5.0, seconds(allow_zero=False))


@dataclass(frozen=True)
class LateResultSettings:
    # a late result up to this size is logged whole; beyond it, a preview
    keep_bytes: int = setting(65_536, whole(1024, 16 * 1024 * 1024))
    reuse: tuple[ReusePolicy, ...] = setting((), _REUSE)  # off unless policies are given


BRIDGE_MODES = ("required", "optional", "off")


@dataclass(frozen=True)
class TasksSettings:
    """`[tasks]`: MCP Tasks for hosts that did not declare them (`wrapper.tasks.bridge`)."""

    # run task-only tools upstream as tasks; "optional": also those that may; "off"
    bridge: str = setting("required", one_of(BRIDGE_MODES))
    # the TTL mcpwatch asks for when it makes a task (the server may give less)
    ttl_s: float = setting(3600.0, seconds(allow_zero=False))
    # a cut bridged call's task: an identical call this long after attaches or takes its result
    reuse_s: float = setting(600.0, seconds())
    # tools (State Sync globs) offered as tasks to hosts that declared tasks
    offer: tuple[str, ...] = setting((), _globs)
    # also offer the tools the log shows outrunning the budget (`wrapper.tasks.slow_tools`)
    offer_slow: bool = setting(False, flag)
    # an offered task's call runs this long at most (instead of the tools/call budget)
    max_s: float = setting(3600.0, seconds(allow_zero=False))
    # the longest TTL a host may ask of an offered task
    max_ttl_ms: int = setting(86_400_000, whole(1000, 365 * 86_400_000))
    # the pollInterval offered tasks suggest; a poll sooner than half of it is refused
    poll_ms: int = setting(1000, whole(100, 3_600_000))
    # offered tasks running at once in all; a host's next one is refused beyond it
    max_running: int = setting(256, whole(1, 100_000))
    # … and per host connection (stdio, an HTTP session, sessionless requests)
    max_running_per_host: int = setting(64, whole(1, 100_000))
    # finished offered tasks' results held in memory; older ones are read from the log
    results_memory_mb: int = setting(32, whole(0, 65_536))


@dataclass(frozen=True)
class LogSettings:
    path: str | None = setting(None, path_text)
    queue_max: int = setting(20_000, whole(1, 10_000_000))
    flush_interval_ms: int = setting(100, whole(1, 60_000))
    fold_window_ms: int = setting(50, whole(0, 1000))  # a call that ends this soon after its start is one row


@dataclass(frozen=True)
class OperatorSettings:
    port: int = setting(0, whole(0, 65535))
    # beyond it the longest-idle connection is closed (or the newcomer refused)
    max_connections: int = setting(64, whole(1, 10_000))
    # a client that owes a request (or the rest of one) this long is disconnected
    idle_timeout_s: float = setting(30.0, seconds(allow_zero=False))
    # a request head begun must be complete this soon (else 408)
    head_timeout_s: float = setting(5.0, seconds(allow_zero=False))
    # a body must arrive at least this fast on average, after head_timeout_s (else 408)
    min_body_kib_s: float = setting(16.0, rate)


@dataclass(frozen=True)
class FrontSettings:
    """Bounds of the Streamable HTTP front (`--listen`)."""

    max_body_mb: float = setting(16.0, megabytes)
    max_header_kb: int = setting(64, whole(1, 1024 * 1024))
    max_connections: int = setting(256, whole(1, 10_000))
    idle_timeout_s: float = setting(30.0, seconds(allow_zero=False))
    # a request head begun must be complete this soon (else 408)
    head_timeout_s: float = setting(5.0, seconds(allow_zero=False))
    # a body must arrive at least this fast on average, after head_timeout_s (else 408)
    min_body_kib_s: float = setting(16.0, rate)
    # host sessions at once, each with its own upstream; the next host is refused
    max_sessions: int = setting(16, whole(1, 10_000))
    # a host session with no request and no open stream this long is ended
    session_idle_s: float = setting(1800.0, seconds(allow_zero=False))


@dataclass(frozen=True)
class LimitsSettings:
    # one JSON-RPC frame, either way; a larger one is answered with an error, never buffered
    max_frame_mb: int = setting(16, whole(1, 1024))

    @property
    def max_frame_bytes(self) -> int:
        return self.max_frame_mb * 1024 * 1024


@dataclass(frozen=True)
class ConsoleSettings:
    theme: str = setting("mcpwatch-dark", text)
    refresh_ms: int = setting(100, whole(10, 60_000))
    # `watch --serve`: consoles (each a process) at once; the next browser gets 503
    serve_max_consoles: int = setting(8, whole(1, 1000))
    # binding id -> keys, e.g. "main.set_margin" = "M"
    keys: dict[str, str] = setting_table(dict, _keymap)


@dataclass(frozen=True)
class OtelSettings:
    """`[otel]`: OpenTelemetry export; the standard OTEL_* variables win over these."""

    enabled: bool | None = setting(None, flag)  # None: on when an endpoint is given
    endpoint: str | None = setting(None, _http_url)  # OTLP/HTTP base URL, e.g. http://collector:4318
    headers: dict[str, str] = setting_table(dict, _headers)
    service_name: str | None = setting(None, text)
    # events waiting for the exporter; overflow is counted as dropped
    queue_max: int = setting(10_000, whole(1, 1_000_000))
    metrics_interval_ms: int = setting(10_000, whole(100, 3_600_000))
    # how long a cut call's span waits for its late answer before export
    late_window_s: float = setting(30.0, seconds())


@dataclass(frozen=True)
class MetricsSettings:
    """`[metrics]`: the Prometheus scrape endpoint, off unless a port is given (here or `--metrics-port`)."""

    port: int | None = setting(None, whole(0, 65535))  # 0: any free port (said at start-up)
    # another machine's reach needs --allow-remote (and then a bearer token)
    host: str = setting("127.0.0.1", text)


@dataclass(frozen=True)
class Settings:
    deadline: DeadlineSettings = field(default_factory=DeadlineSettings)
    tombstones: TombstoneSettings = field(default_factory=TombstoneSettings)
    upstream: UpstreamSettings = field(default_factory=UpstreamSettings)
    state_sync: StateSyncSettings = field(default_factory=StateSyncSettings)
    late_results: LateResultSettings = field(default_factory=LateResultSettings)
    log: LogSettings = field(default_factory=LogSettings)
    operator: OperatorSettings = field(default_factory=OperatorSettings)
    front: FrontSettings = field(default_factory=FrontSettings)
    console: ConsoleSettings = field(default_factory=ConsoleSettings)
    otel: OtelSettings = field(default_factory=OtelSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    tasks: TasksSettings = field(default_factory=TasksSettings)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)  # [hosts.<client name>] profile overrides
    source: str | None = None  # the file these came from, if any

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy, for the `session_start` event."""
        from dataclasses import asdict

        snapshot = asdict(self)
        # header values are credentials (OTLP auth tokens): the log keeps their names only
        snapshot["otel"]["headers"] = {name: "<redacted>" for name in self.otel.headers}
        return snapshot


# The sections are `Settings`' dataclass fields; their keys are each section's fields, and each field says how its
# value is checked (`reliability.setting_checks.setting`). One declaration, read back.
SECTIONS: dict[str, type[Any]] = {
    f.name: f.default_factory  # type: ignore[misc]  # a section's factory is its dataclass (is_dataclass checked)
    for f in fields(Settings)
    if isinstance(f.default_factory, type) and is_dataclass(f.default_factory)
}
CHECKS: dict[str, dict[str, Check]] = {
    name: {f.name: check for f in fields(cls) if (check := check_of(f)) is not None} for name, cls in SECTIONS.items()
}
KEYS: dict[str, tuple[str, ...]] = {name: tuple(checks) for name, checks in CHECKS.items()}


def _fail(where: str, key: str, problem: str) -> UserError:
    return UserError(f"{where}: {key} {problem}")


def settings_from_mapping(raw: dict[str, Any], where: str = "mcpwatch.toml") -> Settings:
    """Validate a parsed TOML document into `Settings`; raise `UserError` naming the key on any problem."""
    sections: dict[str, dict[str, Any]] = {}
    hosts: dict[str, dict[str, Any]] = {}
    for section, body in raw.items():
        if section == "hosts":
            hosts = _parse_hosts(body, where)
            continue
        if section not in SECTIONS:
            known = ", ".join(SECTIONS)
            raise _fail(where, f"[{toml_key(section)}]", f"is not a known section (known: {known}, hosts)")
        if not isinstance(body, dict):
            raise _fail(where, f"[{section}]", "must be a table")
        parsed: dict[str, Any] = {}
        for key, value in body.items():
            if key not in KEYS[section]:
                known = ", ".join(KEYS[section])
                raise _fail(where, f"{section}.{toml_key(key)}", f"is not a known key (known in [{section}]: {known})")
            try:
                parsed[key] = CHECKS[section][key](value)
            except Problem as exc:
                raise _fail(where, f"{section}.{key}{exc.at}", str(exc)) from None
        sections[section] = parsed
    settings = Settings(
        **{name: section(**sections.get(name, {})) for name, section in SECTIONS.items()},
        hosts=hosts,
        source=None if where == "mcpwatch.toml" else where,
    )
    _validate_state_sync(settings.state_sync, where)
    return settings


def _parse_hosts(raw: Any, where: str) -> dict[str, dict[str, Any]]:
    """`[hosts.<client name>]` tables, checked by the host profiles' own rules (messages name the key)."""
    from mcpwatch.reliability.hosts import HostProfileError, check_override_tables

    try:
        return check_override_tables(raw)
    except HostProfileError as exc:
        raise UserError(f"{where}: {exc}") from None


def _validate_state_sync(state_sync: StateSyncSettings, where: str) -> None:
    """Fail fast on a bad policy, with the reliability core's message (it names the policy index)."""
    if not state_sync.enabled:
        return
    from mcpwatch.reliability.statesync import StateSyncConfigError, validate_config

    try:
        validate_config(state_sync.policies, state_sync.default_cache_control)
    except StateSyncConfigError as exc:
        raise UserError(f"{where}: [state_sync] {exc}") from None


CONFIG_BYTES_MAX = 1024 * 1024  # a config file is a few hundred bytes; anything this large is not one
MESSAGE_CHARS_MAX = 400  # a value quoted in an error is cut to this, so the error stays one readable line


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """`--config PATH` (must exist), else `$MCPWATCH_CONFIG`, else `./mcpwatch.toml`, else the user config.

    A candidate that exists but is not a regular file (a directory, a FIFO that would block the read, a device) is
    an error, not skipped: the operator meant a file to be read there."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        _check_regular(path, "")
        return path
    env = os.environ.get("MCPWATCH_CONFIG")
    if env:
        path = Path(env).expanduser()
        _check_regular(path, " (from MCPWATCH_CONFIG)")
        return path
    for candidate in (Path.cwd() / "mcpwatch.toml", paths.user_config_path()):
        if candidate.exists():
            _check_regular(candidate, "")
            return candidate
    return None


def _check_regular(path: Path, origin: str) -> None:
    if not path.exists():
        raise UserError(f"config file not found: {path}{origin}")
    if path.is_dir():
        raise UserError(f"{path}{origin} is a directory, not a config file")
    if not path.is_file():
        raise UserError(f"{path}{origin} is not a regular file (a FIFO or a device?): give an mcpwatch.toml file")


def read_config_text(path: Path) -> str:
    """The file's text: at most CONFIG_BYTES_MAX bytes (never more is read), UTF-8 (a leading byte-order mark, which
    Windows editors write and TOML parsers refuse as a statement, is dropped)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(CONFIG_BYTES_MAX + 1)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > CONFIG_BYTES_MAX:
        raise UserError(f"{path}: larger than {CONFIG_BYTES_MAX // 1024} KiB, which no mcpwatch.toml is")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # the byte-order mark some editors write first
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); TOML files are UTF-8") from None


def load_settings(explicit: str | os.PathLike[str] | None = None) -> Settings:
    path = find_config_file(explicit)
    if path is None:
        return Settings()
    text = read_config_text(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise UserError(f"{path}: not usable TOML: arrays or tables nested too deeply") from None
    except ValueError:  # Python reads no integer past 4,300 digits (`sys.get_int_max_str_digits`)
        raise UserError(f"{path}: not usable TOML: a number too long to read (thousands of digits)") from None
    try:
        return settings_from_mapping(raw, str(path))
    except UserError as exc:
        raise UserError(_one_line(str(exc))) from None
    except (RecursionError, ValueError, TypeError, OverflowError) as exc:  # a value no check foresaw: still one line
        raise UserError(_one_line(f"{path}: cannot use this file: {type(exc).__name__}: {exc}")) from None


def _one_line(message: str) -> str:
    """A message that quotes a huge value is cut in the middle; it never spans lines."""
    message = " ".join(message.splitlines())
    if len(message) <= MESSAGE_CHARS_MAX:
        return message
    half = MESSAGE_CHARS_MAX // 2
    return f"{message[:half]} … {message[-half:]}"


def add_config_option(parser: Any) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="mcpwatch.toml to use (default: ./mcpwatch.toml, then the user config dir)",
    )
