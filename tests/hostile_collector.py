"""A real local HTTP server that misbehaves as an OTLP collector (or whatever else listens at its address) can.

Modes: `huge` answers 200 with a body of `huge_bytes` (it counts how much it managed to send before the exporter
closed the connection), `silent` reads the request and never answers (as a collector slower than any exit bound
does), `429` always asks to retry later, `refuse_metrics` takes traces and answers 405 to metrics (a trace-only
engine such as Arize Phoenix or MLflow), `refuse_all` answers 405 to everything, `trickle` sends its status line
and then headers one byte every 0.2 s, never ending them.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

CHUNK = b"\0" * (1024 * 1024)


class HostileCollector:
    def __init__(self, mode: str, *, huge_bytes: int = 300 * 1024 * 1024) -> None:
        self.mode = mode
        self.requests: list[str] = []  # the paths posted to, in order
        self.sent_per_answer: list[int] = []  # huge: body bytes sent before the exporter hung up
        self._release = threading.Event()
        self.hung_up = threading.Event()  # trickle: the exporter closed the connection
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                collector.requests.append(self.path)
                if mode == "silent":
                    collector._release.wait()
                    return
                if mode == "trickle":
                    self._trickle()
                elif mode == "huge":
                    self._huge(huge_bytes)
                elif mode == "429":
                    self._plain(429, b"", {"Retry-After": "1"})
                elif mode == "refuse_all" or (mode == "refuse_metrics" and self.path.endswith("/v1/metrics")):
                    self._plain(405, b"Method Not Allowed", {})
                else:
                    self._plain(200, ExportTraceServiceResponse().SerializeToString(), {})

            def _plain(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in {"Content-Type": "application/x-protobuf", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _huge(self, size: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(size))
                self.end_headers()
                sent = 0
                try:
                    while sent < size:
                        piece = CHUNK[: size - sent]
                        self.wfile.write(piece)
                        sent += len(piece)
                except OSError:
                    pass
                finally:
                    collector.sent_per_answer.append(sent)
                    self.close_connection = True

            def _trickle(self) -> None:
                try:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    while not collector._release.wait(0.2):
                        self.wfile.write(b"X")
                        self.wfile.flush()
                except OSError:  # the exporter hung up: what this collector is for
                    collector.hung_up.set()
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HostileCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
