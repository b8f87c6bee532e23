"""The gateway as one benchmark run uses it: started by the controller, shared by every xdist worker.

Containers reach it on the Docker bridge's host address; each instance gets its own token, and its usage
is read back when the agent is done. A scripted model gets the instance's gold patch to apply.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from pytest_clawswe.engine.network.locked import network_host
from pytest_clawswe.gateway.control.admin_api import GatewayClient, GatewayError, read_usage
from pytest_clawswe.gateway.control.process import GatewayProcess
from pytest_clawswe.model import Model
from pytest_clawswe.usage import Usage


def start_for_run(state_dir: Path, docker_client, network: str | None = None,
                  relay_hosts: list[str] | tuple = ()) -> GatewayProcess:
    """Start the run's gateway where the agents' network reaches the host (`docker_client` None: no engine of
    the run is on this machine; the admin API on 127.0.0.1), plus a listener on each of `relay_hosts` for
    other engines' relays (pytest_clawswe/gateway/control/relay.py). The model and its key were checked when
    the run's config was made (run/config.py)."""
    host = network_host(docker_client, network) if docker_client is not None else "127.0.0.1"
    return GatewayProcess.start(state_dir, host=host, relay_hosts=relay_hosts)


class RunGateway:
    """Per-process handle: register an instance, hand its container URL and token, read its usage.

    `harness` and `shaping` ("auto", "off" or a comma list; see gateway/upstream/shaping.py) choose the model-side
    shaping; gateway.describe_shaping(model, harness, shaping) says what it will be, for run.json."""

    def __init__(self, state_dir: Path, model: Model, harness: str = "", shaping: str | None = None,
                 engine: str = ""):
        self.state_dir = Path(state_dir)
        self.model = model
        self.harness = harness
        self.shaping = shaping
        self.client = GatewayClient.from_state_dir(self.state_dir)
        self.tokens: dict[str, str] = {}
        self.records: dict[str, list[dict]] = {}  # an ended instance's ledger lines (its last attempt)
        self.ceiling: dict | None = None  # {"usd", "prices"}: --max-instance-cost, told to the gateway
        # agents on another machine's engine reach the gateway through that engine's relay (gateway/control/relay.py)
        self.relay, self._relay_url = "", ""
        if engine:
            from pytest_clawswe.gateway.control.relay import relay_url

            self._relay_url = relay_url(self.state_dir, engine)
            self.relay = engine if self._relay_url else ""

    @property
    def url(self) -> str:
        """The gateway as this process's agents reach it."""
        return self._relay_url or self.client.url

    def register(self, instance_id: str, row: dict, workdir: str = "/testbed", address: str = "") -> tuple[str, str]:
        """(url, token) for the instance's container; `address` binds the token to the container's address."""
        with _unreachable_is_infra():
            return self._register(instance_id, row, workdir, address)

    def _register(self, instance_id: str, row: dict, workdir: str, address: str) -> tuple[str, str]:
        scripted = None
        if self.model.is_scripted:  # the mode is in the spec; the gateway is told what to play it with
            scripted = {"mode": self.model.scripted_mode, "gold_patch": row.get("patch", ""), "workdir": workdir}
        token = self.client.register(instance_id, self.model.spec, scripted=scripted, address=address,
                                     harness=self.harness, shaping=self.shaping, relay=self.relay,
                                     ceiling=self.ceiling)
        self.tokens[instance_id] = token
        return self.url, token

    def usage(self, instance_id: str) -> Usage:
        """Usage of the instance's latest attempt; its token stops working from here on."""
        token = self.tokens.pop(instance_id, None)
        if token is None:
            return read_usage(self.state_dir, instance_id)
        with _unreachable_is_infra():
            usage = self.client.usage(token)
            self.client.unregister(token)
            self.records[instance_id] = self.client.requests(token)  # after the revoke: nothing comes after
        return usage


@contextlib.contextmanager
def _unreachable_is_infra():
    """A gateway that stopped answering is the benchmark's failure, never the agent's."""
    from pytest_clawswe.errors import InfraError

    try:
        yield
    except (GatewayError, OSError) as exc:
        raise InfraError(f"the model gateway stopped answering ({exc}); the run must be resumed") from exc
