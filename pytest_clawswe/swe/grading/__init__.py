"""Grading with the official SWE-bench evaluator: scoring.py runs swebench's run_instance in a fresh
container, eval_staging.py runs ahead what does not depend on the patch, eval_output.py reads its test output whole."""
