"""The scrape endpoint: `GET /metrics` on the wrapper's own loop, behind the front's guard (one Host naming this
machine, no foreign Origin, the bearer token when there is one).

The exposition is `prometheus_client`'s: the text format by default, OpenMetrics when the scraper asks for it.
Nothing is computed per call for it beyond the fold's append; the scrape folds and reads (see `collector`).
"""

from __future__ import annotations

import asyncio
import math
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from mcpwatch.httpserve.asgi import quiet_server, respond, stop_server
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.httpserve.guard import FrontGuard, new_front_token
from mcpwatch.prometheus.collector import StatusReader, WrapperCollector
from mcpwatch.prometheus.fold import MetricFold
from mcpwatch.terminal import say

PATH = "/metrics"
MIN_INTERVAL_S = 0.25  # Prometheus scrapes every 15 s by default; the tests here every 1 s
LOOP_SHARE = 0.1  # of the loop's time a scrape loop can take at most: after a build of T, the same answer for 9 T
TEXT = b"text/plain; charset=utf-8"
MAX_FORMATS = 4  # content types whose answers are kept: a scraper names its own version, one per scrape if it likes


class _One:
    """One family (or none), as the encoders read a registry."""

    def __init__(self, family: Any = None) -> None:
        self.family = family

    def collect(self) -> list[Any]:
        return [] if self.family is None else [self.family]


class MetricsRegistry(CollectorRegistry):
    """The wrapper's collector, and each family's exposition kept until its numbers change.

    An exposition is each family's text one after the other (and OpenMetrics' `# EOF` once at the end), so a family
    whose fingerprint is the one rendered before is not built or rendered again: a scrape of 20 listed tools while
    calls run renders the duration histogram and the levels, not the thousands of counters still at their values.
    What `render` answers is byte for byte what the encoder makes of the whole registry (tested)."""

    def __init__(self, collector: WrapperCollector) -> None:
        super().__init__(auto_describe=False)
        self.collector = collector
        self.register(collector)
        self._rendered: dict[tuple[str, str], tuple[tuple[Any, ...], bytes]] = {}  # (type, family) → (key, text)
        self._tails: dict[str, bytes] = {}  # what the encoder ends an exposition with (OpenMetrics: `# EOF`)

    def held_bytes(self) -> int:
        """The bytes of family text kept, every format together."""
        return sum(len(text) for _, text in self._rendered.values())

    def forget(self, content_type: str) -> None:
        """Drop a format's family texts (the app keeps a few formats: see MAX_FORMATS)."""
        self._tails.pop(content_type, None)
        for key in [key for key in self._rendered if key[0] == content_type]:
            del self._rendered[key]

    def render(self, encoder: Callable[[Any], bytes], content_type: str) -> bytes:
        tail = self._tails.get(content_type)
        if tail is None:
            tail = self._tails[content_type] = encoder(_One())
        parts, rendered = [], self._rendered
        for key, build in self.collector.keyed():
            seen = rendered.get((content_type, key[0]))
            if seen is None or seen[0] != key:
                text = encoder(_One(build()))
                seen = rendered[(content_type, key[0])] = (key, text[: len(text) - len(tail)])
            parts.append(seen[1])
        parts.append(tail)
        return b"".join(parts)


def negotiate(accept: str) -> tuple[Callable[[Any], bytes], str]:
    """`prometheus_client`'s choice of encoder and content type, or its text format when an OpenMetrics version is
    not dotted numbers (its own choice raises then, comparing a word with a number)."""
    try:
        return choose_encoder(accept)
    except (TypeError, ValueError):
        return choose_encoder("")


def metrics_registry(wrapper: str, fold: MetricFold, read_status: StatusReader) -> MetricsRegistry:
    return MetricsRegistry(WrapperCollector(wrapper, fold, read_status))


