"""Grading a WildClawBench task: the grader container (grader.py), the code run inside it (main.py, stdlib only),
the transcript grade() reads, and the task's fixtures."""
