"""Harnesses: the adapter protocol, its registry, the adapters, and their bundles.

A harness of your own subclasses Harness: import it, and what an adapter is handed, from pytest_clawswe.api (the
supported names for benchmark and harness authors); the names below stay importable from here too.
"""
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness, HarnessError, HarnessOptions

__all__ = ["AgentContext", "AgentRun", "Harness", "HarnessError", "HarnessOptions"]
