"""The item's sandbox on Docker: the container workspace, its stop from outside, the agent's world kept
(world.py) and its changes read from the overlay (overlay.py)."""
