"""The model's session part: the session as a whole — start and end, host and upstream, the deadline settings and
their changes, health checks, invalidations and warnings. It owns that state; the counts go to the `Tally`, the
notable things to the `NotableLog` it is given.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from mcpwatch.console.headless.coerce import as_int, as_num, as_strs, as_text, clock_text
from mcpwatch.console.headless.notable import NotableLog
from mcpwatch.console.headless.panels import deadline
from mcpwatch.console.headless.panels.deadline import ConfigChangeView, DeadlineView
from mcpwatch.console.headless.panels.invalidations import InvalidationView
from mcpwatch.console.headless.panels.warnings import WarningView
from mcpwatch.console.headless.tally import Tally
from mcpwatch.console.headless.views import Limits
from mcpwatch.events import (
    ConfigChangeData,
    Event,
    HealthCheckData,
    HostInfoData,
    HostSessionRefusedData,
    InvalidationData,
    SessionEndData,
    SessionStartData,
    UnknownResponseData,
    UpstreamStateData,
    WarningData,
)
from mcpwatch.logview.estimate import council_estimates


class SessionPart:
    """Folds session, host, upstream, configuration, health and warning events."""

    def __init__(self, limits: Limits, tally: Tally, notable: NotableLog) -> None:
        self.tally = tally
        self.notable = notable
        self.header: dict[str, Any] = {}
        self.ended: str | None = None
        self.ended_mono: float | None = None
        self.deadline: dict[str, Any] = {}
        self.ttl_terms: dict[str, float | None] = {}
        self.state_sync_policies: int | None = None
        self.health: dict[str, Any] = {}
        self.health_history: deque[float] = deque(maxlen=limits.health_history)
        self.tiers: dict[str, dict[str, Any]] = {}
        self.tier_estimates: dict[str, float] = {}  # the council's own, from its health check
        self.invalidations: deque[InvalidationView] = deque(maxlen=limits.invalidations)
        self.warnings: deque[WarningView] = deque(maxlen=limits.warnings)
        self.config_changes: deque[ConfigChangeView] = deque(maxlen=limits.config_changes)

    def copy(self, tally: Tally, notable: NotableLog) -> SessionPart:
        """A copy folding into `tally` and `notable` (the copies of this one's): containers copied, items shared."""
        clone = SessionPart.__new__(SessionPart)
        clone.__dict__.update(self.__dict__)
        clone.tally, clone.notable = tally, notable
        clone.header, clone.deadline, clone.ttl_terms = dict(self.header), dict(self.deadline), dict(self.ttl_terms)
        clone.health = dict(self.health)
        clone.tiers = {k: dict(v) for k, v in self.tiers.items()}
        for name in ("health_history", "invalidations", "warnings", "config_changes"):
            items: deque[Any] = getattr(self, name)
            setattr(clone, name, deque(items, maxlen=items.maxlen))
        return clone

    def deadline_view(self) -> DeadlineView:
        return deadline.build(self.deadline)

    def start(self, event: Event, mono: float, data: SessionStartData) -> None:
        """A session_start, folded into a fresh part (the model resets every part first)."""
        upstream: Mapping[str, Any] = got if isinstance(got := data.get("upstream"), Mapping) else {}
        self.header.update(
            name=as_text(data.get("name")),
            pid=as_int(data.get("pid")),
            version=as_text(data.get("version")),
            front=as_text(data.get("front")),
            upstream_kind=as_text(upstream.get("kind")),
            upstream_target=as_text(upstream.get("target")),
        )
        if isinstance(data.get("deadline"), Mapping):
            self.set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self.set_ttl_terms(data["tombstone_ttl"])
        state_sync = data.get("state_sync")
        if isinstance(state_sync, Mapping):
            self.state_sync_policies = as_int(state_sync.get("policies"))
            for overlap in as_strs(state_sync.get("overlaps")):
                self.warnings.append(WarningView(mono, f"state sync overlap: {overlap}"))

    def end(self, event: Event, mono: float, data: SessionEndData) -> None:
        self.ended = as_text(data.get("reason")) or "ended"
        self.ended_mono = mono
        self.header["upstream_state"] = "closed"  # the wrapper is gone, and its upstream with it
        self.header["retry_in_s"] = None
        counters = data.get("counters")
        if isinstance(counters, Mapping):
            self.tally.settle(counters)

    def host_info(self, event: Event, mono: float, data: HostInfoData) -> None:
        self.header.update(
            host_name=as_text(data.get("name")),
            host_version=as_text(data.get("version")),
            protocol_version=as_text(data.get("protocol_version")),
            host_profile=as_text(data.get("label")),
            host_clock=clock_text(data.get("deciding_clock")),
        )

    def upstream_state(self, event: Event, mono: float, data: UpstreamStateData) -> None:
        notable = self.notable
        before = notable.total
        notable.upstream_state(mono, data)
        if notable.total > before and notable.items[-1].kind == "upstream_exit":
            item = notable.items[-1]
            last = f" — {item.detail[-1]}" if item.detail else ""
            self.warnings.append(WarningView(mono, item.text + last))
        header = self.header
        header["upstream_state"] = as_text(data.get("state"))
        generation = as_int(data.get("generation"))
        if generation is not None:
            header["generation"] = generation
        header["retry_in_s"] = as_num(data.get("retry_in_s"))
        header["exit_code"] = as_int(data.get("exit_code"))
        header["stderr_tail"] = as_strs(data.get("stderr_tail"))
        header["state_mono"] = mono

    def unknown_response(self, event: Event, mono: float, data: UnknownResponseData) -> None:
        self.tally.add("unknown_dropped")

    def invalidation(self, event: Event, mono: float, data: InvalidationData) -> None:
        self.tally.add("invalidations")
        caused_by = as_text(data.get("caused_by")) or as_text(event.tool)
        self.invalidations.append(InvalidationView(mono, 0.0, caused_by, as_strs(data.get("patterns"))))

    def health_check(self, event: Event, mono: float, data: HealthCheckData) -> None:
        ping = as_num(data.get("ping_ms"))
        ok = data.get("ok")
        self.health = {
            "ok": ok if isinstance(ok, bool) else None,
            "ping_ms": ping,
            "tool": as_text(data.get("tool")) or as_text(event.tool),
            "error": as_text(data.get("error")),
            "at_mono": mono,
            "latency_ms": as_num(data.get("latency_ms")),
            "source": as_text(data.get("source")),
        }
        if ping is not None:
            self.health_history.append(ping)
        result = data.get("result")
        self.tier_estimates = council_estimates([event]) or self.tier_estimates
        if isinstance(result, Mapping):
            tiers = result.get("tiers")
            if isinstance(tiers, Mapping):
                self.tiers = {str(name): dict(body) for name, body in tiers.items() if isinstance(body, Mapping)}
                self.notable.tiers(mono, self.tiers, self.deadline_view().limit_s)
            multiplier = as_num(result.get("timeout_multiplier"))
            if multiplier is not None:
                self.health["timeout_multiplier"] = multiplier

    def config_change(self, event: Event, mono: float, data: ConfigChangeData) -> None:
        if isinstance(data.get("deadline"), Mapping):
            self.set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self.set_ttl_terms(data["tombstone_ttl"])
        key = as_text(data.get("key")) or "?"
        self.notable.config_change(mono, data)
        self.config_changes.append(
            ConfigChangeView(mono, key, data.get("old"), data.get("new"), as_text(data.get("source")))
        )

    def warning(self, event: Event, mono: float, data: WarningData) -> None:
        message = as_text(data.get("message")) or "(no message)"
        self.warnings.append(WarningView(mono, message))
        self.notable.warning(mono, message)

    def host_session_refused(self, event: Event, mono: float, data: HostSessionRefusedData) -> None:
        """A refused host: the warning it is, and the front's counts as the refusal gave them."""
        self.warning(event, mono, data)
        known = dict(self.header.get("host_sessions") or {})
        known.update({k: v for k in ("open", "max") if (v := as_int(data.get(k))) is not None})
        known["refused"] = known.get("refused", 0) + max(0, as_int(data.get("refused")) or 0)  # those it stands for
        self.header["host_sessions"] = known

    def host_sessions(self, status: Mapping[str, Any]) -> None:
        """An HTTP front's host sessions from the wrapper's `status()` (open of max, reclaimed, refused); the
        stdio front has none and the header says nothing about them."""
        wrapper: Mapping[str, Any] = got if isinstance(got := status.get("wrapper"), Mapping) else {}
        sessions = wrapper.get("host_sessions")
        if isinstance(sessions, Mapping):
            self.header["host_sessions"] = {
                k: v for k in ("open", "max", "reclaimed", "refused") if (v := as_int(sessions.get(k))) is not None
            }

    def set_deadline(self, block: Mapping[str, Any]) -> None:
        self.deadline = {
            "host_timeout_s": as_num(block.get("host_timeout_s")),
            "margin_s": as_num(block.get("margin_s")),
            "override_s": as_num(block.get("override_s")),
            "budget_s": as_num(block.get("budget_s")),
            "source": as_text(block.get("source")),
            "explanation": as_text(block.get("explanation")),
        }

    def set_ttl_terms(self, terms: Mapping[str, Any]) -> None:
        self.ttl_terms = {
            name: as_num(terms.get(name)) for name in ("init_timeout_s", "backoff_max_s", "epsilon_s", "total_s")
        } | {"request_timeout_s": as_num(terms.get("request_timeout_s"))}

    def seed(self, status: Mapping[str, Any]) -> None:
        """What a `status()` says about the wrapper, its host and its settings, where the events said nothing."""
        wrapper: Mapping[str, Any] = got if isinstance(got := status.get("wrapper"), Mapping) else {}
        header = self.header
        for key in ("name", "version"):
            header.setdefault(key, as_text(wrapper.get(key)))
        header.setdefault("pid", as_int(wrapper.get("pid")))
        upstream: Mapping[str, Any] = got if isinstance(got := wrapper.get("upstream"), Mapping) else {}
        header.setdefault("upstream_kind", as_text(upstream.get("kind")))
        header.setdefault("upstream_target", as_text(upstream.get("target")))
        header.setdefault("upstream_state", as_text(upstream.get("state")))
        header.setdefault("generation", as_int(upstream.get("generation")))
        host = wrapper.get("host")
        if isinstance(host, Mapping):
            header.setdefault("host_name", as_text(host.get("name")))
            header.setdefault("host_version", as_text(host.get("version")))
            header.setdefault("host_profile", as_text(host.get("label")))
            header.setdefault("host_clock", clock_text(host.get("deciding_clock")))
        elif host is not None:
            header.setdefault("host_name", as_text(host))
        self.host_sessions(status)
        block = status.get("deadline")
        if isinstance(block, Mapping) and not self.deadline:
            self.set_deadline(block)
        tomb: Mapping[str, Any] = got if isinstance(got := status.get("tombstones"), Mapping) else {}
        terms = tomb.get("terms")
        if isinstance(terms, Mapping) and not self.ttl_terms:
            self.set_ttl_terms(terms)
        state_sync = status.get("state_sync")
        if isinstance(state_sync, Mapping) and self.state_sync_policies is None:
            self.state_sync_policies = as_int(state_sync.get("policies"))
