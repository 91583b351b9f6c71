"""The offline reward simulator (spec/simulator.md) and its diagnostics."""
