"""`clawswe health`: which instances can be trusted: the command (cli.py), what its runs say of each instance
(runs.py), and a run's --health FILE read at scoring time (marks.py)."""
