"""`mcpwatch watch --serve`: the same console in a browser, through textual-serve, on loopback only.

Each browser connection runs its own `mcpwatch watch` (same target, theme and config) behind textual-serve's page
and websocket. The server listens on 127.0.0.1 only and guards every request: a loopback Host header (421 else), a
loopback Origin when one is sent (403 else), and a token printed at start, given once as `?token=` and then held in
a private cookie (401 without it). The token is compared in constant time. A request must arrive within a few
seconds and at most `[console] serve_max_consoles` consoles run at once (serve_limits).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import secrets
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcpwatch.errors import UserError

COOKIE = "mcpwatch_console"
LOOPBACK = "127.0.0.1"


def loopback_host(value: str | None, port: int) -> bool:
    """A Host (or Origin's host:port) naming this machine's loopback on our port."""
    if not value:
        return False
    parts = urlsplit(f"//{value}")
    try:
        host, given_port = parts.hostname, parts.port
    except ValueError:
        return False
    if host is None or (given_port is not None and given_port != port):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_request(headers: Any, query: Any, cookies: Any, token: str, port: int) -> tuple[int, str] | None:
    """None when the request may pass; else (status, reason)."""
    hosts = headers.getall("Host", []) if hasattr(headers, "getall") else [headers.get("Host")]
    if len(hosts) != 1 or not loopback_host(hosts[0], port):
        return 421, "this console answers only to 127.0.0.1 / localhost"
    origin = headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not loopback_host(parts.netloc, port):
            return 403, "requests from other sites are refused"
    given = query.get("token") or cookies.get(COOKIE) or ""
    if not secrets.compare_digest(str(given).encode(), token.encode()):
        return 401, "open the URL printed by `mcpwatch watch --serve` (it carries the token)"
    return None


# textual-serve's page asks a font service for its stylesheet, in <head>: a render-blocking request. Where the
# network holds connections rather than refusing them, the page stays blank until the browser gives up (about
# 30 s). The page is served without it: the terminal uses the machine's monospace font.
_REMOTE_STYLESHEET = re.compile(r"<link\b[^>]*href=\"https?://[^\"]*\"[^>]*/?>", re.IGNORECASE | re.DOTALL)


def offline_page(path: Path) -> str | None:
    """textual-serve's page template without what it would fetch from other sites (None: no such template)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return _REMOTE_STYLESHEET.sub("", text)


def console_command(argv: list[str]) -> str:
    """The command textual-serve runs per browser connection: this mcpwatch's `watch`, without `--serve`."""
    return shlex.join([sys.executable, "-m", "mcpwatch", "watch", *argv])


def serve(
    argv: list[str], port: int, token: str | None = None, *, title: str = "mcpwatch", max_consoles: int = 8
) -> None:
    """Serve the console until interrupted (prints the URL with its token first)."""
    try:
        from aiohttp import web
        from textual_serve.server import Server

        from mcpwatch.console.serve_limits import KEEPALIVE_S, ConsoleCap, TimedRequestHandler
    except ImportError:
        raise UserError(
            "the console in a browser needs textual-serve: pip install 'mcpwatch[serve]' (or textual-serve)"
        ) from None
    if not 0 < port < 65536:
        raise UserError(f"--port must be from 1 to 65535, got {port}")
    token = token or secrets.token_urlsafe(24)
    consoles = ConsoleCap(max_consoles)

    @web.middleware
    async def guard(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        refused = check_request(request.headers, request.query, request.cookies, token, port)
        if refused is not None:
            return web.Response(status=refused[0], text=refused[1] + "\n")
        if request.path == "/ws":  # a console process for as long as the websocket is open
            full = consoles.refusal()
            if full is not None:
                return web.Response(status=503, text=full + "\n")
            consoles.running += 1
            try:
                return await handler(request)
            finally:
                consoles.running -= 1
        response = await handler(request)
        if request.query.get("token") and isinstance(response, web.StreamResponse) and not response.prepared:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
        return response

    class GuardedServer(Server):
        async def _make_app(self) -> Any:
            import aiohttp_jinja2
            import jinja2

            app = await super()._make_app()
            app.middlewares.append(guard)
            folder = Path(self.templates_path)
            aiohttp_jinja2.setup(app, loader=jinja2.FunctionLoader(lambda name: offline_page(folder / name)))
            return app

        async def on_startup(self, app: Any) -> None:
            pass  # the URL is printed once the port listens (below)

        def serve(self, debug: bool = False) -> None:
            """textual-serve's serve, with connections handled by TimedRequestHandler (aiohttp's run_app takes
            no handler class)."""
            self.debug = debug
            self.initialize_logging()
            asyncio.run(self._run())

        async def _run(self) -> None:
            runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
            await runner.setup()
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            try:
                server = runner.server
                if server is None:  # setup() above makes it
                    raise RuntimeError("the console's web server was not set up")
                listening = await loop.create_server(
                    lambda: TimedRequestHandler(server, loop=loop, keepalive_timeout=KEEPALIVE_S),
                    LOOPBACK,
                    port,
                )
                print(f"mcpwatch console on http://{LOOPBACK}:{port}/?token={token}", flush=True)
                print("(loopback only; the token is required; Ctrl+C stops)", flush=True)
                async with listening:
                    await stop.wait()
            finally:
                await runner.cleanup()

    server = GuardedServer(console_command(argv), host=LOOPBACK, port=port, title=title)
    server.public_url = f"http://{LOOPBACK}:{port}"
    try:
        server.serve()
    except OSError as exc:  # the port is taken, or not ours to bind
        raise UserError(f"cannot serve the console on {LOOPBACK}:{port}: {exc.strerror or exc}") from None
