"""Scenarios that need a variant of the render: two stores, web-download filtering, db-purge.

Each variant is the stack's own input changed by the test (``Stack.variant``), rendered
through the playbook and launched (``Stack.launch_from``) or run (``Stack.run_container``)
against the stack's MariaDB, Keystone and S3 server, like the stack's own Glance.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from e2e.glance_http import (
    FileServer,
    create_image,
    delete_image,
    get_image,
    headers,
    s3_size,
    upload,
    wait_active,
    web_download,
)
from e2e.stack import (
    Rendered,
    Stack,
    free_port,
    http,
)

pytestmark = pytest.mark.e2e

SECOND_STORE = "s3-second"
SECOND_BUCKET = "glance-e2e-second"


# ---------------------------------------------------------------------------------------
# helpers


def default_flags(info: dict[str, Any]) -> dict[str, bool]:
    """``GET /v2/info/stores``: store id -> is the default (glance says ``"default": "true"``)."""
    return {s["id"]: s.get("default") == "true" for s in info["stores"]}


def named(rendered: Rendered, kind: str, prefix: str) -> str:
    names = [
        o["metadata"]["name"]
        for o in rendered.objects
        if o["kind"] == kind and o["metadata"]["name"].startswith(prefix)
    ]
    assert len(names) == 1, names
    return names[0]


def sql(stack: Stack, statement: str) -> list[list[str]]:
    """A statement on the glance database, as the stack's DB user; the rows as text."""
    return stack.sql(statement)


# ---------------------------------------------------------------------------------------
# two stores, and switching the default


def _two_backends(default: str):
    def edit(docs: list[dict[str, Any]]) -> None:
        first = next(d for d in docs if d["kind"] == "GlanceBackend")
        second = copy.deepcopy(first)
        second["metadata"]["name"] = SECOND_STORE
        second["spec"]["s3"]["bucket"] = SECOND_BUCKET
        first["spec"]["isDefault"] = first["metadata"]["name"] == default
        second["spec"]["isDefault"] = default == SECOND_STORE
        docs.insert(docs.index(first) + 1, second)

    return edit


def test_two_s3_stores_and_switching_the_default(stack):
    assert http("PUT", f"{stack.s3_url}/{SECOND_BUCKET}", body=b"").status == 200
    first_store = next(
        o["metadata"]["name"] for o in stack.render_input() if o["kind"] == "GlanceBackend"
    )
    token = stack.demo_token()
    rendered, remap = stack.variant("two-stores", _two_backends(first_store))
    port = free_port()
    proc = stack.launch_from("glance-api-two-stores", rendered, remap, port)
    url = f"http://127.0.0.1:{port}"
    images: list[str] = []
    try:
        resp = http("GET", f"{url}/v2/info/stores", headers=headers(token))
        assert resp.status == 200, resp.body
        stores = default_flags(resp.json())
        assert stores == {first_store: True, SECOND_STORE: False}

        data = random.Random(1).randbytes(4096)
        images.append(create_image(url, token, "e2e-second-store"))
        upload(url, token, images[0], data, store=SECOND_STORE)
        assert get_image(url, token, images[0])["stores"] == SECOND_STORE
        assert s3_size(stack, SECOND_BUCKET, images[0]) == len(data)
        assert s3_size(stack, stack.bucket, images[0]) is None
    finally:
        proc.stop()

    flipped, flipped_remap = stack.variant("two-stores-flipped", _two_backends(SECOND_STORE))
    assert named(flipped, "Secret", "glance-backends-") == named(
        rendered, "Secret", "glance-backends-"
    )
    assert named(flipped, "ConfigMap", "glance-config-") != named(
        rendered, "ConfigMap", "glance-config-"
    )
    port = free_port()
    proc = stack.launch_from("glance-api-two-stores-flipped", flipped, flipped_remap, port)
    url = f"http://127.0.0.1:{port}"
    try:
        resp = http("GET", f"{url}/v2/info/stores", headers=headers(token))
        stores = default_flags(resp.json())
        assert stores == {first_store: False, SECOND_STORE: True}

        data = random.Random(2).randbytes(4096)
        images.append(create_image(url, token, "e2e-new-default"))
        upload(url, token, images[1], data)
        assert get_image(url, token, images[1])["stores"] == SECOND_STORE
        assert s3_size(stack, SECOND_BUCKET, images[1]) == len(data)
        assert s3_size(stack, stack.bucket, images[1]) is None
    finally:
        for image_id in images:
            delete_image(url, token, image_id)
        proc.stop()


