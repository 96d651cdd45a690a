"""The demo's mcpwatch.toml: State Sync over the council's admin tools, and a deadline the slow tiers exceed."""

DEMO_TOML = """\
# mcpwatch demo configuration (written by `mcpwatch demo`; a good starting point for your own)
[deadline]
host_timeout_s = 8       # what the host would allow a tools/call
margin_s = 3             # the budget is 8 - 3 = 5 s: the high and reasoning tiers take longer
propagate = false        # the council is not told the deadline here, so the wrapper's rescue is visible:
                         # partial results, cancellation upstream, tombstones (set true to let it finish early)

[hosts.mcpwatch-demo-host]  # the demo's own host (its clientInfo name): a profile, not an "unknown host"
label = "mcpwatch demo host"
wall_s = 8               # it gives up on a tools/call after 8 s, as host_timeout_s says

[tombstones]
sweep_interval_s = 5

[state_sync]
default_cache_control = "no-store"

[[state_sync.policies]]
match = "council.models.list"
cache_control = "no-store"

[[state_sync.policies]]
match = "council.chairman.get"
cache_control = "no-store"

[[state_sync.policies]]
match = "council.models.*"
invalidates = ["council.models.*", "council.chairman.*"]

[[state_sync.policies]]
match = "council.chairman.set"
invalidates = ["council.chairman.*"]

[[state_sync.policies]]
match = "council_health_check"
cache_control = "no-store"
"""
