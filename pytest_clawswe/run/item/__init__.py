"""One item of any benchmark, run: its pytest collector and item (nodes.py), the runner every benchmark's runner
extends (runner.py), its named phases (phases.py), the agent life cycle (agent.py), its result base (result.py) and
what the next item needs, made while this one ends (made_ahead.py). No benchmark is named here."""
