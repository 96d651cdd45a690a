"""State Sync (seed: state-sync): cache-control hints on tools/list and invalidation signals on tools/call.

glob (matching), validate (fail-fast config checks), policy (first-match-wins resolution), overlap (shadowed
policies), decorate (the tools/list and tools/call transformations). Pure: no I/O, no transport.
"""

from mcpwatch.reliability.statesync.decorate import (
    InvalidationEvent,
    StateSync,
    cache_control_tag,
    decorate_description,
    invalidation_text,
    policies_from_settings,
    resource_notifications,
)
from mcpwatch.reliability.statesync.glob import MAX_ITERATIONS, match_glob, match_segments
from mcpwatch.reliability.statesync.overlap import OverlapWarning, covers, detect_overlaps, uncovered_name
from mcpwatch.reliability.statesync.policy import CACHE_MAX, PolicyEngine, ResolvedPolicy
from mcpwatch.reliability.statesync.validate import (
    CACHE_DIRECTIVES,
    Policy,
    StateSyncConfigError,
    parse_policies,
    pattern_problem,
    validate_config,
)

__all__ = [
    "CACHE_DIRECTIVES",
    "CACHE_MAX",
    "MAX_ITERATIONS",
    "InvalidationEvent",
    "OverlapWarning",
    "Policy",
    "PolicyEngine",
    "ResolvedPolicy",
    "StateSync",
    "StateSyncConfigError",
    "cache_control_tag",
    "covers",
    "decorate_description",
    "detect_overlaps",
    "invalidation_text",
    "match_glob",
    "match_segments",
    "parse_policies",
    "pattern_problem",
    "policies_from_settings",
    "resource_notifications",
    "uncovered_name",
    "validate_config",
]
