"""Release upgrades on the real stack: expand, migrate, roll out, contract; no image lost.

For each supported step (2025.2 -> 2026.1, 2026.1 -> 2026.2), on a database of its own with
two S3 stores and the image cache (``e2e/upgrade.py`` says what runs from which render and
what is checked between the phases), one scenario:

* the installed (older) release from its render: db-sync Job, API Deployment; a data set
  through its API (images in either store and in both, properties, tags, a member, a
  public, a deactivated, a deleted and a queued image, one in the cache);
* an aborted upgrade: the rendered ``{name}-db-expand`` and ``{name}-db-migrate`` Jobs run
  the newer release's glance-manage, then the spec goes back to the installed release
  (``UpgradeAborted``): its db-sync Job runs and its API, started again, serves the same
  data set;
* the upgrade again: expand and migrate while the older API serves (a client reads, with
  checksums verified, and creates + uploads images during each phase command and after
  it, without a failure); the RollingUpdate render's Deployment (newer release) comes up
  next to the old API, both serve every image, then the old one stops; the rendered
  ``{name}-db-contract`` Job runs while the new API serves;
* every image's API document, members, database rows (locations included) and S3 objects
  are what they were (less what Glance changes when it shows an image: ``updated_at``,
  and on 2026.2 the credentials in S3 location URLs); the database is at the newer
  release's alembic head; the newer release's db-sync Job changes nothing (schema,
  alembic version, CHECKSUM TABLE of every table).

What glance-manage really does here: 2025.2, 2026.1 and 2026.2 (glance 31.1.0, 32.0.0,
33.0.0) ship the same alembic migrations (heads ``2024_1_expand01``/``2024_1_contract01``),
so each phase command (and each db-sync) prints "Database is up to date. No migrations
needed." and exits 0; the test asserts exactly that, and reads the heads from each
release's own code.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from e2e.upgrade import ALEMBIC_HEADS, STEPS, UP_TO_DATE, Upgrade, run_upgrade

pytestmark = [pytest.mark.e2e, pytest.mark.glance_venv]

HEADS_OF_CODE = """
import json, os
from alembic.script import ScriptDirectory
import glance.db.sqlalchemy.alembic_migrations as migrations
print(json.dumps(sorted(ScriptDirectory(os.path.dirname(migrations.__file__)).get_heads())))
"""


@pytest.mark.parametrize("release", sorted(ALEMBIC_HEADS))
def test_the_alembic_heads_are_the_releases(release_venv, release):
    venv = release_venv(release)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", HEADS_OF_CODE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == sorted(ALEMBIC_HEADS[release].values())


def _upgrade(stack, release_venv, step, name: str) -> Upgrade:
    venvs = {release: release_venv(release) for release in (step.older, step.newer)}
    return Upgrade(stack, step, name, venvs)


@pytest.mark.parametrize("step", STEPS, ids=str)
def test_an_upgrade_aborted_then_run_again_loses_no_image_while_the_api_serves(
    stack, release_venv, step, timed, say
):
    venvs = {release: release_venv(release) for release in (step.older, step.newer)}
    outcome = run_upgrade(Upgrade(stack, step, "up", venvs), say, abort_first=True)
    # glance-manage of the newer release, as it really behaves on these releases: every
    # phase finds the database at its contract head and changes nothing.
    assert ALEMBIC_HEADS[step.newer] == ALEMBIC_HEADS[step.older]
    for phase in ("Expanding (aborted)", "Migrating (aborted)"):
        assert UP_TO_DATE in outcome.outputs[phase], outcome.outputs[phase]
    for phase in ("Expanding", "Migrating", "Contracting", "db-sync (abort)", "db-sync"):
        assert UP_TO_DATE in outcome.outputs[phase], outcome.outputs[phase]
    timings = ", ".join(f"{k} {v:.1f}s" for k, v in outcome.timings.items())
    say(
        f"\n[e2e] upgrade {step}: {outcome.images} images kept, {outcome.created_during} "
        f"created meanwhile; {timings}; traffic in flight during each phase {outcome.traffic}"
    )
