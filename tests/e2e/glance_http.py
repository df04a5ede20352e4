"""Small Glance API calls the scenarios share, a loopback file server, and S3 look-ups.

Plain ``urllib`` against a Glance URL with a Keystone token (``stack.http``); the S3
look-ups run boto3 in the e2e environment (``Stack.e2e_python``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from e2e.stack import S3_ACCESS_KEY, S3_SECRET_KEY, Stack, http

IMPORT_TIMEOUT = 120


def headers(token: str, **extra: str) -> dict[str, str]:
    return {"X-Auth-Token": token, **extra}


def create_image(
    url: str, token: str, name: str, disk_format: str = "raw", **properties: str
) -> str:
    body = {"name": name, "disk_format": disk_format, "container_format": "bare", **properties}
    resp = http("POST", f"{url}/v2/images", body, headers(token))
    assert resp.status == 201, resp.body
    return resp.json()["id"]


def upload(url: str, token: str, image_id: str, data: bytes, store: str | None = None) -> None:
    hdrs = headers(token, **{"Content-Type": "application/octet-stream"})
    if store:
        hdrs["X-Image-Meta-Store"] = store
    resp = http("PUT", f"{url}/v2/images/{image_id}/file", data, hdrs, timeout=120)
    assert resp.status == 204, resp.body


def download(url: str, token: str, image_id: str) -> bytes:
    resp = http("GET", f"{url}/v2/images/{image_id}/file", headers=headers(token), timeout=120)
    assert resp.status == 200, resp.body
    return resp.body


def get_image(url: str, token: str, image_id: str) -> dict[str, Any]:
    resp = http("GET", f"{url}/v2/images/{image_id}", headers=headers(token))
    assert resp.status == 200, resp.body
    return resp.json()


def delete_image(url: str, token: str, image_id: str) -> None:
    http("DELETE", f"{url}/v2/images/{image_id}", headers=headers(token))


def web_download(url: str, token: str, image_id: str, uri: str):
    """``POST /v2/images/{id}/import`` with the web-download method; the response."""
    body = {"method": {"name": "web-download", "uri": uri}}
    return http("POST", f"{url}/v2/images/{image_id}/import", body, headers(token))


def wait_active(url: str, token: str, image_id: str, timeout: float = IMPORT_TIMEOUT) -> dict:
    """The image once ``active``; fails as soon as glance records a failed import."""
    deadline = time.monotonic() + timeout
    while True:
        image = get_image(url, token, image_id)
        if image["status"] == "active":
            return image
        assert image["status"] not in ("killed", "deleted"), image
        assert not image.get("os_glance_failed_import"), f"the import failed: {image}"
        assert time.monotonic() < deadline, f"still {image['status']} after {timeout}s: {image}"
        time.sleep(0.5)


class FileServer:
    """A tiny HTTP server on 127.0.0.1: ``files[path]``, or ``default`` at any other path."""

    def __init__(self, default: bytes = b"", files: Mapping[str, bytes] | None = None) -> None:
        served = dict(files or {})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                payload = served.get(self.path, default)
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


S3_HEAD = """
import json, sys, boto3, botocore
req = json.loads(sys.stdin.read())
s3 = boto3.client("s3", endpoint_url=req["url"], aws_access_key_id=req["key"],
                  aws_secret_access_key=req["secret"], region_name="us-east-1")
try:
    found = s3.head_object(Bucket=req["bucket"], Key=req["image"])["ContentLength"]
except botocore.exceptions.ClientError:
    found = None
print(json.dumps(found))
"""

S3_DIGEST = """
import hashlib, json, sys, boto3
req = json.loads(sys.stdin.read())
s3 = boto3.client("s3", endpoint_url=req["url"], aws_access_key_id=req["key"],
                  aws_secret_access_key=req["secret"], region_name="us-east-1")
data = s3.get_object(Bucket=req["bucket"], Key=req["image"])["Body"].read()
print(json.dumps({"size": len(data), "head": data[:16].hex(),
                  "sha256": hashlib.sha256(data).hexdigest()}))
"""


def _s3_request(stack: Stack, bucket: str, image_id: str) -> dict[str, str]:
    return {
        "url": stack.s3_url,
        "key": S3_ACCESS_KEY,
        "secret": S3_SECRET_KEY,
        "bucket": bucket,
        "image": image_id,
    }


def s3_size(stack: Stack, bucket: str, image_id: str) -> int | None:
    """The size of the image's object in ``bucket`` (boto3), or None."""
    return stack.e2e_python(S3_HEAD, _s3_request(stack, bucket, image_id))


def s3_digest(stack: Stack, bucket: str, image_id: str) -> dict[str, Any]:
    """The image's object in ``bucket``: its size, first 16 bytes (hex) and SHA-256."""
    return stack.e2e_python(S3_DIGEST, _s3_request(stack, bucket, image_id))