class MetricsApp:
    """The ASGI app: refusals in plain text with the guard's status (400, 421, 403, 401), then the exposition.

    A scrape runs on the wrapper's loop, so scrapes closer together than `min_interval_s` get the last answer
    again, and after a build that took T (a thousand listed tools: seconds) so do scrapes for the next
    T × (1 / LOOP_SHARE − 1): a client scraping in a tight loop cannot take the loop from the hosts' calls. The
    scraper names the format (any OpenMetrics version is a content type), so that quiet holds for every format (a
    format not built yet is a 503 meanwhile), and the last answers of MAX_FORMATS formats at most are kept."""

    def __init__(
        self,
        registry: MetricsRegistry,
        guard: FrontGuard,
        min_interval_s: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry
        self.guard = guard
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.collected = 0  # expositions built (the rest were served again)
        # content type → (when it may be built again, body), the most recently served last, MAX_FORMATS at most
        self._last: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._quiet_until = -math.inf  # no format is built before: a build's cost buys quiet for every format

    def held_bytes(self) -> int:
        """The bytes the endpoint keeps between scrapes: each format's last answer and its families' text."""
        return sum(len(body) for _, body in self._last.values()) + self.registry.held_bytes()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = scope.get("headers") or []
        refusal = self.guard.refusal(headers)
        if refusal is not None:
            extra = [*refusal.headers, (b"connection", b"close")]
            await respond(send, refusal.status, f"{refusal.text}\n".encode(), TEXT, extra)
            return
        if scope.get("path") != PATH:
            await respond(send, 404, f"Not Found: metrics are at {PATH}\n".encode(), TEXT)
            return
        if scope.get("method") != "GET":
            await respond(send, 405, b"Method Not Allowed: GET /metrics\n", TEXT, [(b"allow", b"GET")])
            return
        accept = ",".join(value.decode("latin-1") for name, value in headers if name == b"accept")
        encoder, content_type = negotiate(accept)
        now = self.clock()
        last = self._last.get(content_type)
        if last is None and now < self._quiet_until:  # a format never asked for (or forgotten), the loop still owed
            wait = str(max(1, math.ceil(self._quiet_until - now))).encode()
            await respond(send, 503, b"Service Unavailable: scrape again later\n", TEXT, [(b"retry-after", wait)])
            return
        if last is None or (now >= last[0] and now >= self._quiet_until):
            last = self._build(encoder, content_type, now)
        self._last.move_to_end(content_type)
        await respond(send, 200, last[1], content_type.encode())

    def _build(self, encoder: Callable[[Any], bytes], content_type: str, now: float) -> tuple[float, bytes]:
        body = self.registry.render(encoder, content_type)
        done = self.clock()
        self._quiet_until = done + (done - now) * (1 / LOOP_SHARE - 1)
        last = self._last[content_type] = (max(now + self.min_interval_s, self._quiet_until), body)
        self.collected += 1
        while len(self._last) > MAX_FORMATS:
            self.registry.forget(self._last.popitem(last=False)[0])
        return last


class MetricsServer:
    """Runs the app with uvicorn on the wrapper's loop, on a socket bound here: a port that cannot be had is an
    OSError from `start`, never a server's exit."""

    def __init__(self, app: MetricsApp, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._server = quiet_server(app, host, port, ConnectionLimits(max_connections=16))
        self._task: asyncio.Future[Any] | None = None

    async def start(self) -> str:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        port = sock.getsockname()[1]
        self._task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{port}{PATH}"

    async def stop(self) -> None:
        await stop_server(self._server, self._task)


async def start_metrics(
    host: str,
    port: int,
    wrapper: str,
    fold: MetricFold,
    read_status: StatusReader,
    *,
    remote: bool,
    token: str | None,
) -> MetricsServer | None:
    """The endpoint, started, its URL said on stderr; the token of --token-file, or one generated and printed once
    when other machines may scrape. A port taken since the command line was checked is one warning: the
    wrapper serves its host without metrics rather than not at all."""
    if remote and token is None:
        token = new_front_token()
        say(f"Prometheus must send the header 'Authorization: Bearer {token}' (its scrape config's authorization)")
    guard = FrontGuard.for_listen(host, remote=remote, token=token)  # a token file guards loopback too, as on the front
    server = MetricsServer(MetricsApp(metrics_registry(wrapper, fold, read_status), guard), host, port)
    try:
        url = await server.start()
    except OSError as exc:
        say(f"warning: Prometheus metrics are off: cannot listen on {host}:{port} ({exc.strerror or exc})")
        return None
    say(f"Prometheus metrics at {url}")
    return server
