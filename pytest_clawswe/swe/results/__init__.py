"""What a run leaves on disk and reads back: the run directory and InstanceResult (run_dir.py), the run-level
files rebuilt from the instance folders (run_files.py), the totals (summary.py)."""