# ---------------------------------------------------------------------------------------
# web-download import filtering


def test_web_download_is_filtered_by_default_and_widened_by_import_filtering(stack):
    data = random.Random(3).randbytes(64 * 1024)
    server = FileServer(data)
    token = stack.demo_token()
    images: list[str] = []
    proc = None
    try:
        images.append(create_image(stack.glance_url, token, "e2e-web-download-denied"))
        for uri in (f"http://127.0.0.1:{server.port}/x.img", "http://169.254.169.254/latest"):
            resp = web_download(stack.glance_url, token, images[0], uri)
            assert resp.status == 400, (uri, resp.status, resp.body)
        assert get_image(stack.glance_url, token, images[0])["status"] == "queued"

        def widen(docs: list[dict[str, Any]]) -> None:
            glance = next(d for d in docs if d["kind"] == "Glance")
            glance["spec"]["importFiltering"] = {
                "allowedSchemes": ["http"],
                "allowedPorts": [server.port],
                "allowedHosts": ["127.0.0.1"],
            }

        rendered, remap = stack.variant("web-download", widen)
        port = free_port()
        proc = stack.launch_from("glance-api-web-download", rendered, remap, port)
        url = f"http://127.0.0.1:{port}"
        images.append(create_image(url, token, "e2e-web-download"))
        resp = web_download(url, token, images[1], f"http://127.0.0.1:{server.port}/x.img")
        assert resp.status == 202, resp.body
        wait_active(url, token, images[1])
        got = http("GET", f"{url}/v2/images/{images[1]}/file", headers=headers(token))
        assert got.status == 200
        assert got.body == data
    finally:
        server.stop()
        for image_id in images:
            delete_image(stack.glance_url, token, image_id)
        if proc is not None:
            proc.stop()


# ---------------------------------------------------------------------------------------
# db-purge


def _backdate(stack: Stack, image_id: str) -> None:
    for table, column in (
        ("images", "id"),
        ("image_properties", "image_id"),
        ("image_tags", "image_id"),
    ):
        sql(
            stack,
            f"UPDATE {table} SET deleted_at = NOW() - INTERVAL 400 DAY "
            f"WHERE {column} = '{image_id}' AND deleted = 1",
        )


def _rows(stack: Stack, table: str, column: str, image_id: str) -> int:
    return int(sql(stack, f"SELECT COUNT(*) FROM {table} WHERE {column} = '{image_id}'")[0][0])


def _purge_command(rendered: Rendered) -> list[str]:
    cronjob = rendered.find("CronJob")
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return container["command"]


def test_db_purge_hard_deletes_backdated_soft_deleted_rows(stack):
    token = stack.demo_token()
    url = stack.glance_url
    image_id = create_image(url, token, "e2e-purge")
    assert (
        http("PUT", f"{url}/v2/images/{image_id}/tags/purge-me", headers=headers(token)).status
        == 204
    )
    patch = [{"op": "add", "path": "/e2e_purge", "value": "yes"}]
    resp = http(
        "PATCH",
        f"{url}/v2/images/{image_id}",
        json.dumps(patch).encode(),
        headers(token, **{"Content-Type": "application/openstack-images-v2.1-json-patch"}),
    )
    assert resp.status == 200, resp.body
    assert http("DELETE", f"{url}/v2/images/{image_id}", headers=headers(token)).status == 204
    _backdate(stack, image_id)
    assert _rows(stack, "images", "id", image_id) == 1
    assert _rows(stack, "image_properties", "image_id", image_id) >= 1
    assert _rows(stack, "image_tags", "image_id", image_id) >= 1
    assert "purge_images_table" not in " ".join(_purge_command(stack.rendered))

    # The default render: db purge only; the images row stays.
    stack.run_container("db-purge", stack.rendered, stack.remap, "CronJob", "db-purge")
    assert _rows(stack, "image_properties", "image_id", image_id) == 0
    assert _rows(stack, "image_tags", "image_id", image_id) == 0
    assert _rows(stack, "images", "id", image_id) == 1

    # purgeImagesTable: the images row goes too.
    def purge_images(docs: list[dict[str, Any]]) -> None:
        glance = next(d for d in docs if d["kind"] == "Glance")
        glance["spec"]["dbPurge"] = {"purgeImagesTable": True}

    rendered, remap = stack.variant("db-purge-images", purge_images)
    assert "db purge_images_table" in " ".join(_purge_command(rendered))
    stack.run_container("db-purge-images", rendered, remap, "CronJob", "db-purge")
    assert _rows(stack, "images", "id", image_id) == 0
