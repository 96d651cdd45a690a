"""Who owns a task mcpwatch offers, and who may reach it (`wrapper.tasks.offer`): never a name a host gives.

A task belongs to the host connection that made it: on stdio the one host of the process ("stdio"), on the HTTP
front its host session ("session <uuid>", a fresh uuid4 the front hands out), and to no connection for a
sessionless 2026-era request. Above the connection stands the principal the front checked: "local" (any process of
this machine may reach a front without a token) or the `--token-file` token's identity (a hash of it). A client's
`clientInfo.name` proves nothing (any process can copy it): it only narrows who may resume a task whose connection
has ended, so another host's new connection is not handed a task by a mistaken id.

- `tasks/list` shows a connection only its own tasks; a sessionless request none.
- Every other operation names the task by its id, unguessable (a capability), and must come from its owner: the
  same connection, or, once the owning connection has ended (a host that reconnected after its session ended, a
  wrapper started again), a connection of the same principal giving the same client name, which then owns it (a
  reconnecting host resumes by id). A task made sessionless is reached by sessionless requests of the same
  principal and client name only; a session's task never by a sessionless request, nor the other way round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpwatch.wrapper.framing.frames import bounded_key

LOCAL = "local"  # the principal of a front without a token (and of stdio): this machine's processes
SESSIONLESS = ""  # the connection of a request that proves none


@dataclass(frozen=True, slots=True)
class Owner:
    principal: str
    connection: str  # SESSIONLESS for a sessionless request
    name: str = ""  # the client name it gave: no proof of anything, only a narrowing of who resumes a task

    @property
    def key(self) -> str:
        """As kept in the log (`KeptTask.owner`)."""
        return f"{self.principal}|{self.connection}|{self.name}"

    @property
    def host(self) -> tuple[str, str]:
        """The host as `[tasks] max_running_per_host` counts it: its connection under its principal (all sessionless
        requests of a principal are one host, whatever names they give)."""
        return self.principal, self.connection


def token_principal(token: str | None) -> str:
    """The principal of requests that showed the front's bearer token (LOCAL without one)."""
    return LOCAL if token is None else "token " + hashlib.sha256(token.encode()).hexdigest()[:16]


def upstream_key(target: str) -> str:
    """The wrapped server's identity in the log (its command or URL, hashed): kept tasks are served to its wrappers
    alone, never by a wrapper of another server that shares the log."""
    return hashlib.sha256(target.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def owner_of(link: Any, name: str = "") -> Owner:
    """A link's owner: its connection name (`HostLink.connection`) under the principal its front checked."""
    connection = getattr(link, "connection", None)
    principal = getattr(link, "task_principal", LOCAL)
    return Owner(
        principal if isinstance(principal, str) else LOCAL,
        connection if isinstance(connection, str) else "",
        bounded_key(name),  # held by each task for its TTL, and in the log: a long name by its digest
    )


def parse_owner(key: Any) -> Owner | None:
    """An owner as the log kept it; None for anything else (a log of an older mcpwatch kept a client name)."""
    if not isinstance(key, str) or key.count("|") < 2:
        return None
    principal, connection, name = key.split("|", 2)
    return Owner(principal, connection, name)


def may_reach(owner: Owner, asker: Owner, live: Callable[[str], bool]) -> bool:
    """Whether `asker`, naming the task by its id, may read, update or cancel a task of `owner`. `live(connection)`:
    that connection is still open in this wrapper (then it alone reaches its tasks)."""
    if owner.principal != asker.principal:
        return False
    if owner.connection == asker.connection != SESSIONLESS:
        return True
    if (owner.connection == SESSIONLESS) != (asker.connection == SESSIONLESS):
        return False  # a sessionless request never reaches a connection's task, nor a connection a sessionless one
    if owner.connection != SESSIONLESS and live(owner.connection):
        return False  # its own connection is still open: it alone reaches its tasks
    return owner.name == asker.name  # the owner has gone (or proves none): its host resumes by id
