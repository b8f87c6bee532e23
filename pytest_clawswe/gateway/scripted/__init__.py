"""The scripted model: the stand-in for a provider, answered by the gateway itself over the same wire protocols
(model.py: gold, noop, hang; fixtures.py: a solution script, a judge, vision from fixtures)."""
