# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Content-addressed names of the immutable config objects, and the rule that prunes them.

A rendered ConfigMap or Secret is created immutable under ``<base>-<8 hex>``, where the hex
is the start of a SHA-256 over its data (reference-spec §2.6): the data keys in sorted
order, each contributing ``<len(key)>:<key>=<len(value)>:<value>\\n`` with the lengths in
UTF-8 bytes. The length prefixes make every entry self-delimiting, so no two different
maps hash the same input. An unchanged render therefore keeps its name (no rollout) and
any change gives a new name, which rolls the pods that mount it.

Old copies are listed by the label ``cobaltcore.c5c3.io/config-base=<base>``; the ones this
Glance owns, other than the current object, are kept newest first up to three and the rest
deleted. ``retained_copies`` is that decision as pure data; the reconcile lists and deletes.

Also here: the db-purge CronJob name (§4.12), whose long form is content-addressed too.
Everything is pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

CONFIG_BASE_LABEL = "cobaltcore.c5c3.io/config-base"
HASH_LENGTH = 8
RETAIN_COPIES = 3

# A CronJob name is at most 52 characters (the Job controller appends an 11-character
# suffix to a 63-character label). ``{name}-db-purge`` fits while name is at most 43.
DB_PURGE_SUFFIX = "-db-purge"
DB_PURGE_NAME_LIMIT = 43
DB_PURGE_NAME_PREFIX = 34


def sha256_hex(text: str) -> str:
    """The lowercase hex SHA-256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(data: Mapping[str, str]) -> str:
    """The SHA-256 hex of ``data`` as §2.6 defines it (sorted keys, byte-length prefixes)."""
    digest = hashlib.sha256()
    for key in sorted(data):
        raw_key = key.encode("utf-8")
        raw_value = data[key].encode("utf-8")
        digest.update(b"%d:%s=%d:%s\n" % (len(raw_key), raw_key, len(raw_value), raw_value))
    return digest.hexdigest()


def content_name(base: str, data: Mapping[str, str]) -> str:
    """``<base>-<first 8 hex of content_hash(data)>``."""
    return f"{base}-{content_hash(data)[:HASH_LENGTH]}"


def config_base(name: str) -> str:
    """The base (and label value) of a Glance's config ConfigMaps."""
    return f"{name}-config"


def backends_base(name: str) -> str:
    """The base (and label value) of a Glance's backends Secrets."""
    return f"{name}-backends"


def db_purge_cronjob_name(name: str) -> str:
    """The db-purge CronJob of Glance ``name`` (§4.12); at most 52 characters."""
    if len(name) <= DB_PURGE_NAME_LIMIT:
        return f"{name}{DB_PURGE_SUFFIX}"
    stem = name[:DB_PURGE_NAME_PREFIX].rstrip("-.")
    return f"{stem}-{sha256_hex(name)[:HASH_LENGTH]}{DB_PURGE_SUFFIX}"


_OLDEST = datetime.min.replace(tzinfo=UTC)


def _created(candidate: Mapping[str, Any]) -> datetime:
    """The creationTimestamp as an aware datetime; an absent one sorts as the oldest."""
    stamp = candidate.get("creationTimestamp")
    if isinstance(stamp, datetime):
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    if not stamp:
        return _OLDEST
    parsed = datetime.fromisoformat(str(stamp))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def retained_copies(
    candidates: Sequence[Mapping[str, Any]],
    current: str,
    keep: int = RETAIN_COPIES,
    *,
    base: str | None = None,
) -> tuple[list[str], list[str]]:
    """Which listed copies to keep and which to delete (§2.6), as ``(kept, deleted)``.

    ``candidates`` are the objects listed by the config-base label, each a mapping with
    ``name``, ``creationTimestamp`` (RFC 3339 text or a datetime) and ``owned`` (a
    controller reference to this Glance). An object is a prune candidate when its name
    starts with ``<base>-``, it is not ``current`` and it is owned; anything else is left
    alone and appears in neither list. ``base`` defaults to ``current`` without its hash
    suffix; with an empty ``current`` (prune every copy) it must be given.

    Candidates sort newest first, ties broken by name descending; the first ``keep`` are
    kept. ``kept`` is ``current`` (when non-empty) followed by those, newest first;
    ``deleted`` is the rest, in the same order.
    """
    if base is None:
        if not current or "-" not in current:
            raise ValueError("retained_copies needs base when current is not <base>-<hash>")
        base = current.rsplit("-", 1)[0]
    prefix = f"{base}-"
    eligible = [
        c
        for c in candidates
        if str(c.get("name", "")).startswith(prefix)
        and c.get("name") != current
        and bool(c.get("owned"))
    ]
    eligible.sort(key=lambda c: (_created(c), str(c["name"])), reverse=True)
    keep = max(keep, 0)
    kept = ([current] if current else []) + [str(c["name"]) for c in eligible[:keep]]
    deleted = [str(c["name"]) for c in eligible[keep:]]
    return kept, deleted
