"""The host directory: one host per link, one per 2026-era clientInfo, bounded against hosts that send floods."""

from __future__ import annotations

from mcpwatch.reliability.hosts import NAME_MAX, catalog
from mcpwatch.wrapper.core.hostwatch import SEEN_MAX, HostDirectory


class Link:
    def __init__(self, session_id: str = "") -> None:
        self.session_id = session_id


def directory() -> tuple[HostDirectory, list[tuple[str, dict]]]:
    events: list[tuple[str, dict]] = []
    return HostDirectory(catalog(), lambda kind, **data: events.append((kind, data)), front="http"), events


def meta(name: object) -> dict:
    return {"io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}}


def test_each_link_keeps_its_own_host_until_it_goes():
    hosts, events = directory()
    a, b = Link("s-a"), Link("s-b")
    hosts.initialized(a, {"name": "codex-mcp-client"}, "2025-06-18")
    hosts.initialized(b, {"name": "gemini-cli-mcp-client"}, "2025-06-18")
    assert hosts.for_request(a, None, None).label == "Codex CLI"
    assert hosts.for_request(b, {}, None).label == "Gemini CLI"
    assert [e[1]["host_session"] for e in events] == ["s-a", "s-b"]
    hosts.forget(a)
    assert hosts.for_request(a, None, None) is None and len(hosts.sessions()) == 1


def test_a_2026_era_request_names_its_own_host_and_each_new_host_is_logged_once():
    hosts, events = directory()
    link = Link()
    first = hosts.for_request(link, meta("claude-code"), "2026-07-28")
    assert first.label == "Claude Code" and hosts.for_request(link, meta("claude-code"), "2026-07-28") is first
    assert hosts.for_request(link, meta({"no": "name"}), "2026-07-28").label == "unknown host (no clientInfo)"
    assert hosts.for_request(link, None, "2026-07-28").profile is None
    assert [e[1]["label"] for e in events] == [
        "Claude Code",
        "unknown host (no clientInfo)",
        "unknown host (no clientInfo)",
    ]


def test_floods_of_names_stay_bounded():
    hosts, events = directory()
    link = Link()
    huge = "x" * 5_000_000
    host = hosts.for_request(link, meta(huge), "2026-07-28")
    assert len(host.name) == NAME_MAX and len(events[0][1]["name"]) == NAME_MAX
    for n in range(SEEN_MAX + 10):
        hosts.for_request(link, meta(f"agent-{n}" + huge), "2026-07-28")
    assert len(hosts._modern) <= SEEN_MAX
    assert all(len(key[0]) <= NAME_MAX for key in hosts._modern)
