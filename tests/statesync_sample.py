"""The State Sync policies the core's tests (`tests/unit/test_core_statesync.py`) and a real wrapper's
(`tests/integration/test_wrap_statesync_http.py`) both configure, against the raw fixture server's tools."""

POLICIES = """
[state_sync]
default_cache_control = "no-store"
[[state_sync.policies]]
match = "tasks.update"
invalidates = ["tasks.*", "sprints.*"]
[[state_sync.policies]]
match = "tasks.list"
cache_control = "immutable"
"""
