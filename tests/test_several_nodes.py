"""Two web nodes behind one TLS proxy, with task workers beside them, as docs/operations/several-machines.md
lays the deployment out, run on one machine: two gunicorn masters on two ports (as two machines would run
them), two `manage.py task_worker` processes, nginx in front balancing round robin, one PostgreSQL
database and one Redis database for the shared cache. Migrations run once, before any node starts.

Then it checks that nothing is lost or counted twice between the nodes: assessors grade through the proxy
with their requests landing on both nodes (a session made on one is good on the other); a throttle counts
one client once across the nodes; a crowd answer submitted twice at once, landing on both nodes, is
stored once; an upload received by one node is imported by a task worker while its status is read from the
other.

Marked like tests/test_production.py (stack); skipped where nginx or Redis is not there
(scripts/system-deps.sh installs nginx).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import psycopg
import pytest

from tests.stack_browser import Browser as StackBrowser
from tests.stack_browser import free_port, page_attr, wait_ready

pytestmark = [pytest.mark.stack]

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PASSWORD = "nodes-password-1"
ANON_RATE = 5  # the API's signed-out throttle, per hour here: the test's requests never cross a window
SEED = f"""
import json
from django.contrib.auth import get_user_model
from annotation.models import Collection
from annotation.relevance.assignments import assignment_create
from crowd.models import CrowdCampaign
from crowd.providers.links.selectors import link_token
from devtools.load_data import load_pool_build
from tests.crowd.crowd_helpers import build_campaign
users = get_user_model()
assessors = [users.objects.create_user(name, password="{PASSWORD}") for name in ("alice", "bob")]
users.objects.create_user("org", password="{PASSWORD}", is_staff=True)
pool = load_pool_build(name="nodes", n_turns=4, per_turn=4)
assignment = assignment_create(pool=pool, name="nodes", assessors=assessors, with_ptkb=False)
Collection.objects.create(name="uploads")
campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10, assignments=2)
batch = campaign.batches.get()
print(json.dumps({{
    "assignment": assignment.pk,
    "link": "/crowd/take/" + link_token(batch=batch, label="anon-1") + "/",
    "batch": batch.pk,
    "items": batch.items.count(),
}}))
"""


def _nginx_conf(folder: Path, listen: int, nodes: list[int]) -> Path:
    """The proxy of docs/operations/several-machines.md, on loopback ports and a throwaway certificate."""
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", str(folder / "proxy.key"), "-out", str(folder / "proxy.crt"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    servers = "".join(f"        server 127.0.0.1:{port};\n" for port in nodes)
    # As root, nginx's workers would otherwise become nobody, who cannot write the folder.
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = folder / "nginx.conf"
    conf.write_text(
        f"""{user}worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    upstream assay {{
{servers}    }}
    server {{
        listen 127.0.0.1:{listen} ssl;
        ssl_certificate {folder}/proxy.crt;
        ssl_certificate_key {folder}/proxy.key;
        client_max_body_size 200m;
        location / {{
            proxy_pass http://assay;
            # $http_host keeps the port, part of the origin the CSRF check compares (on 443, $host).
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto https;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            # Which node answered: the test reads it, to know requests landed on both.
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""
    )
    return conf


class Browser(StackBrowser):
    """HTTPS to the proxy; `nodes` records which node answered each request."""

    password = PASSWORD

    def __init__(self, port: int, cafile: Path) -> None:
        super().__init__(port)
        self.context = ssl.create_default_context(cafile=str(cafile))
        self.nodes: list[str] = []

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPSConnection("localhost", self.port, timeout=30, context=self.context)

    def extra_headers(self) -> dict[str, str]:
        return {"Referer": f"https://localhost:{self.port}/"}

    def answered(self, response: http.client.HTTPResponse) -> None:
        self.nodes.append(response.headers.get("X-Upstream", ""))


@pytest.fixture
def nodes(tmp_path):
    from django.conf import settings

    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None or not shutil.which("openssl"):
        pytest.skip("needs nginx and openssl (scripts/system-deps.sh installs nginx)")
    if not os.environ.get("REDIS_TEST_URL"):
        pytest.skip("needs Redis (make test starts it)")
    redis = urlsplit(os.environ["REDIS_TEST_URL"])
    database = settings.DATABASES["default"]
    name = f"assay_nodes_{os.getpid()}"
    server_url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}"
    database_url = f"{server_url}/{name}"
    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    cache_url = f"redis://{redis.hostname}:{redis.port}/5"
    media = tmp_path / "media"  # the shared upload storage every node and worker machine mounts
    media.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"TEST_DATABASE_NAME", "DEBUG", "CACHE_URL"}},
        "DEBUG": "0",
        "DATABASE_URL": database_url,
        "CACHE_URL": cache_url,
        "SECRET_KEY": "nodes-" + uuid.uuid4().hex + "k" * 30,  # one key for every node and worker
        "MEDIA_ROOT": str(media),
        "ALLOWED_HOSTS": "localhost,127.0.0.1",
        "BEHIND_PROXY": "1",
        "TRUSTED_PROXIES": "127.0.0.1",
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "4",
        "API_ANON_RATE": f"{ANON_RATE}/hour",
        "CONSOLE_INLINE_IMPORT_BYTES": "0",  # every upload is imported by a task worker
        "LOG_LEVEL": "WARNING",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser tests' fixtures; production never has it
    log_path = tmp_path / "nodes.log"
    log = open(log_path, "w")  # noqa: SIM115  (closed below)
    processes: dict[str, subprocess.Popen] = {}
    try:
        redis_flush = [BIN / "python", "-c", f"import redis; redis.Redis.from_url('{cache_url}').flushdb()"]
        subprocess.run(redis_flush, check=True)
        # Once, from one machine, before any node serves.
        for command in (["migrate", "--noinput", "--skip-checks"], ["shell", "-c", SEED]):
            done = subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        seeded = json.loads(done.stdout.strip().splitlines()[-1])
        ports = [free_port(), free_port()]
        for i, port in enumerate(ports):
            processes[f"web-{i + 1}"] = subprocess.Popen(
                [
                    BIN / "gunicorn",
                    "assay.wsgi",
                    "-c",
                    "deploy/gunicorn.conf.py",
                    "--bind",
                    f"127.0.0.1:{port}",
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            processes[f"tasks-{i + 1}"] = subprocess.Popen(
                [sys.executable, "manage.py", "task_worker"],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proxy = free_port()
        conf = _nginx_conf(tmp_path, proxy, ports)
        processes["proxy"] = subprocess.Popen(
            [nginx, "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for port in ports:
            wait_ready(port, processes, lambda: log_path.read_text()[-3000:])
        deadline = time.monotonic() + 20
        while True:  # and the proxy in front of them
            with contextlib.suppress(OSError):
                if Browser(proxy, tmp_path / "proxy.crt").request("GET", "/readyz")[0] == 200:
                    break
            assert time.monotonic() < deadline, f"the proxy did not answer: {log_path.read_text()[-3000:]}"
            time.sleep(0.2)
        yield {
            "proxy": proxy,
            "nodes": {f"127.0.0.1:{port}" for port in ports},
            "cafile": tmp_path / "proxy.crt",
            "database_url": database_url,
            "media": media,
            **seeded,
        }
    finally:
        for process in processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        log.close()
        with psycopg.connect(f"{server_url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _grade_units(browser: Browser, assignment: int, units: int, graded: list[tuple[str, int, str]]) -> None:
    """What relevance.js does: the next-unit form, the unit's page, then JSON grades that carry the next
    passage, until `units` units are done."""
    for _ in range(units):
        status, headers, page = browser.form(f"/relevance/{assignment}/next/", {})
        assert status == 302
        status, _h, page = browser.get(urlsplit(headers["Location"]).path)
        assert status == 200
        step = (int(page_attr(page, "turn-pk")), page_attr(page, "passage-id"))
        url = page_attr(page, "grade-url")
        while step is not None:
            payload = {
                "turn_pk": step[0],
                "passage_id": step[1],
                "grade": 2,
                "time_spent_ms": 900,
                "next": True,
            }
            status, body = browser.json(url, payload)
            assert status == 201, body
            graded.append((browser.cookies["sessionid"], *step))
            nxt = body["next"]
            step = (nxt["turn_pk"], nxt["passage_id"]) if nxt else None


def test_two_web_nodes_behind_one_proxy_lose_nothing_and_count_nothing_twice(nodes):
    proxy, cafile, both = nodes["proxy"], nodes["cafile"], nodes["nodes"]
    db = psycopg.connect(nodes["database_url"], autocommit=True)

    # Assessors grade through the proxy, at the same time; each one's requests land on both nodes, and the
    # session one node made is good on the other (never sent back to the log-in page).
    browsers = {name: Browser(proxy, cafile) for name in ("alice", "bob")}
    graded: list[tuple[str, int, str]] = []
    failures: list[BaseException] = []

    def assess(name: str) -> None:
        try:
            browsers[name].login(name)
            _grade_units(browsers[name], nodes["assignment"], 2, graded)
        except BaseException as exc:  # noqa: BLE001  (reported below, from the test's thread)
            failures.append(exc)

    threads = [threading.Thread(target=assess, args=(name,)) for name in browsers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for browser in browsers.values():
        assert set(browser.nodes) == both
    assert len(graded) == 16  # two units of four passages each, for each of the two
    stored = db.execute(
        """SELECT u.username, count(*), count(DISTINCT (r.turn_id, r.passage_id))
        FROM annotation_relevancejudgment r JOIN annotation_judge j ON j.id = r.judge_id
        JOIN auth_user u ON u.id = j.user_id GROUP BY u.username ORDER BY u.username"""
    ).fetchall()
    assert stored == [("alice", 8, 8), ("bob", 8, 8)]

    # The API's signed-out throttle counts a client once across the nodes (in the shared Redis): with a
    # count per node, each would let through its own ANON_RATE.
    anonymous = Browser(proxy, cafile)
    statuses = [
        anonymous.request("POST", "/api/token/", b"{}", {"Content-Type": "application/json"})[0]
        for _ in range(2 * ANON_RATE)
    ]
    assert set(anonymous.nodes) == both
    assert statuses == [400] * ANON_RATE + [429] * ANON_RATE

    # A crowd worker's answers sent twice at the same instant (a double click; the proxy puts the two on
    # different nodes) are stored once; the other submit is answered as a repeat.
    worker = Browser(proxy, cafile)
    status, _h, page = worker.get(nodes["link"])
    assert status == 200
    csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    answers = {f"q{n}": "yes" for n in range(1, nodes["items"] + 1)}
    body = urlencode({"csrfmiddlewaretoken": csrf, **answers}).encode()
    submits: list[int] = []
    barrier = threading.Barrier(2)

    def submit() -> None:
        barrier.wait()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        submits.append(worker.request("POST", nodes["link"], body, headers)[0])

    worker.nodes.clear()
    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(worker.nodes) == both
    assert sorted(submits) == [200, 409]
    assignments, answered = db.execute(
        """SELECT count(DISTINCT a.id), count(x.id) FROM crowd_crowdassignment a
        LEFT JOIN crowd_crowdanswer x ON x.assignment_id = a.id WHERE a.batch_id = %s""",
        [nodes["batch"]],
    ).fetchone()
    assert (assignments, answered) == (1, nodes["items"])

    # An upload: one node stores the file (in the shared MEDIA_ROOT) and queues its import, a task worker
    # imports it, and its status is read from the other node too until it is done.
    org = Browser(proxy, cafile)
    org.login("org")
    assert org.get("/console/collections/uploads/")[0] == 200
    topics = "".join(f"t{n}\tWhat is topic {n} about?\n" for n in range(40)).encode()
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{org.cookies["csrftoken"]}\r\n',
        f'--{boundary}\r\nContent-Disposition: form-data; name="kind"\r\n\r\ntopics\r\n',
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="topics.tsv"\r\n'
        "Content-Type: text/tab-separated-values\r\n\r\n",
    ]
    upload = "".join(parts).encode() + topics + f"\r\n--{boundary}--\r\n".encode()
    status, headers, _page = org.request(
        "POST",
        "/console/collections/uploads/",
        upload,
        {"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert status == 302, _page[-2000:]
    received_on = org.nodes[-1]
    job = int(re.search(r"/imports/(\d+)/", headers["Location"]).group(1))
    org.nodes.clear()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, _h, data = org.request("GET", f"/console/collections/uploads/imports/{job}/status.json")
        assert status == 200
        state = json.loads(data)
        if state["status"] not in ("pending", "running"):
            break
        time.sleep(0.2)
    assert state["status"] == "done", state
    assert org.get(f"/console/collections/uploads/imports/{job}/")[0] == 200
    assert set(org.nodes) - {received_on}  # read from the node that did not receive the file
    topics_stored = db.execute(
        "SELECT count(*) FROM annotation_topic t JOIN annotation_collection c ON c.id = t.collection_id "
        "WHERE c.name = 'uploads'"
    ).fetchone()[0]
    assert topics_stored == 40
    # Run by a task worker, which took it from the queue in the database and signed it with its id.
    ran = db.execute(
        "SELECT status, worker_ids FROM django_tasks_database_dbtaskresult WHERE task_path = %s",
        ["console.uploads.tasks.import_job_run_task"],
    ).fetchall()
    assert len(ran) == 1 and ran[0][0] == "SUCCESSFUL" and len(ran[0][1]) == 1, ran
    # The file waited in the shared storage (MEDIA_ROOT), and is gone from it once imported.
    stored_path = db.execute("SELECT stored_path FROM console_importjob WHERE id = %s", [job]).fetchone()[0]
    assert Path(stored_path).is_relative_to(nodes["media"] / "assay-imports")
    assert not Path(stored_path).exists()
    db.close()
