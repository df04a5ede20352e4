"""Release upgrades on the e2e stack: expand, migrate, roll out, contract, from the render.

One :class:`Upgrade` is one step of releases (``older`` -> ``newer``) on a database of its
own, with two S3 stores (the stack's bucket and one of the step's) and the image cache on.
Everything Glance runs comes from ``playbooks/render.yml``:

=================  ========================================================================
render             input
=================  ========================================================================
``installed``      ``openStackRelease``/``image.tag`` = older, no status: the db-sync Job
                   and the API Deployment of the installed release (the API that serves
                   during Expanding and Migrating: the operator's pass does not write the
                   Deployment before RollingUpdate, although the render shows the spec's)
``Expanding``      release = newer, ``status`` = {installedRelease: older, targetRelease:
``Migrating``      newer, upgradePhase: <phase>}: the phase Job ``{name}-db-<phase>``
``Contracting``    (expand, migrate, contract), which must carry the newer image
``RollingUpdate``  the same status in RollingUpdate: the Deployment the API rolls to
``upgraded``       release = newer, status = {installedRelease: newer}: the steady state
                   after the upgrade (its db-sync Job re-runs on the new image)
=================  ========================================================================

Each container runs from the environment of the release its image tag names
(``.venv-glance/<release>``, the Remap table's ``/var/lib/openstack``).
:func:`phase_job` is the ONE place that takes a phase Job from a render (by name).

:func:`run_upgrade` walks the flow and checks it as it goes (plain ``assert``; the bench
calls it too): the data set of :class:`DataSet` is created through the older API; during
each phase a :class:`Traffic` thread reads (checksum-verified) and creates + uploads
images against the API that serves at that time, and must see no failure and at least one
read and one upload in flight while the phase command ran; after each phase every image is
read again and one more uploaded. During the rollout both releases serve (as pods of both
do): every image is read through the newer API, then through the older one. Afterwards
every image's API document, members, database rows (``images``, ``image_properties``,
``image_tags``, ``image_members``, ``image_locations``: locations come from the database,
the honest source, since the render does not set ``show_multiple_locations``) and S3
objects are what they were before, less what Glance itself changes when it shows an image
(``updated_at``; the credentials glance 33 drops from S3 location URLs: see
:data:`VOLATILE`), the database is at the newer release's alembic heads, and the newer
release's db-sync changes nothing (the schema, the alembic version and ``CHECKSUM TABLE``
of every table).

With ``abort_first`` (the test), expand and migrate by the newer release come first, then
the spec goes back to the installed release (``UpgradeAborted``, :func:`abort`): the
installed release's db-sync Job runs and its API, started again, serves the same data set;
then the upgrade runs again, as above. The bench runs the upgrade alone.
"""

from __future__ import annotations

import copy
import hashlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from e2e.glance_http import download, get_image, headers, upload
from e2e.stack import (
    ADMIN_PASSWORD,
    S3_ACCESS_KEY,
    S3_SECRET_KEY,
    Process,
    Remap,
    Rendered,
    Stack,
    free_port,
    http,
    materialize,
    pod_container,
)

GLANCE = "glance"  # metadata.name of the sample's Glance
FIRST_STORE = "s3-default"  # the sample's GlanceBackend
SECOND_STORE = "s3-second"
PHASE_COMMANDS = {"Expanding": "expand", "Migrating": "migrate", "Contracting": "contract"}
RENDERS = ("installed", "Expanding", "Migrating", "RollingUpdate", "Contracting", "upgraded")
CACHE_SIZE_LIMIT = "64Mi"

# The alembic heads of each release's glance (its alembic_migrations/versions): glance 31.1.0
# (2025.2), 32.0.0 (2026.1) and 33.0.0 (2026.2) ship the same migrations, the last ones of
# 2024.1. ``test_the_alembic_heads_are_the_releases`` reads them from each release's code.
# A database at a release's schema holds its contract head only (``db version`` prints it):
# the contract branch depends on the expand branch.
ALEMBIC_HEADS = {
    release: {"expand": "2024_1_expand01", "contract": "2024_1_contract01"}
    for release in ("2025.2", "2026.1", "2026.2")
}
# What glance-manage db expand/migrate/contract print when the database is at the release's
# contract head already (glance/cmd/manage.py; exit status 0).
UP_TO_DATE = "Database is up to date. No migrations needed."

