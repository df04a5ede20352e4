"""Put glance's metadata definitions where the db-sync Job loads them, and count them.

Run by the Glance image's build stage with the environment's Python
(``/var/lib/openstack/bin/python /tmp/metadefs.py``). The glance wheel ships the
metadefs as data files under ``<prefix>/etc/glance/metadefs``, which is
``/var/lib/openstack/etc/glance/metadefs`` in that environment. They are located through
the wheel's RECORD, copied there if a future layout puts them elsewhere, and counted: the
build fails when the wheel ships none or fewer than 30.

A script file rather than a heredoc in the Dockerfile, so the image builds with Docker's
classic builder as well as with BuildKit.
"""

import importlib.metadata
import pathlib
import shutil

TARGET = pathlib.Path("/var/lib/openstack/etc/glance/metadefs")
MINIMUM = 30


def main() -> None:
    dist = importlib.metadata.distribution("glance")
    found = [f for f in dist.files or [] if "etc/glance/metadefs/" in f.as_posix()]
    if not found:
        raise SystemExit("the glance wheel ships no etc/glance/metadefs")
    source = pathlib.Path(dist.locate_file(found[0])).resolve().parent
    if source != TARGET:
        shutil.copytree(source, TARGET, dirs_exist_ok=True)
    count = len(list(TARGET.glob("*.json")))
    if count < MINIMUM:
        raise SystemExit(f"only {count} metadefs in {TARGET}")
    print(f"{count} metadefs in {TARGET}")


if __name__ == "__main__":
    main()
