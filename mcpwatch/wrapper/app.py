"""Wires one wrapper together: log, policies, core, upstream, front, operator endpoint, registry, signals.

Shutdown, from host EOF or SIGTERM/SIGINT, always runs the same path: cancel upstream calls, stop the upstream,
flush the log, remove the registry file, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwatch import __version__, paths, privacy, registry
from mcpwatch.config import Settings
from mcpwatch.errors import UserError
from mcpwatch.events import HostSessionRefusedData, Kind, SessionEndData, SessionStartData
from mcpwatch.httpserve.bounds import timed_limits, within_descriptors
from mcpwatch.operator import LogStatus
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.statesync import StateSync, detect_overlaps
from mcpwatch.terminal import say
from mcpwatch.wrapper.calls.recorder import HostSessionRecorder, Recorder, Tee
from mcpwatch.wrapper.core.discover_memo import DiscoverMemo, memo_path
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.operator.actions import OperatorActions
from mcpwatch.wrapper.operator.operator_server import OperatorServer, build_operator_app, new_token
from mcpwatch.wrapper.tasks.kept_log import KeptLog
from mcpwatch.wrapper.tasks.offer import SharedOffers
from mcpwatch.wrapper.tasks.offer_held import HeldResults
from mcpwatch.wrapper.tasks.owners import upstream_key
from mcpwatch.wrapper.tasks.slow_tools import SlowTools, offered_line, tell_hosts

if TYPE_CHECKING:
    from mcpwatch.otel.exporter import OtelSink
    from mcpwatch.prometheus.endpoint import MetricsServer
    from mcpwatch.prometheus.fold import MetricFold
    from mcpwatch.store import EventWriter
    from mcpwatch.wrapper.fronts.era_translate import EraTranslator
    from mcpwatch.wrapper.fronts.front_sessions import SessionPool


@dataclass
class WrapOptions:
    settings: Settings
    command: list[str] = field(default_factory=list)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    log_path: Path | None = None
    no_log: bool = False
    listen: str | None = None
    allow_remote: bool = False
    front_token: str | None = None  # from --token-file; generated when serving remote hosts without one
    token_file: str | None = None
    operator_port: int | None = None
    metrics_port: int | None = None  # the Prometheus scrape endpoint's ([metrics] host); None: off

    @property
    def upstream_target(self) -> str:
        return self.url or " ".join(self.command)

    @property
    def display_name(self) -> str:
        if self.name:
            return self.name
        if self.url:
            from urllib.parse import urlsplit

            return urlsplit(self.url).netloc or self.url
        return Path(self.command[0]).name if self.command else "mcpwatch"


def startup_line(options: WrapOptions, log_path: Path | None) -> str:
    """One line for the person setting mcpwatch up (hosts keep a server's stderr as its log)."""
    front = f"listening on {options.listen}" if options.listen else "on stdio"
    log = f"log {log_path}" if log_path is not None else "no log"
    return f"wrapping {options.upstream_target} {front}; {log}; watch it with `mcpwatch watch {options.display_name}`"


def warn(message: str) -> None:
    say(f"warning: {message}")


INSTALL_OTEL = "pip install 'mcpwatch[otel]'"


def start_otel(
    settings: Settings, loop: asyncio.AbstractEventLoop, on_warning: Callable[[str], None]
) -> OtelSink | None:
    """The OpenTelemetry export, when the environment or `[otel]` asks for it. Never fatal: a missing package or
    an unusable setting is one warning, and the wrapper serves the host as it would without export."""
    from mcpwatch.otel.config import OtelConfigError, resolve

    try:
        target = resolve(os.environ, settings.otel)
    except OtelConfigError as exc:
        warn(f"OpenTelemetry export is off: {exc}")
        return None
    if target is None:
        return None
    try:
        from mcpwatch.otel.exporter import OtelSink
    except ImportError:
        warn(f"OpenTelemetry export is configured ({target.source}) but its packages are not installed: {INSTALL_OTEL}")
        return None
    try:
        # the sink's thread reports problems through the loop: events are recorded on the loop only
        return OtelSink(target, lambda message: loop.call_soon_threadsafe(on_warning, message))
    except Exception as exc:  # boundary: whatever the SDK makes of a variable, the host is still served
        warn(f"OpenTelemetry export is off: the exporter could not start ({type(exc).__name__}: {exc}); check OTEL_*")
        return None


def _make_upstream(options: WrapOptions, core: WrapperCore) -> Any:
    """The upstream link of one core: a child process over stdio, or an MCP session over HTTP."""
    if options.url:
        from mcpwatch.wrapper.upstreams.upstream_http import HttpUpstream

        return HttpUpstream(options.url, options.headers, core, options.settings)
    from mcpwatch.wrapper.upstreams.upstream_stdio import StdioUpstream

    return StdioUpstream(options.command, core, options.settings)


def _http_front(pool: Any, options: WrapOptions, on_warning: Callable[[str], None]) -> Any:
    """The Streamable HTTP front with its guard: a token when serving remote hosts (printed once if generated)."""
    from mcpwatch.httpserve.guard import FrontGuard, new_front_token, token_file_is_private
    from mcpwatch.wrapper.fronts.front_http import HttpFront, parse_listen

    settings = options.settings.front
    host = parse_listen(options.listen or "")[0]
    token = options.front_token
    if token is None and options.allow_remote:
        token = new_front_token()
        say(f"hosts must send the header 'Authorization: Bearer {token}'")
    if options.token_file and not token_file_is_private(options.token_file):
        on_warning(f"--token-file {options.token_file} can be read by other users (chmod 600 it)")
    limits = within_descriptors(timed_limits(settings, max_head_bytes=settings.max_header_kb * 1024), share=1 / 2)
    guard = FrontGuard.for_listen(host, remote=options.allow_remote, token=token)
    return HttpFront(pool, options.listen or "", guard, limits, int(settings.max_body_mb * 1024 * 1024))


EXIT_WAIT_S = 3.0  # at exit, what the export and the log may take together before the wrapper goes anyway
OTEL_CLOSE_WAIT_S = 2.0  # the export's share: a collector that does not answer is left behind after it


def _state_dir_problem() -> str | None:
    """Why the state directory must not be used (another user's, or writable by others); None when it is fine."""
    try:
        privacy.ensure_dir(paths.state_dir())
        privacy.ensure_dir(paths.registry_dir(), "registry directory")
    except UserError as exc:
        return str(exc)
    except OSError as exc:
        return f"{paths.state_dir()}: cannot create the state directory ({exc.strerror})"
    return None


def _open_log(options: WrapOptions, log_path: Path, state_problem: str | None) -> Any:
    """The wrapper's log writer, opened on its own thread so no state of the file can hold up the host."""
    if options.no_log:
        return None
    settings = options.settings
    if state_problem is not None and log_path.parent == paths.state_dir():
        return None  # the one line about the state directory has been said; nothing is written there
    from mcpwatch.store import EventWriter

    return EventWriter(
        log_path,
        queue_max=settings.log.queue_max,
        flush_interval=settings.log.flush_interval_ms / 1000,
        fold_window=settings.log.fold_window_ms / 1000,
        on_error=warn,
        on_notice=say,
        open_now=False,
    )


def _log_info(writer: Any, log_path: Path, session_id: str, off_reason: str | None) -> LogStatus:
    """The operator status's `log` block: where, whether it is being written, and events written vs lost."""
    if writer is None:
        return {"path": None, "session_id": session_id, "state": "off", "problem": off_reason, "events_written": 0}
    return {
        "path": str(log_path),
        "session_id": session_id,
        "state": "ok" if writer.problem is None else "unavailable",
        "problem": writer.problem,
        "events_written": writer.events_written,
        "events_pending": writer.pending,
        "events_dropped": writer.dropped,
        "losses_recorded": writer.losses_recorded,
        "last_error": writer.last_error,
    }


def _close_log(writer: Any, log_path: Path, session_id: str, reason: str, timeout_s: float) -> None:
    """Write the end and whatever is queued, waiting at most `timeout_s`; then say what was not written."""
    if writer is None:
        return
    writer.end_session(session_id, reason)
    writer.close(timeout=timeout_s)
    lost, recorded = writer.dropped, writer.losses_recorded
    if lost:
        cause = (writer.problem or writer.last_error or "the memory queue was full").removeprefix(f"{log_path}: ")
        told = f"; {recorded} of them are recorded in the log as lost" if recorded else ""
        warn(f"{log_path}: {lost} events of session {session_id} were not written ({cause}){told}")


def _start_session(options: WrapOptions, writer: EventWriter | None) -> str:
    """The session's id: the log's new session, or a made-up one (no log) that still tells runs apart."""
    if writer is None:
        return f"nolog-{os.getpid()}-{int(time.time())}"
    return writer.start_session(
        name=options.display_name,
        upstream=options.upstream_target,
        pid=os.getpid(),
        config=options.settings.snapshot(),
    )


def _state_sync(settings: Settings) -> tuple[StateSync | None, list[str]]:
    """State Sync when it is on, with the warnings for its policies that overlap."""
    if not settings.state_sync.enabled:
        return None, []
    policies = list(settings.state_sync.policies)
    state_sync = StateSync(policies, settings.state_sync.default_cache_control)
    return state_sync, [w.message for w in detect_overlaps(policies)]


def _kept_log(
    settings: Settings, log_path: Path, upstream_id: str, session_id: str, loop: asyncio.AbstractEventLoop
) -> KeptLog:
    """A finished offered task outlives this process (and this session) in the log, keyed to this upstream."""
    from mcpwatch.store.kept_tasks import find_kept_task, read_kept_refs

    since = time.time() - settings.tasks.max_ttl_ms / 1000
    kept = KeptLog(
        partial(read_kept_refs, log_path, upstream_id, since),
        partial(find_kept_task, log_path),
        session_id=session_id,
    )
    kept.start(loop)
    return kept


def _register(entry: registry.WrapperEntry) -> None:
    """In the registry, for the console to find; a wrapper that cannot be listed serves on and says so."""
    try:
        registry.register(entry)
    except (OSError, UserError) as exc:
        warn(f"the console will not find this wrapper: {exc}")


def _on_signals(loop: asyncio.AbstractEventLoop, on_signal: Callable[[int], None]) -> None:
    """TERM, INT and HUP stop the wrapper cleanly (where the loop can take signal handlers)."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, on_signal, signum)


def _close_otel(otel: OtelSink, recorder: Recorder) -> None:
    """The exporter's last push, bounded; what it could not send is told in the log."""
    otel.close(OTEL_CLOSE_WAIT_S)
    if otel.dropped or otel.spans_failed:
        lost = f"{otel.dropped} events dropped, {otel.spans_failed} spans not sent"
        recorder.emit(Kind.WARNING, message=f"OpenTelemetry: {lost} ({otel.last_error or 'queue full'})")


def all_cores(core: WrapperCore, pool: SessionPool | None) -> list[WrapperCore]:
    """The stdio front's one core, or every host session's on the HTTP front."""
    return [core] if pool is None else [entry.core for entry in pool.all()]


async def _sweep(interval_s: float, cores: Callable[[], list[WrapperCore]]) -> None:
    """Expired tombstones out of every core's table, every `interval_s`."""
    while True:
        await asyncio.sleep(interval_s)
        for each in cores():
            each.sweep_tombstones()


async def _start_metrics(
    options: WrapOptions, fold: MetricFold, read_status: Callable[[], dict[str, Any]]
) -> MetricsServer | None:
    """The Prometheus scrape endpoint of --metrics-port (the fold exists only with one)."""
    from mcpwatch.prometheus.endpoint import start_metrics

    if options.metrics_port is None:
        return None
    return await start_metrics(
        options.settings.metrics.host,
        options.metrics_port,
        options.display_name,
        fold,
        read_status,
        remote=options.allow_remote,
        token=options.front_token,
    )


async def _close_upstreams(core: WrapperCore, upstream: Any, pool: SessionPool | None, reason: str) -> None:
    """The calls still open ended for `reason`, then the upstream (or every host session's) closed."""
    if pool is None:
        core.shutdown(reason)
        await upstream.close()
    else:
        pool.shutdown(reason)
        await pool.close(reason)


def _slow_tools(
    loop: asyncio.AbstractEventLoop,
    budget_s: Callable[[str], float | None],
    on_warning: Callable[[str], None],
    cores: Callable[[], list[WrapperCore]],
) -> SlowTools:
    """[tasks] offer_slow: the tools whose calls ended slow, learnt from the log and live, offered as tasks; each new
    offer is said once and told to the hosts that take tasks."""

    def offered_now(offered: list[tuple[str, str]]) -> None:
        on_warning(offered_line(offered))  # one line per read of the log (or per tool learnt live)
        for each in cores():
            capabilities = (each.session.init_result or {}).get("capabilities")
            tell_hosts(each.links, each.bridge.host_has_tasks, capabilities)

    return SlowTools(
        budget_s,
        on_offered=lambda offered: loop.call_soon(offered_now, offered),  # not within the event that taught it
        on_problem=lambda text: loop.call_soon(on_warning, text),
    )


def _operator_actions(core: WrapperCore, pool: SessionPool | None, deadline: DeadlinePolicy, recorder: Recorder) -> Any:
    """What the operator tools act on: the one core, or every host session's through the pool."""
    if pool is None:
        return OperatorActions(core)
    from mcpwatch.wrapper.operator.actions_pool import PoolActions

    return PoolActions(pool, deadline, recorder)


def _front(core: WrapperCore, pool: SessionPool | None, options: WrapOptions, on_warning: Callable[[str], None]) -> Any:
    """The host side: the HTTP front over the pool's sessions, or stdio linked to the one core."""
    if pool is not None:
        return _http_front(pool, options, on_warning)
    from mcpwatch.wrapper.fronts.front_stdio import StdioFront

    front = StdioFront(core)
    core.attach_link(front)
    return front


async def run_wrapper(options: WrapOptions) -> int:
    """Run one wrapper until the host leaves or a signal comes; its exit code. Each step is one method of
    `_Wrapper`, in the order they happen."""
    wrapper = _Wrapper(options, asyncio.get_running_loop())
    wrapper.open_log_and_sinks()
    wrapper.prepare_core_parts()
    wrapper.build_cores()
    wrapper.record_start()
    await wrapper.start_endpoints()
    return await wrapper.serve()


class _Wrapper:
    """One wrapper's parts, built in order: the log and the sinks and the recorder over them; the policies and the
    parts every core shares; the cores and the upstream (one, or one per HTTP host session through the pool); the
    operator endpoint, the scrape endpoint and the registry; then the front, served until it ends or a signal
    comes, and the one shutdown path."""

    writer: EventWriter | None
    session_id: str
    otel: OtelSink | None
    fold: MetricFold | None
    slow: SlowTools | None
    recorder: Recorder
    deadline: DeadlinePolicy
    state_sync: StateSync | None
    overlaps: list[str]
    offers: SharedOffers
    discover_memo: DiscoverMemo
    core: WrapperCore
    upstream: Any
    actions: Any
    operator: OperatorServer
    metrics: MetricsServer | None

    def __init__(self, options: WrapOptions, loop: asyncio.AbstractEventLoop) -> None:
        self.options = options
        self.settings = settings = options.settings
        self.loop = loop
        self.log_path = options.log_path or (Path(settings.log.path) if settings.log.path else paths.default_log_path())
        self.state_problem = _state_dir_problem()
        if self.state_problem is not None:
            warn(f"{self.state_problem}; serving on without the registry there (and without the log if it is there)")
        self.off_reason = "--no-log" if options.no_log else self.state_problem
        self.early_warnings: list[str] | None = []  # until session_start is recorded
        self.translator: EraTranslator | None = None  # the HTTP front's: 2025-era sessions' extension-only calls
        self.pool: SessionPool | None = None
        self.stop_reason = "host closed the connection"

    def on_warning(self, message: str) -> None:
        warn(message)
        if self.early_warnings is not None:
            self.early_warnings.append(message)
        else:
            self.recorder.emit(Kind.WARNING, message=message)

    def all_cores(self) -> list[WrapperCore]:
        return all_cores(self.core, self.pool)

    def open_log_and_sinks(self) -> None:
        """The log, the optional sinks (OpenTelemetry, the scrape's fold, the slow tools' learning) and the recorder
        writing to all of them."""
        options, settings = self.options, self.settings
        self.writer = _open_log(options, self.log_path, self.state_problem)
        self.session_id = _start_session(options, self.writer)
        self.otel = start_otel(settings, self.loop, self.on_warning)
        self.fold = None
        if options.metrics_port is not None:
            from mcpwatch.prometheus.fold import MetricFold

            self.fold = MetricFold()
        self.slow = None
        if settings.tasks.offer_slow:  # learns from this session's ends beside the log; offers them as tasks
            self.slow = _slow_tools(
                self.loop, lambda tool: self.deadline.budget(tool).seconds, self.on_warning, self.all_cores
            )
        sinks = [sink for sink in (self.writer, self.otel, self.fold, self.slow) if sink is not None]
        self.recorder = Recorder(self.session_id, sinks[0] if len(sinks) == 1 else Tee(*sinks) if sinks else None)

    def prepare_core_parts(self) -> None:
        """What every core shares: the deadline policy, State Sync, the task offers, the discover memo."""
        options, settings, writer, slow = self.options, self.settings, self.writer, self.slow
        self.deadline = DeadlinePolicy(settings.deadline, on_warning=self.on_warning)
        if slow is not None and writer is not None:  # what the log shows of this upstream's calls: bounded, a thread
            from mcpwatch.store.slow_calls import recent_call_ends

            read = partial(recent_call_ends, self.log_path, options.upstream_target, exclude=self.session_id)
            slow.reading(self.loop.run_in_executor(None, read))
        self.state_sync, self.overlaps = _state_sync(settings)
        upstream_id = upstream_key(options.upstream_target)
        kept = None
        if writer is not None and (settings.tasks.offer or slow is not None):
            kept = _kept_log(settings, self.log_path, upstream_id, self.session_id, self.loop)
        self.offers = SharedOffers(
            kept=kept,
            also_offered=slow.offers if slow is not None else None,
            upstream=upstream_id,
            held=HeldResults(settings.tasks.results_memory_mb * 1024 * 1024),
        )
        # the upstream's last server/discover answer: the core 2026-era hosts use while the upstream starts
        memo_file = None if self.state_problem is not None else memo_path(paths.state_dir(), options.upstream_target)
        self.discover_memo = DiscoverMemo(memo_file, options.upstream_target, self.recorder.warn)

    def make_core(self, host_session: str | None, *, shared: bool = False) -> WrapperCore:
        """A core: the stdio front's only one, or one per HTTP host session (its events carry the session)."""
        options, translator, otel, fold = self.options, self.translator, self.otel, self.fold
        made = WrapperCore(
            settings=self.settings,
            deadline=self.deadline,
            recorder=self.recorder if host_session is None else HostSessionRecorder(self.recorder, host_session),
            state_sync=self.state_sync,
            name=options.display_name,
            loop=self.loop,
            shared=shared,
            front="http" if options.listen else "stdio",
            trace_requests=otel is not None and otel.target.traces_url is not None,
            on_tools_listed=None if fold is None else fold.tools.add_listed,
            offers=self.offers,
            discover_memo=self.discover_memo if host_session is None or shared else None,
            translate=translator.take if translator is not None and not shared else None,
        )
        if translator is not None and not shared:  # its calls made in the 2026 era end with its session
            made.on_detach.append(translator.session_ended)
        return made

    def build_cores(self) -> None:
        """The one core and its upstream (stdio front), or the shared core and the pool of host sessions (HTTP)."""
        if not self.options.listen:
            self.core = self.make_core(None)
            self.upstream = _make_upstream(self.options, self.core)
            self.core.attach_upstream(self.upstream)
            return
        from mcpwatch.wrapper.fronts.era_translate import EraTranslator
        from mcpwatch.wrapper.fronts.front_sessions import SHARED_TAG, SessionPool

        core = self.core = self.make_core(SHARED_TAG, shared=True)
        self.translator = EraTranslator(core, lambda: self.pool.shared_session() if self.pool is not None else None)
        settings, recorder = self.settings, self.recorder
        self.pool = SessionPool(
            make_core=self.make_core,
            on_refused=lambda why, now_open, cap, refused: recorder.emit(
                Kind.HOST_SESSION_REFUSED,
                **HostSessionRefusedData(message=why, open=now_open, max=cap, refused=refused),
            ),
            make_upstream=lambda made: _make_upstream(self.options, made),
            shared_core=core,
            max_sessions=settings.front.max_sessions,
            idle_s=settings.front.session_idle_s,
            clock=core.scheduler.time,
        )
        self.upstream = self.pool.shared.upstream

    def record_start(self) -> None:
        """`session_start`, then the warnings said before it, then State Sync's overlaps."""
        options, settings = self.options, self.settings
        start = SessionStartData(
            name=options.display_name,
            pid=os.getpid(),
            version=__version__,
            front="http" if options.listen else "stdio",
            upstream={"kind": self.upstream.kind, "target": self.upstream.target},
            config=settings.snapshot(),
            deadline=self.deadline.budget(None).to_dict(),
            tombstone_ttl=self.core.ttl_terms().to_dict(),
            state_sync={"policies": len(settings.state_sync.policies), "overlaps": self.overlaps},
        )
        self.recorder.emit(Kind.SESSION_START, **start)
        for message in self.early_warnings or ():
            self.recorder.emit(Kind.WARNING, message=message)
        self.early_warnings = None
        for overlap in self.overlaps:
            self.on_warning(f"State Sync: {overlap}")

    def log_info(self) -> LogStatus:
        return _log_info(self.writer, self.log_path, self.session_id, self.off_reason)

    def otel_status(self) -> Any:
        return None if self.otel is None else self.otel.status()

    def read_status(self) -> dict[str, Any]:
        return {**self.actions.status(), "log": self.log_info(), "otel": self.otel_status()}

    async def start_endpoints(self) -> None:
        """The operator endpoint, the scrape endpoint (with --metrics-port), the registry file, the start-up line."""
        options, settings, slow = self.options, self.settings, self.slow
        token = new_token()
        self.actions = _operator_actions(self.core, self.pool, self.deadline, self.recorder)
        operator_app = build_operator_app(
            self.actions,
            self.recorder,
            token=token,
            log_info=self.log_info,
            health_tool=settings.upstream.health_tool,
            otel_info=self.otel_status,
            offered_slow=None if slow is None else slow.describe,
        )
        operator_limits = within_descriptors(timed_limits(settings.operator), share=1 / 8)
        self.operator = OperatorServer(
            operator_app, port=options.operator_port or settings.operator.port, limits=operator_limits
        )
        operator_url = await self.operator.start()
        self.metrics = None
        if self.fold is not None:
            self.metrics = await _start_metrics(options, self.fold, self.read_status)
        entry = registry.WrapperEntry(
            pid=os.getpid(),
            name=options.display_name,
            operator_url=operator_url,
            token=token,
            log_path="" if self.writer is None else str(self.log_path),
            session_id=self.session_id,
            upstream=options.upstream_target,
            started_at=time.time(),
        )
        if self.state_problem is None:
            _register(entry)
        log_path = None if self.writer is None else self.log_path
        say(startup_line(options, log_path))

    def on_signal(self, signum: int, stop: asyncio.Event) -> None:
        self.stop_reason = f"received {signal.Signals(signum).name}"
        stop.set()

    async def serve(self) -> int:
        """Serve the host until its side ends or a signal comes; then the one shutdown path. The exit code."""
        stop = asyncio.Event()
        _on_signals(self.loop, lambda signum: self.on_signal(signum, stop))
        front = _front(self.core, self.pool, self.options, self.on_warning)
        # the HTTP front starts an upstream per host session (and the shared one on the first sessionless request)
        upstream_task = asyncio.ensure_future(self.upstream.run() if self.pool is None else asyncio.sleep(0))
        sweeper = asyncio.ensure_future(_sweep(self.settings.tombstones.sweep_interval_s, self.all_cores))
        if self.slow is not None:  # the upstream starts meanwhile
            await self.slow.read_or_wait()
        front_task = asyncio.ensure_future(front.serve())
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({front_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        exit_code = 0
        if front_task.done() and front_task.exception() is not None:
            warn(f"the host side failed: {front_task.exception()}")
            exit_code = 1
        try:
            await _close_upstreams(self.core, self.upstream, self.pool, self.stop_reason)
            await front.close()
        finally:
            for task in (sweeper, stopper, front_task, upstream_task):
                task.cancel()
            await self.close()
        return exit_code

    async def close(self) -> None:
        """The endpoints stopped, the export flushed, `session_end` with the counters, the log closed, the registry
        file removed."""
        await self.operator.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        exit_by = time.monotonic() + EXIT_WAIT_S
        if self.otel is not None:
            _close_otel(self.otel, self.recorder)
        counters = self.core.counters.to_dict() if self.pool is None else self.actions.status()["counters"]
        self.recorder.emit(Kind.SESSION_END, **SessionEndData(reason=self.stop_reason, counters=counters))
        remaining = max(0.5, exit_by - time.monotonic())
        _close_log(self.writer, self.log_path, self.session_id, self.stop_reason, remaining)
        if self.state_problem is None:
            registry.unregister(os.getpid())
