"""A WildClawBench task: its file (task.md parsed), its images (task and grader, built from docker/) and the task
container the agent works in."""
