"""The upstream side: links to the wrapped MCP server (a child process over stdio, or Streamable HTTP through the
wrapper's own HTTP/1.1 client)."""
