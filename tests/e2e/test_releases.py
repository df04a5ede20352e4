"""The other supported releases on the same stack: a smoke scenario per release.

The stack's own Glance is release 2026.2 (the e2e environment). For every other release
with a pin list (``images/glance/requirements/<release>.txt``: 2025.2 and 2026.1), the
stack's input is rendered with ``openStackRelease``/``image.tag`` set to it and its own
database, and the rendered objects run from that release's environment
``.venv-glance/<release>`` (``hack/glance_venv.py``; built on demand, as for
``test_wsgi_shim.py``), which stands for the release's image (the Remap table's
``/var/lib/openstack``): the db-sync Job, then the API container under uWSGI with the
image's shim, against the stack's MariaDB, Keystone and S3. Smoke: ``/healthcheck``
without a token, an upload into S3 and its download, byte for byte.

Measured on a loaded 2-core machine: 10-12 s per release (render 3 s, db sync 4 s,
ready 2 s, smoke 2 s), so both releases are part of the suite. ``C5C3_SKIP_GLANCE_VENV=1``
skips them with the other tests that need the release environments.
"""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from e2e.glance_http import create_image, delete_image, download, get_image, s3_size, upload
from e2e.stack import RELEASE, Stack, free_port, http, pod_container
from support.hack_scripts import hack_script

pytestmark = [pytest.mark.e2e, pytest.mark.glance_venv]

glance_venv = hack_script("glance_venv")
OTHER_RELEASES = [r for r in glance_venv.releases() if r != RELEASE]
SMOKE_SIZE = 1024 * 1024 + 4321


def test_there_are_other_releases_to_smoke():
    assert OTHER_RELEASES == ["2025.2", "2026.1"], OTHER_RELEASES


@pytest.mark.parametrize("release", OTHER_RELEASES)
def test_the_release_runs_from_its_render_on_the_stack(
    stack: Stack, release_venv, release, timed, say
):
    venv = release_venv(release)
    started = time.monotonic()
    database = "glance_" + release.replace(".", "_")
    stack.create_database(database)

    def edit(docs: list[dict[str, Any]]) -> None:
        spec = next(d for d in docs if d["kind"] == "Glance")["spec"]
        spec["openStackRelease"] = release
        spec["image"]["tag"] = release
        spec["database"]["database"] = database

    rendered, remap = stack.variant(f"release-{release}", edit, venv=venv)
    _, api = pod_container(rendered.find("Deployment"), "glance-api")
    assert api["image"].endswith(f":{release}")
    stack.run_container(f"glance-db-sync-{release}", rendered, remap, "Job", "db-sync")
    port = free_port()
    proc = stack.launch_from(f"glance-api-{release}", rendered, remap, port)
    ready = time.monotonic() - started
    url = f"http://127.0.0.1:{port}"
    image_id = None
    token = stack.demo_token()
    try:
        # The API is this release's: uWSGI and glance from its environment.
        assert proc.popen.args[0] == str(venv / "bin" / "uwsgi"), proc.popen.args[0]
        assert http("GET", f"{url}/healthcheck").status == 200
        data = random.Random(release).randbytes(SMOKE_SIZE)
        image_id = create_image(url, token, f"e2e-smoke-{release}")
        upload(url, token, image_id, data)
        image = get_image(url, token, image_id)
        assert image["status"] == "active"
        assert image["stores"] == "s3-default"
        assert s3_size(stack, stack.bucket, image_id) == SMOKE_SIZE
        assert download(url, token, image_id) == data
    finally:
        if image_id is not None:
            delete_image(url, token, image_id)
        proc.stop()
    say(
        f"\n[e2e] glance {release}: render, db sync and ready in {ready:.1f}s, "
        f"smoke in {time.monotonic() - started - ready:.1f}s"
    )