# What Glance itself changes when it shows an image (the comparison accounts for it):
# * ``updated_at`` of the image and its locations: glance 31/32 save every S3-backed image
#   they show, each time (glance/common/store_utils.py: the URL they rebuild puts the store's
#   s3_store_host, scheme included, after the credentials, never equals the stored one:
#   "S3 URL mismatch for image ..., updating URL"); glance 33 saves it once, see below.
# * glance 33 (2026.2) stores S3 location URLs without the credentials: on its first show
#   of an image, ``s3+http://KEY:SECRET@host/bucket/id`` becomes ``s3+http://host/bucket/id``.
VOLATILE = "updated_at"
SAVED_ON_READ = ("images", "image_locations")
CREDENTIAL_FREE_LOCATIONS = {"2025.2": False, "2026.1": False, "2026.2": True}

IMAGE_TABLES = {
    "images": "id",
    "image_properties": "image_id",
    "image_tags": "image_id",
    "image_members": "image_id",
    "image_locations": "image_id",
}
DATA_SIZE = 256 * 1024
TRAFFIC_SIZE = 16 * 1024
# A bound on a condition, not a pause: the copy of a 257 KiB image took over 120 s once in
# make test, the e2e stack at nice 19 beside the node's tiers (2026-12-07); 300 s gives it
# room and costs nothing when it is done sooner.
COPY_TIMEOUT = 300


@dataclass(frozen=True)
class Step:
    older: str
    newer: str

    @property
    def key(self) -> str:
        return f"{self.older}_{self.newer}".replace(".", "_")

    def __str__(self) -> str:
        return f"{self.older}->{self.newer}"


STEPS = (Step("2025.2", "2026.1"), Step("2026.1", "2026.2"))


# ---------------------------------------------------------------------------------------
# the renders


def phase_job(rendered: Rendered, phase: str) -> dict[str, Any] | None:
    """The phase Job ``{name}-db-<expand|migrate|contract>`` of a render, or None."""
    name = f"{GLANCE}-db-{PHASE_COMMANDS[phase]}"
    found = [o for o in rendered.objects if o["kind"] == "Job" and o["metadata"]["name"] == name]
    assert len(found) <= 1, f"the render holds {len(found)} Jobs {name}"
    return found[0] if found else None


def image_release(obj: Mapping[str, Any]) -> str:
    """The release an object's (only) container image is tagged with."""
    containers = obj["spec"]["template"]["spec"]["containers"]
    images = {c["image"].rsplit(":", 1)[-1] for c in containers if c["name"] != "cache-maintenance"}
    assert len(images) == 1, images
    return images.pop()


