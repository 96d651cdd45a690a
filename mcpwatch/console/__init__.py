"""`mcpwatch watch`: the operator console. `model` (pure, Textual-free) is the part replay and reports reuse."""
