"""One home per setting (issue 33): the run's settings are frozen once made, so no phase of a run can change
what another phase reads."""
from __future__ import annotations

import dataclasses

import pytest

from pytest_clawswe.run.config import RunConfig


def test_run_config_is_frozen(tmp_path):
    cfg = RunConfig("r", tmp_path, "oracle", "")
    assert dataclasses.fields(cfg)  # a dataclass
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.budget_s = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.cache_level = "none"  # type: ignore[misc]
