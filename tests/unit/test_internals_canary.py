"""Canaries for the library internals mcpwatch depends on (ARCHITECTURE.md, "Internals we depend on"): each checks
the one thing a release of that library could take away, so an upgrade fails here, by name, before it fails
somewhere obscure. The behaviour built on each is tested where it lives (named in ARCHITECTURE.md)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any
from unittest import mock

import pytest
import requests
from requests.adapters import HTTPAdapter
from textual.app import App
from textual.widgets import Footer
from urllib3.connectionpool import HTTPConnectionPool
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from mcpwatch.console.widgets import KeyFooter


async def _silent_app(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(3600)  # never answers: the request stays the current cycle


def test_uvicorn_httptools_protocol_has_the_hooks_and_state_limits_py_uses() -> None:
    """httpserve/limits.py subclasses HttpToolsProtocol: it overrides these callbacks and reads `cycle`
    (`response_started`), `flow.read_paused`, `transport` and `loop`."""
    for name in ("connection_made", "connection_lost", "data_received", "on_headers_complete", "on_body"):
        assert callable(getattr(HttpToolsProtocol, name)), name
    assert callable(HttpToolsProtocol.on_message_complete) and callable(HttpToolsProtocol.on_response_complete)
    config = Config(app=_silent_app, http="httptools", lifespan="off", log_level="critical")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        protocol = HttpToolsProtocol(config=config, server_state=ServerState(), app_state={}, _loop=loop)
        transport = mock.Mock(get_extra_info=lambda name, default=None: default, is_closing=lambda: False)
        protocol.connection_made(transport)
        assert protocol.cycle is None and protocol.flow.read_paused is False
        assert protocol.transport is transport and protocol.loop is loop
        protocol.data_received(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
        assert protocol.cycle is not None and protocol.cycle.response_started is False
        protocol.connection_lost(None)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()


def test_textual_footer_still_rebuilds_through_bindings_changed() -> None:
    """console/widgets/footer.py `KeyFooter` replaces Footer's `bindings_changed(screen)` (the handler it subscribes
    to the screen's `bindings_updated_signal`) and sets Footer's private `_bindings_ready` as Footer's own does."""
    assert "bindings_changed" in vars(Footer) and "bindings_changed" in vars(KeyFooter)
    assert list(inspect.signature(Footer.bindings_changed).parameters) == ["self", "screen"]
    assert "self.bindings_changed" in inspect.getsource(Footer)  # subscribed by name, so the override is called
    assert "_bindings_ready" in inspect.getsource(Footer.bindings_changed)
    assert callable(Footer.recompose)


@pytest.mark.anyio
async def test_textual_app_keeps_its_notifications_in_notifications() -> None:
    """Console tests read what the console told the user from `app._notifications` (Textual has no public list)."""
    app: App[None] = App()
    async with app.run_test() as pilot:
        app.notify("hello", timeout=30)
        await pilot.pause()  # notify posts a message; the app files it when that is handled
        assert [notification.message for notification in app._notifications] == ["hello"]


def test_requests_and_urllib3_internals_otel_bounded_py_sets() -> None:
    """otel/bounded.py stores a capped body as `Response._content` (with `_content_consumed`), and gives requests'
    adapter pools whose `ConnectionCls` reads the head by a deadline (`poolmanager.pool_classes_by_scheme`)."""
    response = requests.Response()
    assert hasattr(response, "_content") and hasattr(response, "_content_consumed")
    response._content, response._content_consumed = b'{"a": 1}', True
    assert response.content == b'{"a": 1}' and response.json() == {"a": 1}
    adapter = HTTPAdapter()
    assert set(adapter.poolmanager.pool_classes_by_scheme) == {"http", "https"}
    assert "ConnectionCls" in vars(HTTPConnectionPool)
