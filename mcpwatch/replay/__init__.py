"""`mcpwatch replay`: the operator console driven by a recorded session instead of a running wrapper.

Pure parts (no Textual): `recording` (the log, read-only), `engine` (checkpoints of the console's folded model,
seeking, stepping, the index pass), `indexer` (that pass in a child process), `clock` (the replay clock, speeds,
time parsing), `timeline` (where deadlines, late drops and margin changes are on the bar), `feed` (the console
`Feed` that replay plugs into the live console's screens). `app` is the Textual side.
"""
