"""A local OpenAI-compatible chat-completions server on 127.0.0.1 (a paid API cannot run in tests).

The model id picks the behaviour (the part after the last `/`):
  ok-*              200 with an answer (a ranking for review prompts, a synthesis for chairman prompts)
  slow-*            waits `slow_s` seconds (even before checking the key), then answers
  ratelimit-once-*  429 with Retry-After: 2 the first time, then answers
  ratelimit-date    429 with Retry-After as an HTTP date, always
  ratelimit-bare    429 without Retry-After, always
  unauthorized      401;  forbidden  403;  broken  500;  empty  200 without content
  error-in-200      200 whose body is an `error` object with code 429
A request without `Authorization: Bearer <key>` gets 401, as a real endpoint would answer.
"""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self, key: str = "test-key", slow_s: float = 2.0) -> None:
        self.key = key
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self.huge_sent: list[int] = []  # "huge" models: body bytes written before the client hung up
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    model = str(body.get("model", ""))
                    fake.counts[model] += 1
                    count = fake.counts[model]
                try:
                    fake.respond(self, model, body, count)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- behaviour ------------------------------------------------------------------------------------

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _huge(self, handler: BaseHTTPRequestHandler, *, encoded: bool, size: int = 300 * 1024 * 1024) -> None:
        """200 with a 300 MiB body (or a gzip one, which the client asked not to get), written until refused."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(size))
        if encoded:
            handler.send_header("Content-Encoding", "gzip")
        handler.end_headers()
        sent, chunk = 0, b" " * (1024 * 1024)
        try:
            while sent < size:
                handler.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        finally:
            self.huge_sent.append(sent)
            handler.close_connection = True

    @staticmethod
    def _error(message: str, code: int) -> dict[str, Any]:
        return {"error": {"message": message, "code": code}}

    def _content(self, model: str, body: dict[str, Any]) -> str:
        prompt = str(body.get("messages", [{}])[-1].get("content", ""))
        if "FINAL RANKING:" in prompt:
            labels = sorted(set(re.findall(r"^Response ([A-Z]+):$", prompt, re.M)), reverse=True)
            return "All fine.\n\nFINAL RANKING:\n" + "\n".join(f"{i}. Response {x}" for i, x in enumerate(labels, 1))
        if "chairman of a council" in prompt:
            return f"Synthesis by {model}: the members agree."
        return f"{model} says: it depends on the constraints."

    def respond(self, handler: BaseHTTPRequestHandler, model: str, body: dict[str, Any], count: int) -> None:
        if handler.path != "/v1/chat/completions":
            self._send(handler, 404, self._error("no such route", 404))
            return
        kind = model.rsplit("/", 1)[-1]
        if kind.startswith("slow-"):
            time.sleep(self.slow_s)  # before the key check: a slow path, whatever the answer will be
        if handler.headers.get("Authorization") != f"Bearer {self.key}":
            self._send(handler, 401, self._error("No auth credentials found", 401))
            return
        if kind.startswith("ratelimit-once") and count == 1:
            self._send(handler, 429, self._error("Rate limit exceeded", 429), {"Retry-After": "2"})
            return
        elif kind == "ratelimit-date":
            when = email.utils.formatdate(time.time() + 30, usegmt=True)
            self._send(handler, 429, self._error("Rate limit exceeded", 429), {"Retry-After": when})
            return
        elif kind == "ratelimit-bare":
            self._send(handler, 429, self._error("Rate limit exceeded", 429))
            return
        elif kind == "unauthorized":
            self._send(handler, 401, self._error("User not found.", 401))
            return
        elif kind == "forbidden":
            self._send(handler, 403, self._error("This model is not available to your key", 403))
            return
        elif kind == "broken":
            self._send(handler, 500, self._error("Internal Server Error", 500))
            return
        elif kind == "empty":
            self._send(handler, 200, {"choices": [{"message": {"content": ""}}]})
            return
        elif kind in ("huge", "gzip"):
            self._huge(handler, encoded=kind == "gzip")
            return
        elif kind == "error-in-200":
            self._send(handler, 200, self._error("Provider rate limited", 429))
            return
        content = self._content(model, body)
        self._send(handler, 200, {"id": "chatcmpl-1", "choices": [{"message": {"content": content}}]})