@dataclass
class Upgrade:
    """One step on a database and a second bucket of its own, and its renders."""

    stack: Stack
    step: Step
    name: str  # "up" (the test), "bench": the database, bucket and pod roots carry it
    venvs: Mapping[str, Path]  # release -> .venv-glance/<release>
    renders: dict[str, tuple[Rendered, Remap]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def database(self) -> str:
        return f"glance_{self.name}_{self.step.key}"

    @property
    def bucket(self) -> str:
        return f"glance-{self.name}-{self.step.key}".replace("_", "-")

    def prepare(self, keys: tuple[str, ...] = RENDERS) -> None:
        """The database, the second bucket and every render (two at a time)."""
        self.stack.create_database(self.database)
        made = http("PUT", f"{self.stack.s3_url}/{self.bucket}", body=b"")
        assert made.status == 200, made.body
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = {key: pool.submit(self._render, key) for key in keys}
            self.renders.update({key: future.result() for key, future in done.items()})

    def _render(self, key: str) -> tuple[Rendered, Remap]:
        step = self.step
        if key == "installed":
            release, status = step.older, None
        elif key == "upgraded":
            release, status = step.newer, {"installedRelease": step.newer}
        else:
            release = step.newer
            status = {
                "installedRelease": step.older,
                "targetRelease": step.newer,
                "upgradePhase": key,
            }

        def edit(docs: list[dict[str, Any]]) -> None:
            glance = next(d for d in docs if d["kind"] == "Glance")
            spec = glance["spec"]
            spec["openStackRelease"] = release
            spec["image"]["tag"] = release
            spec["database"]["database"] = self.database
            spec["imageCache"] = {"sizeLimit": CACHE_SIZE_LIMIT}
            if status is not None:
                glance["status"] = status
            first = next(d for d in docs if d["kind"] == "GlanceBackend")
            assert first["metadata"]["name"] == FIRST_STORE
            second = copy.deepcopy(first)
            second["metadata"]["name"] = SECOND_STORE
            second["spec"]["isDefault"] = False
            second["spec"]["s3"]["bucket"] = self.bucket
            docs.insert(docs.index(first) + 1, second)

        # The image a render's objects carry decides the environment they run from; the
        # Remap of a render is rebuilt per object (run_job, launch) with that release.
        rendered, remap = self.stack.variant(f"{self.name}-{self.step.key}-{key}", edit)
        return rendered, remap

    def remap_for(self, key: str, release: str) -> Remap:
        _, remap = self.renders[key]
        return replace(remap, venv=self.venvs[release])

    def rendered(self, key: str) -> Rendered:
        return self.renders[key][0]

    def run_db_sync(self, key: str) -> str:
        """The db-sync Job of render ``key``, from the release of its image; its stdout."""
        rendered = self.rendered(key)
        job = rendered.find("Job", f"{GLANCE}-db-sync")
        release = image_release(job)
        proc = self.stack.run_container(
            f"{self.name}-{self.step.key}-{key}-db-sync",
            rendered,
            self.remap_for(key, release),
            "Job",
            "db-sync",
            object_name=job["metadata"]["name"],
        )
        return proc.stdout  # the log goes to stderr (logs/<name>.log has both)

    def run_phase(self, phase: str) -> str:
        """The rendered phase Job of ``phase``: it must carry the newer release's image."""
        rendered = self.rendered(phase)
        job = phase_job(rendered, phase)
        assert job is not None, f"the {phase} render holds no {GLANCE}-db-{PHASE_COMMANDS[phase]}"
        assert image_release(job) == self.step.newer, job["spec"]["template"]
        containers = job["spec"]["template"]["spec"]["containers"]
        assert len(containers) == 1, [c["name"] for c in containers]
        name = f"{self.name}-{self.step.key}-db-{PHASE_COMMANDS[phase]}"
        started = time.monotonic()
        proc = self.stack.run_container(
            name,
            rendered,
            self.remap_for(phase, self.step.newer),
            "Job",
            containers[0]["name"],
            object_name=job["metadata"]["name"],
        )
        self.timings[PHASE_COMMANDS[phase]] = time.monotonic() - started
        return proc.stdout  # the log goes to stderr (logs/<name>.log has both)

    def manage(self, key: str, release: str, *args: str) -> str:
        """``glance-manage <args>`` of ``release`` with the config and env of ``key``'s db-sync."""
        rendered = self.rendered(key)
        remap = self.remap_for(key, release)
        pod, container = pod_container(rendered.find("Job", f"{GLANCE}-db-sync"), "db-sync")
        materialize(rendered, pod, container, remap)
        env = remap.environment(rendered.container_env(container, remap.downward_api))
        argv = ["glance-manage", "--config-dir", "/etc/glance/glance-api.conf.d/", *args]
        name = f"{self.name}-{self.step.key}-manage-{'-'.join(args).replace(' ', '_')}"
        proc = self.stack.run(name, remap.command(argv), env=env)
        return proc.stdout

    def db_version(self, release: str) -> list[str]:
        """``glance-manage db version`` of ``release``: the database's alembic heads."""
        key = "installed" if release == self.step.older else "upgraded"
        return sorted(self.manage(key, release, "db", "version").split())

    def launch(self, key: str) -> tuple[Process, str]:
        """The API of render ``key``'s Deployment, from the release of its image."""
        rendered = self.rendered(key)
        release = image_release(rendered.find("Deployment"))
        port = free_port()
        proc = self.stack.launch_from(
            f"{self.name}-{self.step.key}-api-{key}", rendered, self.remap_for(key, release), port
        )
        return proc, f"http://127.0.0.1:{port}"

    # -- the database, as the test sees it ------------------------------------------------

    def rows(self, ids: list[str]) -> dict[str, list[dict[str, str]]]:
        """Every row of the image tables that belongs to ``ids``: column -> value, sorted."""
        listed = ",".join(f"'{i}'" for i in ids)
        found = {}
        for table, column in IMAGE_TABLES.items():
            names = [
                row[0]
                for row in self.stack.sql(
                    "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                    f"TABLE_SCHEMA='{self.database}' AND TABLE_NAME='{table}' "
                    "ORDER BY ORDINAL_POSITION",
                    self.database,
                )
            ]
            rows = self.stack.sql(
                f"SELECT {', '.join(names)} FROM {table} WHERE {column} IN ({listed})",
                self.database,
            )
            found[table] = sorted((dict(zip(names, row, strict=True)) for row in rows), key=str)
        return found

    def schema_and_content(self) -> dict[str, Any]:
        """The schema (columns, indexes), the alembic version and every table's checksum."""
        db = self.database
        columns = self.stack.sql(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, "
            f"COLUMN_KEY, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='{db}' "
            "ORDER BY TABLE_NAME, ORDINAL_POSITION",
            db,
        )
        indexes = self.stack.sql(
            "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE FROM "
            f"information_schema.STATISTICS WHERE TABLE_SCHEMA='{db}' "
            "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
            db,
        )
        tables = sorted({row[0] for row in columns})
        checksums = self.stack.sql("CHECKSUM TABLE " + ", ".join(tables), db)
        return {
            "columns": columns,
            "indexes": indexes,
            "alembic_version": sorted(self.stack.sql("SELECT * FROM alembic_version", db)),
            "checksums": checksums,
        }


# ---------------------------------------------------------------------------------------
# the data set


def _create(url: str, token: str, body: Mapping[str, Any]) -> str:
    resp = http("POST", f"{url}/v2/images", dict(body), headers(token))
    assert resp.status == 201, resp.body
    return resp.json()["id"]


def _ok(resp, *statuses: int) -> Any:
    assert resp.status in statuses, (resp.status, resp.body[:2000])
    return resp.json() if resp.body else None


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


@dataclass
class DataSet:
    """The images the upgrade must keep, and the bytes of those that hold data."""

    stack: Stack
    upgrade: Upgrade
    demo: str  # tokens
    admin: str
    admin_project: str
    ids: dict[str, str] = field(default_factory=dict)  # name -> id
    data: dict[str, bytes] = field(default_factory=dict)  # id -> bytes (active images)
    cached: str = ""

    @classmethod
    def create(cls, stack: Stack, upgrade: Upgrade, url: str, cache: bool = True) -> DataSet:
        """The data set, made through the API at ``url``; ``cache``: the API has the image
        cache on and one process serves it (one image is read twice, the second a hit)."""
        admin = stack.keystone_token("admin", ADMIN_PASSWORD, "admin")
        projects = http(
            "GET", f"{stack.keystone_url}/projects?name=admin", headers={"X-Auth-Token": admin}
        )
        admin_project = _ok(projects, 200)["projects"][0]["id"]
        dataset = cls(stack, upgrade, stack.demo_token(), admin, admin_project)
        dataset._build(url, cache)
        return dataset

    def _image(
        self, url: str, name: str, store: str | None = None, token: str | None = None, **body: Any
    ) -> str:
        token = token or self.demo
        rnd = random.Random(f"{self.upgrade.step}-{name}")
        body = {"name": name, "disk_format": "raw", "container_format": "bare", **body}
        image_id = _create(url, token, body)
        self.ids[name] = image_id
        data = rnd.randbytes(DATA_SIZE + rnd.randrange(4096))
        upload(url, token, image_id, data, store)
        self.data[image_id] = data
        return image_id

    def _build(self, url: str, cache: bool) -> None:
        demo, admin = self.demo, self.admin
        # Shared with the admin project (accepted), properties and tags, default store.
        shared = self._image(
            url,
            "up-shared",
            visibility="shared",
            min_ram=256,
            min_disk=1,
            os_distro="debian",
            os_version="12",
            hw_disk_bus="scsi",
            e2e_owner_note="kept across the upgrade",
        )
        for tag in ("base", "linux", "lts"):
            _ok(http("PUT", f"{url}/v2/images/{shared}/tags/{tag}", headers=headers(demo)), 204)
        member = {"member": self.admin_project}
        _ok(http("POST", f"{url}/v2/images/{shared}/members", member, headers(demo)), 200)
        accept = {"status": "accepted"}
        path = f"{url}/v2/images/{shared}/members/{self.admin_project}"
        _ok(http("PUT", path, accept, headers(admin)), 200)

        # In the second store, with its own properties and tags.
        second = self._image(
            url, "up-second-store", store=SECOND_STORE, os_distro="ubuntu", hw_scsi_model="x"
        )
        _ok(http("PUT", f"{url}/v2/images/{second}/tags/second", headers=headers(demo)), 204)

        # In both stores: uploaded to the first, copied to the second (copy-image, admin).
        both = self._image(url, "up-both-stores", architecture="x86_64")
        body = {"method": {"name": "copy-image"}, "stores": [SECOND_STORE]}
        _ok(http("POST", f"{url}/v2/images/{both}/import", body, headers(admin)), 202)
        deadline = time.monotonic() + COPY_TIMEOUT
        while True:
            image = get_image(url, admin, both)
            # Done: both locations, and the import's lock and bookkeeping released.
            if (
                set(image["stores"].split(",")) == {FIRST_STORE, SECOND_STORE}
                and not image.get("os_glance_importing_to_stores")
                and "os_glance_import_task" not in image
            ):
                break
            assert not image.get("os_glance_failed_import"), image
            assert time.monotonic() < deadline, f"copy-image not done: {image}"
            time.sleep(0.3)

        # Public, created by the admin, in the second store.
        self._image(url, "up-public", store=SECOND_STORE, token=admin, visibility="public")

        # Deactivated by its owner.
        off = self._image(url, "up-deactivated", os_distro="cirros")
        _ok(http("POST", f"{url}/v2/images/{off}/actions/deactivate", headers=headers(demo)), 204)

        # Deleted: the rows stay (deleted=1), the object goes.
        gone = self._image(url, "up-deleted")
        _ok(http("DELETE", f"{url}/v2/images/{gone}", headers=headers(demo)), 204)
        del self.data[gone]

        # Queued: created, never uploaded.
        self.ids["up-queued"] = _create(
            url,
            demo,
            {"name": "up-queued", "disk_format": "qcow2", "container_format": "bare", "k": "v"},
        )

        if not cache:
            return
        # Cached by the API that serves it: two downloads, the second a hit.
        self.cached = shared
        for _ in range(2):
            assert download(url, demo, shared) == self.data[shared]
        deadline = time.monotonic() + 30
        while self.cache(url).get(shared) != 1:
            assert time.monotonic() < deadline, self.cache(url)
            time.sleep(0.2)

    def cache(self, url: str) -> dict[str, int]:
        """``GET /v2/cache`` (admin): image id -> hits."""
        found = _ok(http("GET", f"{url}/v2/cache", headers=headers(self.admin)), 200)
        return {entry["image_id"]: entry["hits"] for entry in found["cached_images"]}

    @property
    def readable(self) -> dict[str, bytes]:
        """The images a member can download (active): id -> bytes."""
        deactivated = self.ids["up-deactivated"]
        return {i: d for i, d in self.data.items() if i != deactivated}

    def snapshot(self, url: str) -> dict[str, Any]:
        """What must not change: API documents, members, database rows, S3 objects."""
        api: dict[str, Any] = {}
        members: dict[str, Any] = {}
        for name, image_id in sorted(self.ids.items()):
            resp = http("GET", f"{url}/v2/images/{image_id}", headers=headers(self.admin))
            api[name] = resp.json() if resp.status == 200 else resp.status
            resp = http("GET", f"{url}/v2/images/{image_id}/members", headers=headers(self.demo))
            members[name] = resp.json() if resp.status == 200 else resp.status
        return {
            "api": api,
            "members": members,
            "db": self.upgrade.rows(sorted(self.ids.values())),
            "objects": s3_objects(self.stack, self._object_keys()),
        }

    def _object_keys(self) -> list[tuple[str, str]]:
        buckets = {FIRST_STORE: self.stack.bucket, SECOND_STORE: self.upgrade.bucket}
        return [(bucket, image_id) for image_id in self.ids.values() for bucket in buckets.values()]

    def verify_reads(self, url: str) -> None:
        """Every readable image downloads with its bytes and the checksums Glance holds."""
        for image_id, data in self.readable.items():
            image = get_image(url, self.demo, image_id)
            got = download(url, self.demo, image_id)
            assert got == data, f"{image_id}: the download differs"
            assert image["checksum"] == _md5(got), image
            assert image["os_hash_value"] == hashlib.sha512(got).hexdigest(), image
        off = self.ids["up-deactivated"]
        resp = http("GET", f"{url}/v2/images/{off}/file", headers=headers(self.demo))
        assert resp.status == 403, (resp.status, resp.body[:300])


S3_OBJECTS = """
import hashlib, json, sys, boto3, botocore
req = json.loads(sys.stdin.read())
s3 = boto3.client("s3", endpoint_url=req["url"], aws_access_key_id=req["key"],
                  aws_secret_access_key=req["secret"], region_name="us-east-1")
found = {}
for bucket, key in req["objects"]:
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError:
        continue
    found[f"{bucket}/{key}"] = hashlib.sha256(body).hexdigest()
print(json.dumps(found))
"""


def s3_objects(stack: Stack, objects: list[tuple[str, str]]) -> dict[str, str]:
    """``bucket/key`` -> SHA-256 of every object of ``objects`` that exists (one boto3 run)."""
    return stack.e2e_python(
        S3_OBJECTS,
        {
            "url": stack.s3_url,
            "key": S3_ACCESS_KEY,
            "secret": S3_SECRET_KEY,
            "objects": objects,
        },
    )


# ---------------------------------------------------------------------------------------
# traffic while a phase runs


@dataclass
class Op:
    kind: str  # "read" or "write"
    started: float
    ended: float
    error: str | None


class Traffic:
    """Two client threads: checksum-verified reads, and creates + uploads, each in a loop."""

    def __init__(self, url: str, token: str, reads: Mapping[str, bytes], label: str) -> None:
        self.url, self.token, self.label = url, token, label
        self.reads = list(reads.items())
        self.ops: list[Op] = []  # list.append is atomic: both threads record here
        self.created: dict[str, bytes] = {}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(kind,), name=f"{label}-{kind}", daemon=True)
            for kind in ("read", "write")
        ]
        self._rnd = random.Random(label)

    def _read(self, n: int) -> None:
        """One request: the bytes, and the checksum Glance sends with them (Content-MD5)."""
        image_id, data = self.reads[n % len(self.reads)]
        resp = http("GET", f"{self.url}/v2/images/{image_id}/file", headers=headers(self.token))
        assert resp.status == 200, (resp.status, resp.body[:300])
        assert resp.body == data, f"read {image_id}: the bytes differ"
        sent = {k.lower(): v for k, v in resp.headers.items()}.get("content-md5")
        assert sent == _md5(data), resp.headers

    def _write(self, n: int) -> None:
        """Create and upload; the bytes are checked when the flow reads them back."""
        data = self._rnd.randbytes(TRAFFIC_SIZE)
        body = {
            "name": f"traffic-{self.label}-{n}",
            "disk_format": "raw",
            "container_format": "bare",
        }
        image_id = _create(self.url, self.token, body)
        upload(self.url, self.token, image_id, data)
        self.created[image_id] = data

    def _loop(self, kind: str) -> None:
        n = 0
        while not self._stop.is_set():
            started = time.monotonic()
            error = None
            try:
                (self._read if kind == "read" else self._write)(n)
            except Exception as exc:  # recorded; checked by the caller
                error = f"{type(exc).__name__}: {exc}"
            self.ops.append(Op(kind, started, time.monotonic(), error))
            n += 1

    def wait_for_ops(self, timeout: float = 60) -> None:
        """Until an op of each kind has completed: both clients are at work."""
        deadline = time.monotonic() + timeout
        while {op.kind for op in self.ops} != {"read", "write"}:
            assert time.monotonic() < deadline, f"traffic {self.label}: {self.ops}"
            time.sleep(0.05)

    @contextmanager
    def running(self) -> Iterator[Traffic]:
        for thread in self._threads:
            thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            for thread in self._threads:
                thread.join(120)

    def in_flight_within(self, started: float, ended: float) -> dict[str, int]:
        """Ops of each kind that were in flight at some moment of the window (began before
        it ended, finished after it began); no op may have failed."""
        failed = [op for op in self.ops if op.error]
        assert not failed, f"traffic {self.label}: {len(failed)} failed: {failed[:3]}"
        counts = {"read": 0, "write": 0}
        for op in self.ops:
            if op.started <= ended and op.ended >= started:
                counts[op.kind] += 1
        return counts


