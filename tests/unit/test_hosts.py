"""Host profiles: matching client names, the deciding clock, `[hosts.*]` overrides, and every budget precedence case."""

from __future__ import annotations

import pytest

from mcpwatch.config import DeadlineSettings, settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.reliability.deadline import ENV_EXPLICIT, ENV_HOST_TIMEOUT, ENV_MARGIN, DeadlinePolicy
from mcpwatch.reliability.hosts import (
    HostProfileError,
    apply_overrides,
    builtin_profiles,
    catalog,
    check_override_tables,
)

# clientInfo.name → (profile key, budget on the stdio front, on the HTTP front), without a progress token, margin 10 s
EXPECTED = {
    "claude-code": ("claude-code", 1790, 290),  # the idle clock (30 min on stdio, 5 min remote): no token here
    "claude-ai": (("claude-desktop", "claude-ai"), 50, 50),  # one name, two hosts: Desktop (stdio), claude.ai (HTTP)
    "cursor-vscode": ("cursor", 290, 290),
    "Visual Studio Code": ("vscode", 110, 110),  # no tool clock: the default host timeout
    "Visual Studio Code - Insiders": ("vscode", 110, 110),
    "codex-mcp-client": ("codex", 50, 50),
    "gemini-cli-mcp-client": ("gemini-cli", 590, 590),
    "Windsurf": ("windsurf", 110, 110),
    "windsurf-client": ("windsurf", 110, 110),
    "github-copilot-developer": ("copilot-cli", 50, 50),
    "mcp-inspector": ("inspector", 50, 50),  # its 60 s request timeout (reset by progress, but no token here)
    "inspector-client": ("inspector", 50, 50),
}


def policy(settings: DeadlineSettings | None = None, **env: str) -> tuple[DeadlinePolicy, list[str]]:
    warnings: list[str] = []
    return DeadlinePolicy(settings or DeadlineSettings(), environ=env, on_warning=warnings.append), warnings


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_known_client_name_picks_its_profile_and_budget_on_each_front(name):
    keys, stdio_budget, http_budget = EXPECTED[name]
    keys = keys if isinstance(keys, tuple) else (keys, keys)
    hosts = catalog()
    p, _ = policy()
    for front, key, expected in (("stdio", keys[0], stdio_budget), ("http", keys[1], http_budget)):
        host = hosts.detect({"name": name, "version": "1.2.3"}, front)
        assert host.profile is not None and host.profile.key == key
        assert p.budget("t", host).seconds == expected


def test_the_same_name_on_different_fronts_is_a_different_host():
    hosts = catalog()
    assert hosts.match("claude-ai", "stdio").label == "Claude Desktop"
    assert hosts.match("claude-ai", "http").label == "claude.ai connectors"
    assert hosts.match("CLAUDE-CODE", "stdio").key == "claude-code"  # case does not matter


def test_unknown_and_missing_names_get_the_default_and_are_named_unknown():
    hosts = catalog()
    p, _ = policy()
    for info, label in (({"name": "my-agent"}, "unknown host 'my-agent'"), (None, "unknown host (no clientInfo)")):
        host = hosts.detect(info, "stdio")
        budget = p.budget("t", host)
        assert host.profile is None and host.label == label
        assert budget.seconds == 110 and budget.host == label
        assert budget.explanation == f"host timeout 120 s (default; {label}) − margin 10 s"


def test_the_explanation_names_the_deciding_clock():
    p, _ = policy()
    codex = catalog().detect({"name": "codex-mcp-client"}, "stdio")
    budget = p.budget("t", codex)
    assert budget.explanation == "Codex CLI tool_timeout_sec 60 s − margin 10 s"
    assert budget.clock == "tool_timeout_sec 60 s" and budget.host == "Codex CLI"
    assert budget.to_dict()["clock"] == "tool_timeout_sec 60 s"


