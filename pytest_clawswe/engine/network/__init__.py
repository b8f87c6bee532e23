"""The run's networks: the locked network and its addresses (locked.py), the host's guard on it (hostguard.py)
and the internet modes (internet.py)."""