def during(
    label: str,
    url: str,
    dataset: DataSet,
    action: Callable[[], Any],
    traffic_log: dict[str, dict[str, int]],
    created: dict[str, bytes],
) -> Any:
    """Run ``action`` while a :class:`Traffic` client works against ``url``.

    The clients run before the action starts (an op of each kind completed) and until it
    returns, then finish the ops they have in flight; each of their ops must succeed, and
    at least one read and one create + upload must have been served while the action ran.
    "Served while it ran" is "in flight at some moment of it", not "completed inside it":
    a phase Job of these releases takes about 1.3 s on a quiet machine, less than one
    create + upload, so counting only completions made the check depend on the machine's
    speed (it failed once in a full run).
    """
    traffic = Traffic(url, dataset.demo, dataset.readable, label)
    with traffic.running():
        traffic.wait_for_ops()
        started = time.monotonic()
        result = action()
        ended = time.monotonic()
    counts = traffic.in_flight_within(started, ended)
    assert counts["read"] >= 1 and counts["write"] >= 1, (
        f"{label}: no read and upload in flight while it ran ({ended - started:.1f}s): {counts}"
    )
    traffic_log[label] = counts
    created.update(traffic.created)
    return result


def after(label: str, url: str, dataset: DataSet, created: dict[str, bytes]) -> None:
    """After a phase: every image reads back verified, and one more is created + uploaded."""
    dataset.verify_reads(url)
    traffic = Traffic(url, dataset.demo, dataset.readable, f"{label}-after")
    traffic._write(0)
    created.update(traffic.created)


