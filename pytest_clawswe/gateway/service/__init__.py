"""The gateway process: workers.py opens the listeners and starts the worker processes (leader.py: how they
share tokens and records), each serving app.py's Gateway: the model endpoints (answered by the scripted model or
forwarded by forward.py), passed back by answers.py, authenticated by auth.py against tokens.py, and the run's
/_admin/ API (admin.py)."""
