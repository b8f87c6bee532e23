"""Claw-SWE-Bench's own options, declared in one table (run/options.py's Option rows), and SweOptions, what they say."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pytest

from pytest_clawswe.run.options import Option

GROUP = "clawswe-swe"

OPTIONS: tuple[Option, ...] = (
    Option("--lite", "only the 80 Claw-SWE-Bench Lite instances", "SweOptions.lite", dict(action="store_true")),
    Option("--instance-ids", "comma- or space-separated instance ids to run", "SweOptions.instance_ids",
           dict(default="")),
    Option("--instances-file", "file with one instance id per line (e.g. from `clawswe lite select`)",
           "SweOptions.instances_file"),
    Option("--dataset-revision", "pin the Hugging Face dataset revision (commit or tag)",
           "SweOptions.dataset_revision"),
    # default None (1800 s, the paper's, is taken in swe_options): a regrade keeps the run's own unless given
    Option("--eval-timeout", "seconds for the evaluation's test run (default: 1800; a regrade: the run's own)",
           "SweOptions.eval_timeout_s", dict(type=float, default=None)),
    Option("--no-purge", "ABLATION (paper §5.3): keep the image's future commits; results are not comparable",
           "SweOptions.purge", dict(action="store_true")),
    Option("--health", "a health file (`clawswe health`; `demo`: the demo set's, shipped): items on instances it calls "
           "flaky, broken or too slow are marked, and Pass@1 is also given over the healthy ones",
           "swe/health/marks.py:health_option", dict(metavar="FILE")),
)

DEFAULT_EVAL_TIMEOUT_S = 1800.0  # --eval-timeout's default (the paper's)


@dataclass(frozen=True)
class SweOptions:
    """Claw-SWE-Bench's settings, checked once when ClawSweBench is made (swe_options); nothing changes them."""

    dataset: str | None = None
    dataset_revision: str | None = None  # --dataset-revision: the Hugging Face dataset's pinned revision
    eval_timeout_s: float = DEFAULT_EVAL_TIMEOUT_S  # the evaluation's test run
    purge: bool = True  # False: the paper's §5.3 ablation (--no-purge), the future commits stay
    lite: bool = False
    instance_ids: tuple[str, ...] = ()  # --instance-ids, then the --instances-file's
    instances_file: str | None = None


def swe_options(config: pytest.Config, kept: dict | None = None) -> SweOptions:
    """SweOptions from the options, checked (pytest.UsageError); a regrade (`kept`: its run's run.json) keeps the
    run's dataset revision and purge, and its evaluation timeout unless --eval-timeout is given."""
    given_eval = config.getoption("eval_timeout", None)
    if kept is None:
        eval_s = DEFAULT_EVAL_TIMEOUT_S if given_eval is None else given_eval
        if not (eval_s > 0 and math.isfinite(eval_s)):
            raise pytest.UsageError(f"--eval-timeout {eval_s:g}: give a positive number of seconds, e.g. "
                                    "--eval-timeout 600")
        revision, purge = config.getoption("dataset_revision", None), not config.getoption("no_purge", False)
    else:
        eval_s = float(given_eval if given_eval is not None else kept.get("eval_timeout_s") or DEFAULT_EVAL_TIMEOUT_S)
        if not eval_s > 0:
            raise pytest.UsageError(f"--eval-timeout {eval_s:g}: give a positive number of seconds")
        revision, purge = kept.get("dataset_revision"), bool(kept.get("purge", True))
    ids = tuple(i for i in re.split(r"[,\s]+", config.getoption("instance_ids", "") or "") if i)
    return SweOptions(dataset=config.getoption("dataset", None), dataset_revision=revision, eval_timeout_s=eval_s,
                      purge=purge, lite=bool(config.getoption("lite", False)), instance_ids=ids,
                      instances_file=config.getoption("instances_file", None))