def test_a_progress_token_takes_idle_clocks_out_of_the_budget():
    p, _ = policy()
    code = catalog().detect({"name": "claude-code"}, "http")
    without, with_token = p.budget("t", code, progress=False), p.budget("t", code, progress=True)
    assert (without.seconds, without.clock) == (290, "CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT 300 s")
    assert (with_token.seconds, with_token.clock) == (340, "HTTP request cut 350 s")
    inspector = catalog().detect({"name": "mcp-inspector"}, "stdio")
    kept_alive = p.budget("t", inspector, progress=True)
    assert kept_alive.seconds == 110 and kept_alive.clock is None
    assert kept_alive.explanation == "host timeout 120 s (default; no MCP Inspector clock ends the call) − margin 10 s"
    assert code.idle_clock().seconds == 300 and inspector.idle_clock().seconds == 60
    code_stdio = catalog().detect({"name": "claude-code"}, "stdio")
    assert code_stdio.idle_clock().seconds == 1800
    assert p.budget("t", code_stdio, progress=True).clock == "MCP_TOOL_TIMEOUT 100000 s"


def test_auto_background_does_not_end_the_call():
    code = catalog().get("claude-code")
    background = [c for c in code.clocks if c.kind == "background"]
    assert background and background[0].seconds == 120 and not background[0].ends_call
    assert code.deciding_clock("stdio", progress=True).setting == "MCP_TOOL_TIMEOUT"


def test_every_builtin_profile_has_a_source_and_every_clock_one_too():
    for profile in builtin_profiles():
        assert profile.source, profile.key
        for clock in profile.clocks:
            assert clock.source and clock.setting and clock.change, (profile.key, clock)


# --- precedence: operator › MCPWATCH_TOOL_CALL_DEADLINE_SEC › MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC ›
#     mcpwatch.toml › the host's profile › 120 s ---------------------------------------------------------------


def codex():
    return catalog().detect({"name": "codex-mcp-client"}, "stdio")


def test_precedence_profile_beats_the_default():
    p, _ = policy()
    assert p.budget("t", codex()).seconds == 50
    assert p.budget("t").seconds == 110


def test_precedence_config_host_timeout_beats_the_profile():
    p, _ = policy(DeadlineSettings(host_timeout_s=200))
    budget = p.budget("t", codex())
    assert budget.seconds == 190 and budget.clock is None
    assert budget.explanation == "host timeout 200 s − margin 10 s"


def test_precedence_config_explicit_deadline_beats_the_profile():
    p, _ = policy(DeadlineSettings(explicit_s=33))
    assert p.budget("t", codex()).seconds == 33
    p, _ = policy(DeadlineSettings(tools={"t": 44}))
    assert p.budget("t", codex()).seconds == 44


def test_precedence_env_host_timeout_beats_config_and_profile():
    p, _ = policy(DeadlineSettings(host_timeout_s=200), **{ENV_HOST_TIMEOUT: "300"})
    budget = p.budget("t", codex())
    assert budget.seconds == 290 and budget.explanation.startswith(f"host timeout 300 s ({ENV_HOST_TIMEOUT})")


def test_precedence_env_deadline_beats_env_host_timeout():
    p, _ = policy(**{ENV_HOST_TIMEOUT: "300", ENV_EXPLICIT: "25"})
    assert p.budget("t", codex()).seconds == 25


def test_precedence_operator_beats_everything_until_reset():
    p, _ = policy(DeadlineSettings(host_timeout_s=200), **{ENV_HOST_TIMEOUT: "300", ENV_EXPLICIT: "25"})
    p.set_deadline(12)
    assert p.budget("t", codex()).seconds == 12
    p.set_deadline(None)
    p.set_host_timeout(80)
    assert p.budget("t", codex()).seconds == 70  # a runtime host timeout beats the explicit variable too
    p.reset()
    assert p.budget("t", codex()).seconds == 25


