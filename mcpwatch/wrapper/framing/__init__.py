"""JSON-RPC on the wire, as the wrapper reads and writes it: frames as plain dicts (`frames`) and newline-delimited
lines with a hard cap (`lines`). Every other part of the wrapper builds on these; they import nothing of it."""
