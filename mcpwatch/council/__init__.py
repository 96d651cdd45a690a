"""`mcpwatch council`: the reference long-running MCP server, a multi-model council (seed: ADR-012).

Three stages (answers, anonymised peer review, chairman synthesis) under tiered time budgets, with partial
results when time runs out, structured per-model status, progress that carries machine-readable state, and a
health check. The `simulated` backend makes every behaviour reproducible; `openai` talks to a real endpoint.
"""
