"""A host names a request's method, and every call's `request_start` and `request_end` carry it: a method of a
megabyte sat whole in the 10,000 events the recorder's ring holds (and in the log, and in the export's queue while
a collector stalls), so a host made the wrapper hold gigabytes by name alone. A long method is kept in events as
tool names and ids are (its start and a digest, `frames.bounded_key`); the upstream still gets the request as sent."""

from __future__ import annotations

from taskrig import TaskRig

from mcpwatch.events import Kind
from mcpwatch.wrapper.framing import frames


def test_a_method_of_a_megabyte_is_held_as_a_bounded_key(loop) -> None:
    rig = TaskRig(loop, host_timeout_s=30.0, margin_s=5.0)
    methods = ["x/" + "m" * (1 << 20), "y/\ud800" + "m" * (1 << 20)]  # the second not even Unicode (a lone surrogate)
    ups = [rig.request(n, method, {}) for n, method in enumerate(methods)]
    assert [m["method"] for m in rig.upstream.sent if m.get("id") in ups] == methods  # forwarded whole
    for up_id in ups:
        rig.answer(up_id, {})
    logged = [e.data["method"] for e in rig.events(Kind.REQUEST_START, Kind.REQUEST_END)]
    assert len(logged) == 4 and all(len(method) <= frames.KEY_MAX + 40 for method in logged)
    # the two starts, then the two ends: each method's own key, the two still told apart
    assert logged == [frames.bounded_key(methods[0]), frames.bounded_key(methods[1])] * 2
    assert logged[0] != logged[1]