# ---------------------------------------------------------------------------------------
# the flows


@dataclass
class Outcome:
    """What a flow measured and saw (the checks already held)."""

    timings: dict[str, float]
    outputs: dict[str, str]
    traffic: dict[str, dict[str, int]]
    images: int
    created_during: int


def _without_credentials(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest[rest.rfind('@') + 1 :]}"


def comparable(snapshot: Mapping[str, Any], credential_free: bool) -> dict[str, Any]:
    """A snapshot less what Glance itself changes when it shows an image (VOLATILE ...).

    ``credential_free``: the live locations' URLs as a release that drops the credentials
    from them (CREDENTIAL_FREE_LOCATIONS) leaves them once it has shown the image.
    """
    api = {
        name: {k: sorted(v) if k == "tags" else v for k, v in doc.items() if k != VOLATILE}
        if isinstance(doc, dict)
        else doc
        for name, doc in snapshot["api"].items()
    }
    db = {}
    for table, rows in snapshot["db"].items():
        kept = []
        for row in rows:
            row = {k: v for k, v in row.items() if not (k == VOLATILE and table in SAVED_ON_READ)}
            if table == "image_locations" and credential_free and row["deleted"] == "0":
                row["value"] = _without_credentials(row["value"])
            kept.append(row)
        db[table] = sorted(kept, key=str)
    return {**snapshot, "api": api, "db": db}


