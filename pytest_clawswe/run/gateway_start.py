"""What a run starts before its first item, for every item to share: the model gateway, the run's network (locked
or internet) on every engine, a relay on each other machine's engine, the host firewall."""
from __future__ import annotations

import warnings

import pytest

from pytest_clawswe.engine.hosts import engine_address, is_remote
from pytest_clawswe.engine.network.locked import local_address_towards
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.runner import progress as _progress


def start_gateway(cfg: RunConfig, hosts: list, clients: list):
    """The run's gateway, its locked network on every engine, and a relay on each other machine's engine (the model
    it serves, the agents' or a regrade's judge, was checked with its key when the run's settings were read)."""
    from pytest_clawswe.engine.network.locked import create_locked_network
    from pytest_clawswe.engine.images.registry import ImageRegistry
    from pytest_clawswe.gateway.control import relay
    from pytest_clawswe.gateway.control.run_gateway import start_for_run

    local = [c for h, c in zip(hosts, clients) if not is_remote(h.url)]
    remote = [(h, c) for h, c in zip(hosts, clients) if is_remote(h.url)]
    own = cfg.network if cfg.network and cfg.network != "none" else None  # the run's network, if it has one
    internet = own is not None and cfg.network_mode == "internet"
    locked = None if internet else own
    gateway = None
    try:
        if own:
            from pytest_clawswe.engine.network.internet import create_internet_network

            for client in clients:
                (create_internet_network if internet else create_locked_network)(client, own, {LABEL_RUN: cfg.run_id})
        # the gateway listens for each engine's relay where this machine meets that engine's host
        towards = {h.name: local_address_towards(engine_address(h.url)) for h, _ in remote}
        gateway = start_for_run(cfg.run_dir / "gateway", local[0] if local else None, cfg.network,
                        relay_hosts=sorted(set(towards.values())))
        if remote:
            why_not = relay.start_relays(cfg.run_id, cfg.network, gateway, [(h.name, c) for h, c in remote],
                                         towards, local[0] if local else remote[0][1], _progress,
                                         ImageRegistry(cfg.registry, _progress) if cfg.registry else None)
            for name, why in why_not:
                warnings.warn(f"clawswe: agents on the locked network of {name} can still reach services on "
                              f"that host (its firewall: {why})")
    except (ValueError, InfraError, OSError) as exc:
        if gateway is not None:
            gateway.stop()
        raise pytest.UsageError(str(exc)) from None
    if internet:  # every rule in place before any agent starts, or no run (session.start sweeps the rest)
        from urllib.parse import urlsplit

        from pytest_clawswe.engine.network.internet import guard_internet

        why = guard_internet(local[0], own, urlsplit(gateway.url).port, cfg.run_id)
        if why:
            gateway.stop()
            raise pytest.UsageError(f"could not put the host firewall rules of --network internet in place ({why}); "
                                    "give --network open or --network locked")
    if locked and local:
        from urllib.parse import urlsplit

        from pytest_clawswe.engine.network.hostguard import guard

        why = guard(local[0], locked, urlsplit(gateway.url).port, cfg.run_id)
        if why:
            warnings.warn(f"clawswe: agents on the locked network can still reach services listening on this "
                          f"host's every address (host firewall: {why}); run as root with iptables to close it")
    return gateway
