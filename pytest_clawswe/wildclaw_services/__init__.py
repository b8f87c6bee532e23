"""WildClawBench's instrumented mock services, run beside the agent in a sidecar container.

- svc/: the services themselves (email, calendar, contacts, chat, search), the audit log and its view,
  fault injection, scripted participants, and the audit replay server. Copied into the sidecar image.
- sidecar.py: start the sidecar in the agent container's network namespace, stop it, copy the audit out.
- image.py: build the sidecar image.
- fixtures/: original demo fixtures (social meeting across time zones, local search corpus).
"""
from pathlib import Path

SVC_DIR = Path(__file__).parent / "svc"
FIXTURES_DIR = Path(__file__).parent / "fixtures"
