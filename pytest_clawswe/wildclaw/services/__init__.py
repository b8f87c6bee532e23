"""WildClawBench's instrumented mock services, run beside the agent in a sidecar container.

How a runner uses it (per task):

    from pytest_clawswe.wildclaw.services.sidecar import start_sidecar, stop_sidecar, start_replay

    ws = Workspace(...).start()                      # the agent container, before the agent's first process
    car = start_sidecar(client, ws, config, fixtures_dir, run_dir / "audit", labels=run_labels)
    ... warmup, agent ...                            # localhost:9100 gmail, 9101 calendar, 9103 contacts,
                                                     # 9110 slack, 9140 search answer inside ws
    stop_sidecar(car)                                # audit JSONL + meta.json now in run_dir/audit
    start_replay(grader_ws, run_dir / "audit")       # graders' GET /<svc>/audit, from the saved log

`config` is the task's service config ({"services", "error_rate", "error_seed", "search_budget"}), or None
to read fixtures_dir/config.json. Layout:
- mock/: the services (email, calendar, contacts, chat, search), the audit log and its view, fault
  injection, scripted participants, the audit replay server. Copied into the sidecar image as it is.
- sidecar.py: start the sidecar in the agent container's network namespace, stop it, copy the audit out.
- sidecar_image.py: build the sidecar image.
- fixtures/: original demo fixtures (social meeting across time zones, local search corpus).
- FIDELITY.md: what matches the released services and what differs on purpose.
"""
from pathlib import Path

MOCK_DIR = Path(__file__).parent / "mock"
FIXTURES_DIR = Path(__file__).parent / "fixtures"
