"""An item's error line names its id once: "<id>: <sentence>", also when the error's own sentence already begins
with the id (WildClawBench's setup and grading errors do: "<task id>: grade() failed: ..."), for an error raised by
the runner, an error its result records and a verdict. The item is the core's BenchmarkItem, run by its own setup
with a runner that raises (no Docker: the line is what is tested)."""
from __future__ import annotations

CONFTEST = '''
from types import SimpleNamespace

import pytest

from pytest_clawswe.errors import InfraError, Verdict
from pytest_clawswe.run.item.nodes import BenchmarkItem
from pytest_clawswe.run.item.result import ItemResult
from pytest_clawswe.swe.instance.images import ImageError
from pytest_clawswe.wildclaw.grading.grader import GradeError


def _errored(item_id):
    return ItemResult(error=f"{item_id}: the gateway cannot serve the judge model: no key")


OUTCOMES = {  # what the runner does with each item
    "t-grade": GradeError("t-grade: grade() failed: boom"),  # WildClawBench's sentences begin with the task id
    "t-result": _errored,  # an error the item's result records (the item raises ItemError with it)
    "t-crash": RuntimeError("t-crash: the runner met a bug"),  # not one of ours: its class is named
    "demo__plain-1": InfraError("the engine is gone; start it and --resume"),  # a sentence without the id
    "demo__image-1": ImageError("demo__image-1: its image could not be pulled"),
    "t-verdict": ItemResult(outcome="failed"),  # runtest's verdict (the call phase)
}


class Runner:
    def finished(self, item_id):
        return None

    def run(self, item_id):
        outcome = OUTCOMES[item_id]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome(item_id) if callable(outcome) else outcome

    def error_result(self, item_id):
        return None


class Session:
    stopping = False

    def __init__(self, run_dir):
        self.runner, self.cfg = Runner(), SimpleNamespace(run_dir=run_dir)

    def why_not_start(self, runner):
        return ""

    def report_result(self, item, result):
        pass


class Item(BenchmarkItem):
    def runtest(self):
        raise Verdict(f"{self.item_id}: the answer was wrong")


class Items(pytest.File):
    def collect(self):
        for item_id in OUTCOMES:
            yield Item.from_parent(self, name=item_id, item_id=item_id, target=item_id)


def pytest_configure(config):
    config.pluginmanager.register(Session(config.rootpath), "clawswe-session")


def pytest_collect_file(file_path, parent):
    if file_path.name == "items.txt":
        return Items.from_parent(parent, path=file_path)
'''

EXPECTED = {
    "t-grade": "t-grade: grade() failed: boom",
    "t-result": "t-result: the gateway cannot serve the judge model: no key",
    "t-crash": "t-crash: RuntimeError: the runner met a bug",
    "demo__plain-1": "demo__plain-1: the engine is gone; start it and --resume",
    "demo__image-1": "demo__image-1: its image could not be pulled",
    "t-verdict": "t-verdict: the answer was wrong",
}


def test_an_items_error_line_names_its_id_once(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".txt", items="")
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")
    result.assert_outcomes(errors=5, failed=1)
    lines = result.outlines
    for item_id, line in EXPECTED.items():
        assert line in lines, (item_id, [x for x in lines if item_id in x])
        assert not [x for x in lines if f"{item_id}: {item_id}" in x or f": {item_id}: " in x], item_id


def test_the_image_errors_begin_with_the_instance_id_so_the_line_names_it_once():
    """The item's line drops a leading "<id>: " from its error's sentence; an image error that named the id inside
    ("X has no task folder", "Building the image for X failed") was printed "X: X has no task folder"."""
    import pytest

    from pytest_clawswe.swe.instance.images import ImageError, build_images

    with pytest.raises(ImageError) as raised:
        build_images([{"instance_id": "demo__x-1", "image": "demo-x:1"}], client=object(), progress=lambda m: None)
    sentence = str(raised.value)
    assert sentence.startswith("demo__x-1: ") and sentence.count("demo__x-1") == 1
