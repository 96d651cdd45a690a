"""One exit for a call: every way a call ends (answered, cut, cancelled, reused, bridged, failed, its offered task's
end) goes through the pending table (`mcpwatch/wrapper/calls/pending.py`), which alone counts calls and their
outcomes, writes their request_start, late_reuse and request_end, and answers a host's call on its link. The
wrapper's other modules hand it the reply; they never do these themselves.

Read from the source (the syntax tree, not text), so a new ending written elsewhere fails here in the commit that
writes it, whatever its variable names; a comparison with `Kind.REQUEST_END` (a reader) is not an emission."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mcpwatch
from mcpwatch.wrapper.calls import pending

PACKAGE = Path(mcpwatch.__file__).parent
WRAPPER = PACKAGE / "wrapper"
THE_EXIT = WRAPPER / "calls" / "pending.py"
CALL_EVENTS = {"REQUEST_START", "REQUEST_END", "LATE_REUSE"}  # a call's own events, in the table's hands
# the counters a call's start and end move; the others (late frames, garbage, pauses) are not a call's ending
CALL_COUNTERS = {"requests", "degraded", "late_reused", *pending._COUNTER_OF.values()}


def modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield str(path.relative_to(PACKAGE.parent)), ast.parse(path.read_text(), str(path))


def _is_call_event(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Kind"
        and node.attr in CALL_EVENTS
    )


def call_events_emitted(root: Path = WRAPPER) -> set[str]:
    """Modules that pass a call's own event kind to a function (an emission), not merely compare with it."""
    found = set()
    for name, tree in modules(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and any(_is_call_event(arg) for arg in node.args):
                found.add(name)
    return found


def _call_of(node: ast.AST, function: str) -> ast.Call | None:
    """A call of a builtin by name, with arguments: `setattr(counters, …)`, `getattr(link, …)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function and node.args:
        return node
    return None


def _a_call_counter(target: ast.expr) -> bool:
    """`self.counters.ok`, `counters.requests`, `self._counters.late_reused`: the core's `Counters` are always held
    under that name (a per-tool tally's `seen.cancelled` is not one)."""
    return (
        isinstance(target, ast.Attribute)
        and target.attr in CALL_COUNTERS
        and "counters" in ast.unparse(target.value).lower()
    )


def call_counters_moved(root: Path = WRAPPER) -> set[str]:
    """Modules that change a call counter: `counters.ok += 1`, `counters.requests = …`, `setattr(counters, …)`."""
    found = set()
    for name, tree in modules(root):
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.AugAssign):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = node.targets
            if any(_a_call_counter(t) for t in targets):
                found.add(name)
            if (call := _call_of(node, "setattr")) is not None and "counter" in ast.unparse(call.args[0]).lower():
                found.add(name)
    return found


def _answers_a_call(node: ast.expr | None) -> bool:
    """A JSON-RPC response whose id is a host call's id (`host_id`: a `Pending`'s, or the request's before one)."""
    if not isinstance(node, ast.Dict):
        return False
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and key.value == "id":
            named = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
            return named == "host_id"
    return False


def call_answers_sent(root: Path = WRAPPER) -> set[str]:
    """Modules that send a host's call its answer themselves: `link.send({... "id": pending.host_id ...})`, the
    message written in the call or first bound to a name in the same function."""
    found = set()
    for name, tree in modules(root):
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            bound = {
                target.id: node.value
                for node in ast.walk(function)
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr != "send" or not node.args:
                    continue
                message = node.args[0]
                if isinstance(message, ast.Name):
                    message = bound.get(message.id)  # type: ignore[assignment]  # None: not bound here
                if _answers_a_call(message):
                    found.add(name)
    return found


def test_only_the_pending_table_writes_a_calls_start_and_end() -> None:
    the_exit = str(THE_EXIT.relative_to(PACKAGE.parent))
    assert call_events_emitted() == {the_exit}


def test_only_the_pending_table_counts_calls_and_their_outcomes() -> None:
    the_exit = str(THE_EXIT.relative_to(PACKAGE.parent))
    assert call_counters_moved() == {the_exit}


def test_only_the_calls_package_answers_a_hosts_call_on_its_link() -> None:
    calls = str(THE_EXIT.parent.relative_to(PACKAGE.parent))
    assert {name for name in call_answers_sent() if not name.startswith(calls)} == set()


def test_every_host_link_names_its_requests_and_none_is_guessed() -> None:
    """`HostLink.key_prefix` is part of the contract: each class that is a host link (it has a `connection`)
    declares it, and nothing reads it with `getattr` and a default that would drop a host's prefix."""
    missing, guessed = [], []
    for name, tree in modules(PACKAGE):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                members = _members(node)
                if "connection" in members and "send" in members and "key_prefix" not in members:
                    missing.append(f"{name}: {node.name}")
            call = _call_of(node, "getattr")
            if call is not None and [ast.unparse(a) for a in call.args[1:2]] == ["'key_prefix'"]:
                guessed.append(f"{name}:{call.lineno}")
    assert (missing, guessed) == ([], [])


def _members(cls: ast.ClassDef) -> set[str]:
    """What a class declares: class attributes, methods and properties, and what its `__init__` sets on self."""
    names: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.FunctionDef):
            names.add(item.name)
            if item.name == "__init__":
                names.update(
                    node.attr
                    for node in ast.walk(item)
                    if isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                )
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return names


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """Each check finds the ending it forbids, written as the old code wrote it."""
    global PACKAGE
    module = tmp_path / "mcpwatch" / "wrapper" / "reuse.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "def answer(link, counters, recorder, host_id, result):\n"
        "    counters.requests += 1\n"
        "    reply = {'jsonrpc': '2.0', 'id': host_id, 'result': result}\n"
        "    link.send(reply)\n"
        "    recorder.emit(Kind.REQUEST_END, request_id=str(host_id))\n"
        "    if kind == Kind.REQUEST_END:\n"  # a reader: not an emission
        "        pass\n"
        "class Link:\n"
        "    connection = None\n"
        "    def send(self, message): ...\n"
        "prefix = getattr(link, 'key_prefix', '')\n"
    )
    saved, PACKAGE = PACKAGE, tmp_path / "mcpwatch"
    try:
        root = module.parent
        assert (
            call_events_emitted(root)
            == call_counters_moved(root)
            == call_answers_sent(root)
            == {"mcpwatch/wrapper/reuse.py"}
        )
        try:
            test_every_host_link_names_its_requests_and_none_is_guessed()
        except AssertionError as caught:
            assert "Link" in str(caught) and "reuse.py:11" in str(caught)
        else:
            raise AssertionError("a link without key_prefix, and a guessed one, passed")
    finally:
        PACKAGE = saved
