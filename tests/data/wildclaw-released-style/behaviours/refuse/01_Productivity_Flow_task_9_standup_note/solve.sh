#!/bin/bash
printf '# Standup\n\nDone\n- fixed the export bug\n- reviewed the onboarding doc\n\nNext\n- release notes\n' > /tmp_workspace/results/standup.md
#say The note is in /tmp_workspace/results/standup.md.
