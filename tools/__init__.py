"""Offline tooling: run the program under Pulumi mocks (plan, render, bench)."""
