"""Who may talk to an HTTP endpoint (the Streamable HTTP front; the operator and scrape endpoints use the same
guard): the listen address, Host and Origin, and the bearer token.

The MCP specification asks a server to validate `Origin` (a web page must not reach it through DNS rebinding) and,
run locally, to bind to localhost. So the front checks Host and Origin on every request whatever it listens on;
an address other machines can reach needs `--allow-remote`, and then every request needs the bearer token.
Loopback means `localhost`, 127.0.0.0/8 and ::1: only this machine can connect to those.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import stat
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mcpwatch.errors import UserError
from mcpwatch.httpserve.asgi import host_of, ip_literal, is_loopback_name

MAX_TOKEN_FILE_BYTES = 4096
MIN_TOKEN_CHARS = 16


def check_listen_address(host: str, allow_remote: bool, option: str = "--listen", who: str = "hosts") -> None:
    """A one-line refusal for an address other machines can reach, unless the operator said so."""
    if is_loopback_name(host.lower()) or allow_remote:
        return
    shown = f"[{host}]" if ":" in host else host
    raise UserError(
        f"{option} {shown} is reachable from other machines: add --allow-remote ({who} then need a bearer token)"
        " or listen on 127.0.0.1"
    )


def read_token_file(path: str) -> str:
    """The bearer token in `path` (surrounding whitespace ignored)."""
    file = Path(path).expanduser()
    try:
        raw = file.read_bytes()[: MAX_TOKEN_FILE_BYTES + 1]
    except OSError as exc:
        raise UserError(f"--token-file {path}: cannot read it ({exc.strerror or exc})") from None
    token = raw.decode("utf-8", "replace").strip()
    if len(raw) > MAX_TOKEN_FILE_BYTES or len(token) < MIN_TOKEN_CHARS or not _token_chars(token):
        raise UserError(
            f"--token-file {path}: must hold one token of {MIN_TOKEN_CHARS} to {MAX_TOKEN_FILE_BYTES} printable"
            " ASCII characters without spaces"
        )
    return token


def _token_chars(token: str) -> bool:
    return token.isascii() and token.isprintable() and not any(c.isspace() for c in token)


def token_file_is_private(path: str) -> bool:
    try:
        return not os.stat(Path(path).expanduser()).st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    except OSError:
        return True


def new_front_token() -> str:
    return secrets.token_urlsafe(32)


def _machine_names() -> frozenset[str]:
    names = {socket.gethostname().lower()}
    try:
        names.add(socket.getfqdn().lower())
    except OSError:
        pass
    return frozenset(n for n in names if n)


@dataclass(frozen=True)
class Refusal:
    status: int
    text: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass
class FrontGuard:
    """The checks every request to the front passes, in order: one Host, a Host and Origin naming this machine,
    then the bearer token (when there is one)."""

    remote: bool = False
    token: str | None = None
    names: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_listen(cls, host: str, *, remote: bool, token: str | None) -> FrontGuard:
        names = _machine_names() | ({host.lower()} if remote and ip_literal(host) is None else set())
        return cls(remote=remote, token=token, names=frozenset(names))

    def host_allowed(self, host: str) -> bool:
        """Loopback always. Serving remote hosts: also any IP address (a rebinding page uses a name) and this
        machine's own names."""
        if is_loopback_name(host):
            return True
        return self.remote and (ip_literal(host) is not None or host in self.names)

    def refusal(self, headers: list[tuple[bytes, bytes]]) -> Refusal | None:
        hosts = [value for name, value in headers if name == b"host"]
        if len(hosts) != 1:
            return Refusal(400, "Bad Request: a request needs exactly one Host header")
        if not self.host_allowed(host_of(hosts[0].decode("latin-1"))):
            return Refusal(421, "Misdirected Request: this Host is not served here (DNS-rebinding protection)")
        origins = [value for name, value in headers if name == b"origin"]
        if origins and (len(origins) > 1 or not self._origin_allowed(origins[0].decode("latin-1"))):
            return Refusal(403, "Forbidden: cross-origin request")
        if self.token is not None:
            given = [value for name, value in headers if name == b"authorization"]
            expected = f"Bearer {self.token}".encode()
            if len(given) != 1 or not hmac.compare_digest(given[0], expected):
                return Refusal(401, "Unauthorized: a bearer token is required", ((b"www-authenticate", b"Bearer"),))
        return None

    def _origin_allowed(self, origin: str) -> bool:
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and bool(parts.netloc) and self.host_allowed(host_of(parts.netloc))
