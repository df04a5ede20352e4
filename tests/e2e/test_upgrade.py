"""Release upgrades on the real stack: expand, migrate, roll out, contract; no image lost.

For each supported step (2025.2 -> 2026.1, 2026.1 -> 2026.2), on a database of its own with
two S3 stores and the image cache (``e2e/upgrade.py`` says what runs from which render and
what is checked between the phases):

* the installed (older) release from its render: db-sync Job, API Deployment; a data set
  through its API (images in either store and in both, properties, tags, a member, a
  public, a deactivated, a deleted and a queued image, one in the cache);
* the rendered ``{name}-db-expand`` and ``{name}-db-migrate`` Jobs run the newer release's
  glance-manage while the older API serves: a client reads (checksums verified) and
  creates + uploads images during each phase command and after it, without a failure;
* the RollingUpdate render's Deployment (newer release) comes up next to the old API,
  which then stops; the rendered ``{name}-db-contract`` Job runs while the new API serves;
* every image's API document, members, database rows (locations included) and S3 objects
  are what they were; the database is at the newer release's alembic heads; the newer
  release's db-sync Job changes nothing (schema, alembic version, CHECKSUM TABLE).

And the aborted upgrade: after expand + migrate by the newer release, the installed
release's db-sync Job runs (spec back at the installed release: ``UpgradeAborted``) and its
API, started again, serves the same data set.

What glance-manage really does here: 2025.2, 2026.1 and 2026.2 (glance 31.1.0, 32.0.0,
33.0.0) ship the same alembic migrations (heads ``2024_1_expand01``/``2024_1_contract01``),
so each phase command prints "Database is up to date. No migrations needed." and exits 0;
the test asserts exactly that, from each release's own code.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from e2e.upgrade import (
    ALEMBIC_HEADS,
    STEPS,
    UP_TO_DATE,
    Upgrade,
    run_aborted_upgrade,
    run_upgrade,
)

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
def test_an_upgrade_keeps_every_image_while_the_old_api_serves(
    stack, release_venv, step, timed, say
):
    upgrade = _upgrade(stack, release_venv, step, "up")
    outcome = run_upgrade(upgrade, say)
    # glance-manage of the newer release, as it really behaves on these releases.
    assert ALEMBIC_HEADS[step.newer] == ALEMBIC_HEADS[step.older]
    for phase in ("Expanding", "Migrating", "Contracting"):
        assert UP_TO_DATE in outcome.outputs[phase], outcome.outputs[phase]
    assert "Database is up to date" in outcome.outputs["db-sync"], outcome.outputs["db-sync"]
    timings = ", ".join(f"{k} {v:.1f}s" for k, v in outcome.timings.items())
    say(
        f"\n[e2e] upgrade {step}: {outcome.images} images kept, {outcome.created_during} "
        f"created during the phases; {timings}; traffic per phase {outcome.traffic}"
    )


@pytest.mark.parametrize("step", STEPS, ids=str)
def test_an_aborted_upgrade_leaves_a_database_the_installed_release_serves(
    stack, release_venv, step, timed, say
):
    upgrade = _upgrade(stack, release_venv, step, "abort")
    outcome = run_aborted_upgrade(upgrade, say)
    for phase in ("Expanding", "Migrating"):
        assert UP_TO_DATE in outcome.outputs[phase], outcome.outputs[phase]
    say(f"\n[e2e] aborted upgrade {step}: {outcome.images} images served by {step.older}")
