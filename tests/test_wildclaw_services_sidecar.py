"""The services sidecar beside a real agent-like container: reachable on localhost, nothing else shared."""
import contextlib
import io
import json
import uuid

import docker.errors
import pytest
from run_containers import run_containers

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_RUN
from pytest_clawswe.run.clean import clean
from pytest_clawswe.wildclaw.services import FIXTURES_DIR
from pytest_clawswe.wildclaw.services.sidecar import start_replay, start_sidecar, stop_sidecar
from pytest_clawswe.wildclaw.services.sidecar_image import ensure_sidecar_image
from pytest_clawswe.wildclaw.services.mock.auditview import log_path, read_log, view
from pytest_clawswe.wildclaw.services.mock.replay import audit_views
from service_calls import AGENT_HTTP, AGENT_IMAGE, agent_on_locked_network

pytestmark = pytest.mark.docker
SOCIAL = FIXTURES_DIR / "social_meeting_tz"

PORT = {"gmail": 9100, "calendar": 9101, "contacts": 9103, "slack": 9110, "search": 9140}


def inside(ws, script: str) -> str:
    result = ws.exec(AGENT_HTTP + script)
    return result.output


def call_script(calls) -> str:
    lines = []
    for endpoint, body in calls:
        quoted = json.dumps(body).replace("'", "'\\''")
        lines.append(f"req POST {PORT[endpoint.split('/')[1]]} {endpoint} '{quoted}'")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def image(docker_client):
    return ensure_sidecar_image(docker_client)


@pytest.fixture
def run_labels():
    run_id = f"t-wcs-{uuid.uuid4().hex[:8]}"
    return {LABEL_RUN: run_id, LABEL_INSTANCE: "wildclaw-services-test"}


@pytest.fixture
def agent(docker_client, run_labels):
    with agent_on_locked_network(docker_client, run_labels) as started:
        yield started


@pytest.fixture
def sidecar(docker_client, agent, image, run_labels, tmp_path):
    config = json.loads((SOCIAL / "config.json").read_text())
    car = start_sidecar(docker_client, agent, config, SOCIAL, tmp_path / "audit", labels=run_labels, image=image)
    yield car
    stop_sidecar(car)


def test_the_agent_reaches_the_services_on_localhost(agent, sidecar):
    out = inside(agent, "for p in 9100 9101 9103; do req GET $p /health; done")
    assert out.split() == ["STATUS", "200"] * 3
    assert sidecar.start_seconds < 30
    print(f"sidecar start: {sidecar.start_seconds:.2f} s")


def test_the_agent_cannot_read_the_service_code_or_fixtures(agent, sidecar):
    out = inside(agent, r"""
      ls -A /srv; ls -d /srv/fixtures /srv/audit /opt/wcs 2>/dev/null  # debian ships an empty /srv
      find / -xdev \( -name 'participants.py' -o -name 'gmail.yaml' -o -name '*.jsonl' \) 2>/dev/null
      grep -rls --exclude-dir=proc --exclude-dir=sys -e reply_kenji_confirm -e 'Atlas migration' / 2>/dev/null
      echo END""")
    assert out.strip() == "END", out


def test_the_agent_sees_no_service_process_and_cannot_kill_one(agent, sidecar):
    out = inside(agent, r"""
      for d in /proc/[0-9]*; do tr '\0' ' ' < $d/cmdline 2>/dev/null; echo; done
      echo "SOCK""ETS"  # split: the script's own command line holds no marker
      inode=$(awk 'toupper($2) ~ /:238C$/ && $4 == "0A" {print $10}' /proc/net/tcp | head -n1)
      echo "listen=$inode"
      ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c "socket:\[$inode\]"
    """)
    processes, sockets = out.split("SOCKETS")
    assert "mock" not in processes and "python" not in processes, processes
    listen, owners = sockets.split()
    assert listen != "listen="  # the port is listening in the shared network namespace ...
    assert owners == "0"  # ... but no process the agent can see owns it: nothing to kill by port
    agent.kill_all()  # every process the agent can see, as the runner does at the budget
    assert inside(agent, "req GET 9100 /health").split() == ["STATUS", "200"]
    # and no endpoint resets a service: the state survives
    assert inside(agent, "req POST 9100 /gmail/reset '{}'").split() == ["STATUS", "404"]


def test_the_audit_of_calls_made_inside_the_agent_equals_those_calls(agent, sidecar, docker_client, image,
                                                                     run_labels):
    calls = [tuple(c) for c in json.loads((SOCIAL / "gold_calls.json").read_text())]
    out = inside(agent, call_script(calls))
    assert out.split() == ["STATUS", "200"] * len(calls), out
    audit_dir = stop_sidecar(sidecar)
    for service in ("gmail", "calendar", "contacts"):
        logged = [(r["endpoint"], r["request"]) for r in read_log(log_path(audit_dir, service))]
        assert logged == [(e, b) for e, b in calls if e.startswith(f"/{service}/")]
    gmail = audit_views(audit_dir)["gmail"]  # the view of the saved log, its limits included
    assert {t["reply_id"] for t in gmail["triggered_replies"]} >= {"reply_kenji_confirm", "reply_lena_confirm"}

    # the grader's side: a fresh container serves the same view from the saved log only
    grader = Workspace(docker_client, image, labels=run_labels).start()
    try:
        start_replay(grader, audit_dir)
        fetch = "import urllib.request as u, sys; sys.stdout.write(u.urlopen('http://127.0.0.1:9100/gmail/audit').read().decode())"
        served = grader.exec(["python3", "-c", fetch]).stdout
        assert json.loads(served) == json.loads(json.dumps(gmail))
    finally:
        grader.remove()


