# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Which objects a Glance owns: the keys of ``desired_objects``, and their groups.

One key per owned object; the data of each is decided in the module of its role's objects
(``config_secrets``, ``mariadb``, ``api``, ``exposure``, ``database``) and returned by key
from ``owned.desired_objects``.
"""

from __future__ import annotations

# --- keys of desired_objects -------------------------------------------------------------
CONFIG_MAP = "config_map"
BACKENDS_SECRET = "backends_secret"
DB_CONNECTION_SECRET = "db_connection_secret"
DEPLOYMENT = "deployment"
SERVICE = "service"
PDB = "pdb"
HPA = "hpa"
NETWORK_POLICY = "network_policy"
HTTP_ROUTE = "http_route"
DB_SYNC_JOB = "db_sync_job"
DB_EXPAND_JOB = "db_expand_job"
DB_MIGRATE_JOB = "db_migrate_job"
DB_CONTRACT_JOB = "db_contract_job"
DB_PURGE_CRONJOB = "db_purge_cronjob"
MARIADB_DATABASE = "mariadb_database"
MARIADB_USER = "mariadb_user"
MARIADB_GRANT = "mariadb_grant"
OBJECT_KEYS = (
    CONFIG_MAP,
    BACKENDS_SECRET,
    DB_CONNECTION_SECRET,
    MARIADB_DATABASE,
    MARIADB_USER,
    MARIADB_GRANT,
    DEPLOYMENT,
    SERVICE,
    PDB,
    HPA,
    NETWORK_POLICY,
    HTTP_ROUTE,
    DB_SYNC_JOB,
    DB_EXPAND_JOB,
    DB_MIGRATE_JOB,
    DB_CONTRACT_JOB,
    DB_PURGE_CRONJOB,
)
# The three upgrade phase Jobs (reference-spec §4.13), in the order an upgrade runs them.
DB_PHASE_JOBS = (DB_EXPAND_JOB, DB_MIGRATE_JOB, DB_CONTRACT_JOB)
# Every Job that runs glance-manage once against the database, from one template.
DB_JOBS = (DB_SYNC_JOB, *DB_PHASE_JOBS)
# None for these means "spec block unset: delete the live object".
OPTIONAL_OBJECTS = frozenset({HPA, NETWORK_POLICY, HTTP_ROUTE})
# The mariadb-operator resources of managed mode (reference-spec §4.10), all named {name}:
# the Database always, the User and Grant with Static credentials only.
MARIADB_OBJECTS = (MARIADB_DATABASE, MARIADB_USER, MARIADB_GRANT)
