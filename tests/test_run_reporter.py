"""The run's terminal side, a plugin object of its own (issue 33 step 11)."""
from __future__ import annotations


def test_the_terminal_side_is_a_plugin_of_its_own(pytester):
    """RunSession runs the run; RunReporter (run/reporter.py), registered beside it, writes the progress line and the
    summary, as pytest-xdist's DSession and its TerminalDistReporter."""
    from pytest_clawswe.run.reporter import RunReporter
    from pytest_clawswe.run.session import RunSession

    config = pytester.parseconfigure("-p", "no:cacheprovider", "--benchmark", "swe", "--dataset", "demo",
                                     "--collect-only")
    session, reporter = (config.pluginmanager.get_plugin(name) for name in ("clawswe-session", "clawswe-reporter"))
    assert isinstance(session, RunSession) and isinstance(reporter, RunReporter) and reporter.run is session
    assert not hasattr(session, "pytest_terminal_summary") and hasattr(reporter, "pytest_terminal_summary")
