"""Hardened HTTP serving shared by every endpoint mcpwatch opens (the wrapper's Streamable HTTP front, its operator
endpoint, the Prometheus scrape endpoint): plain ASGI apps under uvicorn (`asgi`), who may connect (`guard`) and
connection-level bounds (`limits`). It imports nothing of the wrapper, so every endpoint can use it."""
