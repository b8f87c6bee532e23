"""One instance's run: its images (images.py), the sandbox prepared from them (prepare.py), the prompt
(prompt.py), the patch collected (patch.py), the named phases (phases.py) and the InstanceRunner that runs them
(runner.py)."""
