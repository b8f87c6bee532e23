"""The keep-alive process is found at the first kill_all, not at start (issue 25 §4: a container start costs no
exec), by its start time: processes an agent leaves behind as PID 1's children, even with a command name made
to look like a stat line, are killed and the keep-alive stays."""
import time

import pytest

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace

pytestmark = pytest.mark.docker


def test_kill_all_spares_the_keep_alive_and_kills_orphans_found_later(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={"clawswe.test": "keepalive"}, network="none") as ws:
        # orphans (reparented to tini), one named to fool a stat parser that splits on spaces
        ws.exec("cp /bin/sleep '/tmp/x) R 1 1 1' && (setsid '/tmp/x) R 1 1 1' 1000 &) && (setsid sleep 1000 &)",
                check=True)
        time.sleep(0.3)
        before = ws.exec("ps -eo pid=,ppid=,args= 2>/dev/null || ls /proc").output
        ws.kill_all()
        ws.container.reload()
        assert ws.container.status == "running"  # the keep-alive lives
        left = ws.exec(["sh", "-c", "for d in /proc/[0-9]*; do cat $d/cmdline | tr '\\0' ' '; echo; done"]).output
        assert "1000" not in left, before
        assert "sleep infinity" in left