def live_location_urls(snapshot: Mapping[str, Any]) -> list[str]:
    return [r["value"] for r in snapshot["db"]["image_locations"] if r["deleted"] == "0"]


def same(before: Mapping[str, Any], now: Mapping[str, Any], release: str, what: str) -> None:
    """``now`` is ``before``, as Glance ``release`` leaves what it shows (:func:`comparable`)."""
    urls = live_location_urls(now)
    assert urls, f"{what}: no live location"
    if CREDENTIAL_FREE_LOCATIONS[release]:
        assert all("@" not in url for url in urls), f"{what}: {urls}"
    expected = comparable(before, CREDENTIAL_FREE_LOCATIONS[release])
    actual = comparable(now, False)
    for table, rows in expected["db"].items():
        gone = [r for r in rows if r not in actual["db"][table]]
        new = [r for r in actual["db"][table] if r not in rows]
        assert not gone and not new, f"{what}: {table}: rows gone {gone}, rows new {new}"
    for part in expected:
        assert actual[part] == expected[part], f"{what}: {part} changed"


def _check_created(url: str, token: str, created: Mapping[str, bytes]) -> None:
    """Every image the clients uploaded: active, with its checksum, and its bytes."""
    for image_id, data in created.items():
        image = get_image(url, token, image_id)
        assert image["status"] == "active" and image["checksum"] == _md5(data), image
        assert download(url, token, image_id) == data, image_id


