"""The host side: where a host's frames come in and its answers go out (stdio, or Streamable HTTP with one core
per host session)."""
