#!/bin/bash
# as `git clone` would (the network is locked): a repository lands in the agent's home, outside /tmp_workspace
mkdir -p /root/skills/paper-banana && printf '# paper banana\n' > /root/skills/paper-banana/README.md
echo 'alias pb=/root/skills/paper-banana/run.sh' >> /root/.bashrc
rm -f /root/.profile
#say I cloned it into ~/skills/paper-banana.