def _said(output: str) -> list[str]:
    """What glance-manage printed on stdout."""
    return [line for line in output.splitlines() if line]


def install(upgrade: Upgrade) -> tuple[Process, str, DataSet, dict[str, Any]]:
    """The installed release from its render, the data set through its API, a snapshot."""
    upgrade.run_db_sync("installed")
    assert upgrade.db_version(upgrade.step.older) == [ALEMBIC_HEADS[upgrade.step.older]["contract"]]
    api, url = upgrade.launch("installed")
    dataset = DataSet.create(upgrade.stack, upgrade, url)
    dataset.verify_reads(url)
    before = dataset.snapshot(url)
    urls = live_location_urls(before)
    assert len(urls) == 6, urls  # one per active/deactivated image, two for up-both-stores
    credential_free = CREDENTIAL_FREE_LOCATIONS[upgrade.step.older]
    assert all(("@" not in url) == credential_free for url in urls), urls
    return api, url, dataset, before


def abort(
    upgrade: Upgrade,
    api: Process,
    dataset: DataSet,
    before: Mapping[str, Any],
    created: Mapping[str, bytes],
    outputs: dict[str, str],
) -> tuple[Process, str]:
    """UpgradeAborted after expand + migrate: the installed release's db-sync, its API again.

    The operator deletes the phase Jobs and runs the installed release's db-sync Job; its
    pods (restarted here) must serve the database the newer release expanded and migrated:
    the data set as it was, and what was uploaded meanwhile.
    """
    step = upgrade.step
    api.stop()
    started = time.monotonic()
    outputs["db-sync (abort)"] = upgrade.run_db_sync("installed")
    upgrade.timings["db-sync (abort)"] = time.monotonic() - started
    assert upgrade.db_version(step.older) == [ALEMBIC_HEADS[step.older]["contract"]]
    api, url = upgrade.launch("installed")
    same(before, dataset.snapshot(url), step.older, f"{step} aborted: the data set")
    dataset.verify_reads(url)
    _check_created(url, dataset.demo, created)
    return api, url


