"""The repository's own pytest configuration: `pytest` here runs the project's tests (tests/), never data.

instances/ holds real projects with their own test files (the demo task repo); they are benchmark data.
"""
collect_ignore = ["instances", "reports", "harnesses", "benchmarks", "build"]
