"""The workspace interface (issue 16 §2): what another engine must implement, checked without Docker."""
import pytest

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.engine.workspace import BaseWorkspace, ExecResult


def test_the_docker_workspace_implements_the_whole_interface():
    assert issubclass(Workspace, BaseWorkspace) and not Workspace.__abstractmethods__
    assert {"start", "remove", "exec", "kill_all", "write_file", "copy_in", "read_file", "copy_out",
            "disk_used", "address"} <= BaseWorkspace.__abstractmethods__


def test_an_engine_that_leaves_out_a_method_cannot_be_made():
    class Partial(BaseWorkspace):
        def start(self):
            return self

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_exec_result_reads_as_before():
    r = ExecResult(None, "out", 1.0, "err")
    assert r.timed_out and r.output == "outerr" and not r.truncated
