"""Commands on a whole WildClawBench suite: `clawswe wildclaw check` (check.py) and the offline stand-in workspaces
(offline_workspaces.py)."""
