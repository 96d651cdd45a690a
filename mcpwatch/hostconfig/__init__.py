"""The MCP servers configured in each host's own config file: find them (`hosts scan`), put `mcpwatch wrap` in
front of them and take it away again (`hosts wrap|unwrap`), and read the host's timeout for one of them
(`mcpwatch wrap --host-config FILE#SERVER`). Textual-free: the command and the console's screen share it.

Modules, each one job: `formats` (the host table), `locate` (where the files are), `jsonc` and `tomlspans`
(reading with offsets), `entries` (a file into its servers), `wrapargs` (the wrap line), `timeouts` (the host's
timeout and its source), `budgets` (the budget, by the wrapper's own policy), `scan`, `plan` (pure edits),
`records` (the originals), `writer` (safe writes), `change` (wrap/unwrap end to end).
"""