def test_precedence_env_host_timeout_beats_the_files_explicit_values():
    settings = DeadlineSettings(explicit_s=33, tools={"t": 44})
    p, _ = policy(settings, **{ENV_HOST_TIMEOUT: "300"})
    assert p.budget("t", codex()).seconds == 290 and p.budget("other", codex()).seconds == 290
    p, _ = policy(settings)
    assert p.budget("t", codex()).seconds == 44 and p.budget("other", codex()).seconds == 33


def test_precedence_operator_host_timeout_beats_the_profile():
    p, _ = policy()
    p.set_host_timeout(30)
    assert p.budget("t", codex()).seconds == 20
    p.reset()
    assert p.budget("t", codex()).seconds == 50


def test_a_bad_env_host_timeout_falls_back_to_the_profile_with_a_warning():
    p, warnings = policy(**{ENV_HOST_TIMEOUT: "soon"})
    assert p.budget("t", codex()).seconds == 50
    assert warnings and "using host timeout 60 s" in warnings[0]


def test_the_margin_still_applies_to_a_profile_clock():
    p, _ = policy(**{ENV_MARGIN: "5"})
    assert p.budget("t", codex()).seconds == 55


# --- [hosts.*] overrides ---------------------------------------------------------------------------------


def test_a_hosts_table_overrides_a_builtin_clock_and_keeps_the_hosts_own_setting_name():
    hosts = catalog({"codex-mcp-client": {"wall_s": 300}})
    host = hosts.detect({"name": "codex-mcp-client"}, "stdio")
    p, _ = policy()
    budget = p.budget("t", host)
    assert budget.seconds == 290
    assert budget.explanation == "Codex CLI tool_timeout_sec 300 s − margin 10 s"
    assert host.profile.origin == "mcpwatch.toml"


def test_a_hosts_table_by_profile_key_changes_every_front_of_a_shared_name():
    hosts = catalog({"claude-ai": {"wall_s": 90}})
    assert hosts.match("claude-ai", "stdio").deciding_clock("stdio", False).seconds == 90
    assert hosts.match("claude-ai", "http").deciding_clock("http", False).seconds == 90


def test_a_hosts_table_adds_an_unknown_host():
    hosts = catalog({"my-agent": {"label": "My agent", "wall_s": 45, "idle_s": 20}})
    host = hosts.detect({"name": "My-Agent"}, "stdio")
    p, _ = policy()
    assert host.label == "My agent"
    assert p.budget("t", host).seconds == 10  # the idle clock (20 s), no progress token
    assert p.budget("t", host, progress=True).seconds == 35
    assert host.idle_clock().resets_on_progress


def test_hosts_tables_from_mcpwatch_toml_are_checked_with_the_key_named():
    settings = settings_from_mapping({"hosts": {"codex-mcp-client": {"wall_s": 120}}}, "x.toml")
    assert settings.hosts == {"codex-mcp-client": {"wall_s": 120}}
    for bad, words in (
        ({"codex-mcp-client": {"wall_s": float("inf")}}, "hosts.codex-mcp-client.wall_s"),
        ({"codex-mcp-client": {"wall_s": -1}}, "must not be negative, got -1"),
        ({"codex-mcp-client": {"wall_s": 0}}, "must be greater than 0, got 0"),
        ({"codex-mcp-client": {"walls": 1}}, "unknown key(s): walls"),
        ({"codex-mcp-client": 5}, "must be a table"),
        ({"x": {"names": []}}, "hosts.x.names"),
        ({"x": {"fronts": ["pigeon"]}}, "hosts.x.fronts"),
    ):
        with pytest.raises(UserError, match=None) as caught:
            settings_from_mapping({"hosts": bad}, "x.toml")
        assert words in str(caught.value) and str(caught.value).startswith("x.toml: ")
    with pytest.raises(HostProfileError):
        check_override_tables([1])


def test_overrides_leave_other_profiles_alone():
    profiles = apply_overrides(builtin_profiles(), {"codex-mcp-client": {"wall_s": 300}})
    gemini = next(p for p in profiles if p.key == "gemini-cli")
    assert gemini.deciding_clock("stdio", False).seconds == 600
    assert len(profiles) == len(builtin_profiles())
