"""The Docker labels a run puts on what it creates, so `clawswe clean` and the run's own sweep find it."""
from __future__ import annotations

import os
import socket

LABEL_RUN = "clawswe.run"  # the run id: every container, volume and network of a run
LABEL_INSTANCE = "clawswe.instance"  # the instance an agent or evaluation container works on
LABEL_ROLE = "clawswe.role"  # agent | eval | prepare
LABEL_OWNER = "clawswe.owner"  # host:pid of the process that created it; `clawswe clean` spares live owners
LABEL_IMAGE_INSTANCE = "clawswe.instance-id"  # an instance image built from a task repo
LABEL_SOURCE_IMAGE = "clawswe.source-image"  # a prepared image: the image it was prepared from
LABEL_PREPARED = "clawswe.prepared"  # a prepared image: the preparation's version
LABEL_CONTEXT_HASH = "clawswe.context-hash"  # an instance image: the hash of its build context
LABEL_BUNDLE = "clawswe.bundle"  # a harness bundle image or container: <name>-<version>
LABEL_BUNDLE_CACHE = "clawswe.bundle-cache"  # a bundle's data container, kept between runs


def owner_label() -> dict[str, str]:
    return {LABEL_OWNER: f"{socket.gethostname()}:{os.getpid()}"}


def owner_alive(labels: dict[str, str]) -> bool:
    host, _, pid = labels.get(LABEL_OWNER, "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