def run_upgrade(upgrade: Upgrade, log: Callable[[str], None], abort_first: bool) -> Outcome:
    """older -> newer: expand, migrate (old API serving), roll out, contract; all checked.

    ``abort_first``: expand and migrate, then abort (:func:`abort`), then the upgrade again,
    as an operator who went back to the installed release and later upgrades.
    """
    step = upgrade.step
    upgrade.prepare()
    outputs: dict[str, str] = {}
    traffic: dict[str, dict[str, int]] = {}
    created: dict[str, bytes] = {}
    # The API that serves during Expanding and Migrating is the installed Deployment: the
    # operator's pass does not write the Deployment before RollingUpdate (the render shows
    # the spec's, the newer one, in every phase).
    assert image_release(upgrade.rendered("installed").find("Deployment")) == step.older
    api, url, dataset, before = install(upgrade)
    new_api = None
    try:
        if abort_first:
            for phase in ("Expanding", "Migrating"):
                outputs[f"{phase} (aborted)"] = upgrade.run_phase(phase)
                after(phase, url, dataset, created)
            api, url = abort(upgrade, api, dataset, before, created, outputs)
            log(f"[e2e] {step} aborted, db-sync: {_said(outputs['db-sync (abort)'])}")
        for phase in ("Expanding", "Migrating"):
            outputs[phase] = during(
                phase, url, dataset, lambda p=phase: upgrade.run_phase(p), traffic, created
            )
            after(phase, url, dataset, created)
            log(f"[e2e] {step} {phase}: {_said(outputs[phase])}")

        # RollingUpdate: the newer Deployment comes up next to the old one (maxSurge 1),
        # then the old one goes; the client keeps using the old one until it does.
        rolled = upgrade.rendered("RollingUpdate").find("Deployment")
        assert image_release(rolled) == step.newer

        def roll() -> tuple[Process, str]:
            started = time.monotonic()
            launched = upgrade.launch("RollingUpdate")
            upgrade.timings["rollout"] = time.monotonic() - started
            # Both releases serve now, as pods of both do during a rolling update: the
            # newer one shows (and may rewrite) every image first, then the older one.
            dataset.verify_reads(launched[1])
            dataset.verify_reads(url)
            return launched

        new_api, new_url = during("RollingUpdate", url, dataset, roll, traffic, created)
        started = time.monotonic()
        api.stop()
        upgrade.timings["rollout"] += time.monotonic() - started
        after("RollingUpdate", new_url, dataset, created)

        outputs["Contracting"] = during(
            "Contracting",
            new_url,
            dataset,
            lambda: upgrade.run_phase("Contracting"),
            traffic,
            created,
        )
        after("Contracting", new_url, dataset, created)

        # Nothing lost: the data set as before, and what was created along the way.
        same(before, dataset.snapshot(new_url), step.newer, f"{step}: the data set")
        dataset.verify_reads(new_url)
        _check_created(new_url, dataset.demo, created)
        # The cache is the pod's (an emptyDir): the new pod has cached what it served.
        assert dataset.cached in dataset.cache(new_url)

        # At the newer release's heads; its db-sync (the steady state) changes nothing.
        assert upgrade.db_version(step.newer) == [ALEMBIC_HEADS[step.newer]["contract"]]
        schema = upgrade.schema_and_content()
        started = time.monotonic()
        outputs["db-sync"] = upgrade.run_db_sync("upgraded")
        upgrade.timings["db-sync after"] = time.monotonic() - started
        assert upgrade.schema_and_content() == schema
        assert upgrade.db_version(step.newer) == [ALEMBIC_HEADS[step.newer]["contract"]]
    finally:
        if new_api is not None:
            new_api.stop()
        api.stop()
    return Outcome(dict(upgrade.timings), outputs, traffic, len(dataset.ids), len(created))