def test_faults_injected_inside_match_across_two_runs(docker_client, image, run_labels, tmp_path):
    calls = [("/contacts/search", {"query": q}) for q in "abcdefghij"]
    runs = []
    for n in range(2):
        ws = Workspace(docker_client, AGENT_IMAGE, labels=run_labels).start()
        try:
            car = start_sidecar(docker_client, ws, {"services": ["contacts"], "error_rate": 0.5, "error_seed": 1002},
                                SOCIAL, tmp_path / f"audit{n}", labels=run_labels, image=image)
            statuses = inside(ws, call_script(calls)).split()[1::2]
            audit_dir = stop_sidecar(car)
        finally:
            ws.remove()
        faults = [(r["seq"], r["fault"]) for r in read_log(log_path(audit_dir, "contacts")) if r["fault"]]
        runs.append((statuses, faults))
    assert runs[0] == runs[1]
    assert runs[0][1] == [(7, "429"), (8, "500")]
    assert runs[0][0][6:8] == ["429", "500"]


def test_the_sidecar_carries_the_run_labels_and_is_gone_after_stop(docker_client, agent, image, run_labels,
                                                                   tmp_path):
    with pytest.raises(ValueError, match="unknown service"):
        start_sidecar(docker_client, agent, {"services": ["gmial"]}, SOCIAL, tmp_path, labels=run_labels, image=image)
    car = start_sidecar(docker_client, agent, {}, SOCIAL, tmp_path / "audit", labels=run_labels, image=image)
    found = run_containers(docker_client, run_labels[LABEL_RUN], running=True)
    assert car.container.id in {c.id for c in found}
    assert sorted(car.ports) == ["calendar", "contacts", "gmail"]  # from the fixture files present
    stop_sidecar(car)
    assert (tmp_path / "audit" / "meta.json").is_file()
    found = run_containers(docker_client, run_labels[LABEL_RUN])
    assert car.container.id not in {c.id for c in found}
    # a sidecar a killed run left behind is swept by `clawswe clean --run-id`
    left = start_sidecar(docker_client, agent, None, SOCIAL, tmp_path / "left", labels=run_labels, image=image)
    clean(docker_client, run_labels[LABEL_RUN], include_live=True, progress=lambda line: None)
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(left.container.id)


def test_search_from_inside_is_counted_and_refused_past_the_budget(docker_client, agent, image, run_labels,
                                                                   tmp_path):
    search = FIXTURES_DIR / "search_lighthouse"
    config = json.loads((search / "config.json").read_text())
    car = start_sidecar(docker_client, agent, config, search, tmp_path / "audit", labels=run_labels, image=image)
    try:
        queries = [("/search/query", {"query": q}) for q in ("Kestrel automated", "resident keeper", "Ellery",
                                                             "Thorvald", "one too many")]
        statuses = inside(agent, call_script(queries)).split()[1::2]
    finally:
        audit_dir = stop_sidecar(car)
    assert statuses == ["200"] * 4 + ["403"]
    searched = view("search", read_log(log_path(audit_dir, "search")))
    assert searched["query_count"] == 4 and [q["query"] for q in searched["refused_queries"]] == ["one too many"]


def test_a_new_version_keeps_the_newest_other_versions_and_those_in_use(docker_client, image):
    """Every other version's image was removed when a version was built: another checkout's run, about to start a
    sidecar from its own version, lost it. Versions here: images of a label of this test's own, built in turn."""
    from pytest_clawswe.wildclaw.services.sidecar_image import drop_old_versions

    label = f"clawswe-test.versions-{uuid.uuid4().hex[:8]}"
    ids = []
    for n in range(6):  # oldest first
        built, _ = docker_client.images.build(fileobj=io.BytesIO(f"FROM {image}\nLABEL {label}=v{n}\n".encode()),
                                              rm=True)
        ids.append(built.id)
    in_use = docker_client.containers.create(ids[0], command="true", labels={LABEL_RUN: "t-wcs-versions"})
    try:
        drop_old_versions(docker_client, ids[-1], label=label, keep=3)
        left = {i.id for i in docker_client.images.list(filters={"label": label})}
        assert left == {ids[0], *ids[2:]}  # the newest three others, the current one, and the one in use
    finally:
        in_use.remove(force=True)
        for image_id in ids:
            with contextlib.suppress(docker.errors.APIError):
                docker_client.images.remove(image_id, force=True)
