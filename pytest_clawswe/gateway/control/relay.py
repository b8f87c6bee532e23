"""The model gateway as agents on another Docker engine reach it: a relay on that engine's host.

The gateway runs on the pytest machine. An agent on a remote engine sits on that engine's locked network, which
reaches only its own host (the bridge's address) and there only one port (hostguard.remote_guard). On that port
a relay (Debian's nginx, in a container with the host's network) forwards each request to the gateway's relay
listener, unbuffered (streamed answers pass event by event), adding the agent's address and the engine's relay
secret. The gateway believes the address only with the secret (gateway/service/app.py) and binds each token to
(engine, address): container subnets may repeat across engines. The secret is in the relay's config file only
(copied into the container, not in its environment or labels), never in the run folder or a log.
"""
from __future__ import annotations

import hashlib
import io
import random
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import docker.errors

from pytest_clawswe.engine.images import build
from pytest_clawswe.engine.network.locked import bridge_address
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_ROLE, LABEL_RUN, owner_label

IMAGE_REPO = "clawswe-relay"
IMAGE_DIR = Path(__file__).with_name("relay_image")
IMAGE_LABEL = "clawswe.relay-image"
ROLE = "relay"
CONF_PATH = "/etc/clawswe/nginx.conf"
PORTS = (20000, 29999)  # below Linux's ephemeral range: no outgoing connection of the host holds one
RELAYS_FILE = "relays.json"  # in the gateway's state dir: each remote engine's gateway URL (no secrets)


# -- the image ---------------------------------------------------------------------------------------------
def image_tag() -> str:
    return f"{IMAGE_REPO}:{hashlib.sha256((IMAGE_DIR / 'Dockerfile').read_bytes()).hexdigest()[:12]}"


def ensure_relay_image(build_client, clients: list, progress: Callable[[str], None] = lambda line: None,
                       via=None) -> str:
    """The relay image on every engine in `clients`: built once on `build_client`, loaded into the others
    (through the registry `via` when the run has one)."""
    from pytest_clawswe.engine.hosts import transfer

    tag = image_tag()
    if not build._image_exists(build_client, tag):
        with build._build_lock(tag, progress):
            if not build._image_exists(build_client, tag):
                progress(f"building {tag} (once; later runs reuse it)")
                files = {"Dockerfile": IMAGE_DIR / "Dockerfile"}
                args = {k: v for k, v in build._mirror_args().items() if k == "DEBIAN_MIRROR"}
                build._docker_build(build_client, files, tag, args, {IMAGE_LABEL: tag.split(":")[1]}, progress)
    for client in clients:
        if client is not build_client:
            transfer(build_client, client, tag, via, progress)
    return tag


# -- the relay container -----------------------------------------------------------------------------------
def nginx_conf(listen: str, port: int, upstream: str, secret: str) -> str:
    """Pass everything but the admin API on, unbuffered both ways; the agent's own relay headers are replaced."""
    from pytest_clawswe.gateway.contract import RELAY_AGENT_HEADER as AGENT_HEADER  # the address the relay saw
    from pytest_clawswe.gateway.contract import RELAY_SECRET_HEADER as SECRET_HEADER

    return f"""worker_processes 1;
error_log stderr warn;
pid /tmp/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    server_tokens off;
    client_body_temp_path /tmp/body;
    proxy_temp_path /tmp/proxy;
    upstream gateway {{ server {upstream}; keepalive 64; }}
    server {{
        listen {listen}:{port};
        client_max_body_size 0;
        location /_admin/ {{ return 404; }}
        location / {{
            proxy_pass http://gateway;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header {AGENT_HEADER} $remote_addr;
            proxy_set_header {SECRET_HEADER} "{secret}";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
        }}
    }}
}}
"""


