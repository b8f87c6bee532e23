"""Claw-SWE-Bench's own options, declared in one table (run/options.py's Option rows)."""
from __future__ import annotations

from pytest_clawswe.run.options import Option

GROUP = "clawswe-swe"

OPTIONS: tuple[Option, ...] = (
    Option("--lite", "only the 80 Claw-SWE-Bench Lite instances", "swe/benchmark.py:ClawSweBench._select",
           dict(action="store_true")),
    Option("--instance-ids", "comma- or space-separated instance ids to run", "swe/benchmark.py:ClawSweBench._select",
           dict(default="")),
    Option("--instances-file", "file with one instance id per line (e.g. from `clawswe lite select`)",
           "swe/benchmark.py:ClawSweBench._select"),
    Option("--dataset-revision", "pin the Hugging Face dataset revision (commit or tag)", "RunConfig.dataset_revision"),
    # default None (1800 s, the paper's, is taken in run/config.py): a regrade keeps the run's own unless given
    Option("--eval-timeout", "seconds for the evaluation's test run (default: 1800; a regrade: the run's own)",
           "RunConfig.eval_timeout_s", dict(type=float, default=None)),
    Option("--no-purge", "ABLATION (paper §5.3): keep the image's future commits; results are not comparable",
           "RunConfig.purge", dict(action="store_true")),
    Option("--health", "a health file (`clawswe health`; `demo`: the demo set's, shipped): items on instances it calls "
           "flaky, broken or too slow are marked, and Pass@1 is also given over the healthy ones",
           "swe/health_marks.py:health_option", dict(metavar="FILE")),
)
