"""Test doubles and sample data: a scheduler on a manual clock, a console feed of fixed events, a realistic sample
session and an event flood. They ship in the package so the benchmarks can use them (`mcpwatch bench console` floods
the console with `sample.flood`); nothing else in mcpwatch imports them (an import-linter contract)."""
