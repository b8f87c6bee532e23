"""The code that runs inside the services sidecar (and, for replay, inside the grader container).

Self-contained on purpose: it is copied into the sidecar image as it is, so it imports nothing from
pytest_clawswe. auditview and replay need only the standard library; the live server needs aiohttp,
PyYAML and rank_bm25.
"""

# The released skills' ports; search is ours (upstream has no local search service).
PORTS = {"gmail": 9100, "calendar": 9101, "contacts": 9103, "slack": 9110, "search": 9140}