def _tar(path: str, text: str) -> bytes:
    data = text.encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(path.lstrip("/").rsplit("/", 1)[-1])
        info.size, info.mode = len(data), 0o600
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def start(client, image: str, run_id: str, listen: str, upstream: str, secret: str, attempts: int = 5) -> int:
    """Start the engine's relay on `listen` (its locked network's bridge address); returns its port."""
    for _ in range(attempts):
        port = random.randint(*PORTS)
        container = client.containers.create(
            image, name=f"clawswe-relay-{run_id}", network_mode="host",
            labels={LABEL_RUN: run_id, LABEL_ROLE: ROLE, **owner_label()})
        try:
            container.put_archive(CONF_PATH.rsplit("/", 1)[0], _tar(CONF_PATH, nginx_conf(listen, port, upstream,
                                                                                               secret)))
            container.start()
            if _listening(container):
                return port
            why = container.logs(tail=3).decode(errors="replace").strip()
        except docker.errors.APIError as exc:
            why = str(exc)
        _remove(container)
        if "in use" not in why:
            raise InfraError(f"the model relay did not start on {client.api.base_url}: {why}", retryable=False)
    raise InfraError(f"the model relay found no free port on {client.api.base_url}", retryable=False)


def _check_reaches(client, run_id: str, upstream: str, engine: str) -> None:
    """The relay's host must reach the gateway's relay listener: found now, not at the first model call."""
    host, _, port = upstream.rpartition(":")
    relay = client.containers.get(f"clawswe-relay-{run_id}")
    done = relay.exec_run(["timeout", "10", "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}"])
    if done.exit_code != 0:
        raise InfraError(f"the host of {engine} cannot open a connection to this machine at {upstream} (the model "
                         "gateway's relay listener); let it through this machine's firewall, or give a "
                         "--docker-host this machine is reachable from", retryable=False)


def _listening(container, settle_s: float = 1.5) -> bool:
    """nginx binds before it serves and exits at once when it cannot: still running after a moment is up."""
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        container.reload()
        if container.status not in ("created", "running"):
            return False
        time.sleep(0.25)
    container.reload()
    return container.status == "running"


def _remove(container) -> None:
    try:
        container.remove(force=True)
    except docker.errors.APIError:
        pass


# -- the run's relays --------------------------------------------------------------------------------------


def start_relays(run_id: str, network: str | None, gateway, engines: list[tuple[str, object]],
                 listen_towards: dict[str, str], build_client,
                 progress: Callable[[str], None], via=None) -> list[tuple[str, str]]:
    """A relay on each of `engines` ((name, client)), forwarding to the gateway's listener on
    `listen_towards[name]`, and (locked network) the engine host's firewall; writes relays.json for the
    workers. Returns (engine, why) for each host firewall that could not be set."""
    from urllib.parse import urlsplit

    from pytest_clawswe.engine.network.hostguard import remote_guard
    from pytest_clawswe.files import write_atomic

    image = ensure_relay_image(build_client, [c for _, c in engines], progress, via)
    admin = gateway.client()
    urls: dict[str, str] = {}
    warnings: list[tuple[str, str]] = []
    for name, client in engines:
        listen = bridge_address(client, network)
        upstream = urlsplit(gateway.relay_urls[listen_towards[name]]).netloc
        port = start(client, image, run_id, listen, upstream, admin.add_relay(name))
        _check_reaches(client, run_id, upstream, name)
        if network:
            why = remote_guard(client, image, network, port, run_id)
            if why:
                warnings.append((name, why))
        urls[name] = f"http://{listen}:{port}"
    import json

    write_atomic(Path(gateway.state_dir) / RELAYS_FILE, json.dumps(urls, indent=2) + "\n")
    return warnings


def relay_url(state_dir: str | Path, engine: str) -> str:
    """The gateway's URL for agents on `engine` (its relay), as the controller wrote it."""
    import json

    try:
        return json.loads((Path(state_dir) / RELAYS_FILE).read_text())[engine]
    except (OSError, ValueError, KeyError):
        raise InfraError(f"no model relay was started for the engine {engine}; the run must be resumed",
                         retryable=False) from None


def unguard_engine(client, run_id: str | None, only_orphans: bool = True, progress=None) -> int:
    """Remove a run's firewall rules from the host of the engine `client` (hostguard.remote_unguard), with
    whichever relay image the engine has; without one, no rule of ours was ever set there."""
    from pytest_clawswe.engine.network.hostguard import remote_unguard

    if run_id is None:
        return 0  # every run's rules: only by run id on another host (a live run there is not visible here)
    images = client.images.list(filters={"label": IMAGE_LABEL})
    if not images:
        return 0
    return remote_unguard(client, images[0].id, run_id, only_orphans=only_orphans, progress=progress)
