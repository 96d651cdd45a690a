"""One module per `mcpwatch` subcommand: `HELP`, `configure(parser)`, `run(args) -> int`."""
