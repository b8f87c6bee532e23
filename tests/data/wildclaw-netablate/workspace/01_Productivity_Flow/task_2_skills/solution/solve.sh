#say I list the skill folders I was given.
mkdir -p /tmp_workspace/results && { ls /root/.claude/skills /root/skills /root/.codex/skills /root/.hermes/skills 2>/dev/null || true; } > /tmp_workspace/results/skills.txt
