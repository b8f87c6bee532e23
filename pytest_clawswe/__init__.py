"""pytest-clawswe: a benchmark of coding-agent harnesses on SWE-bench-style issues, as a pytest plugin."""

__version__ = "0.1.0"
