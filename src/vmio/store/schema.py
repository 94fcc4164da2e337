"""The store's schema, as the list of migrations that build it; each is applied once and recorded.

A change to the schema adds a migration at the end (never edits one) and a fixture of the schema it migrates
from under ``tests/data/stores/``. New columns whose values Python computes from stored rows are filled in the
migration's transaction by ``Store._apply`` (migration 8: each point's summary, ``summaries.write``; migration 9:
its device, CPU and QEMU figures, ``point_metrics.write``).
"""

from __future__ import annotations

# table sample since migration 13: a run's samples in one row (``vmio.store.packed``); created under this name,
# filled from the per-sample rows by ``Store._apply``, then renamed to sample
PACKED_SAMPLES = """
        CREATE TABLE IF NOT EXISTS sample_packed (
            run_id INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
            n INTEGER NOT NULL,
            t TEXT NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value TEXT NOT NULL
        )"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec_path TEXT,
            spec_text TEXT,
            canonical TEXT,
            created REAL
        );
        CREATE TABLE run (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            point_key TEXT NOT NULL,
            target TEXT NOT NULL, target_kind TEXT NOT NULL, workload TEXT NOT NULL,
            bs INTEGER NOT NULL, offered_iops INTEGER, load_processes INTEGER NOT NULL,
            repetition INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
            started REAL, ended REAL,
            accel TEXT, fio_version TEXT, qemu_version TEXT, host_json TEXT,
            job_file TEXT, qemu_argv TEXT, device TEXT, error TEXT, log TEXT,
            UNIQUE (campaign_id, point_key)
        );
        CREATE TABLE result (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, role TEXT, ddir TEXT,
            iops REAL, bw_bytes REAL, total_ios INTEGER, runtime_ms INTEGER,
            lat_min REAL, lat_mean REAL, lat_max REAL, lat_stddev REAL,
            p50 REAL, p90 REAL, p99 REAL, p999 REAL, p9999 REAL,
            usr_cpu REAL, sys_cpu REAL
        );
        CREATE TABLE histogram (
            result_id INTEGER PRIMARY KEY REFERENCES result(id) ON DELETE CASCADE,
            bins TEXT NOT NULL
        );
        CREATE TABLE sample (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL
        );
        CREATE INDEX sample_run ON sample(run_id, source, metric);
        CREATE TABLE run_metric (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            source TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
            PRIMARY KEY (run_id, source, metric)
        );
        CREATE TABLE oplat (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, seq INTEGER, t_ms INTEGER, lat_ns INTEGER, ddir TEXT
        );
        CREATE INDEX result_run ON result(run_id);
        CREATE INDEX oplat_run ON oplat(run_id);
        """,
    ),
    (
        2,
        "membal live controller runs and decisions",
        """
        CREATE TABLE membal_run (
            id INTEGER PRIMARY KEY,
            started REAL NOT NULL, ended REAL,
            policy TEXT NOT NULL,
            settings TEXT NOT NULL,
            accel TEXT, qemu_version TEXT, qemu_argv TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            error TEXT, summary TEXT
        );
        CREATE TABLE membal_decision (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES membal_run(id) ON DELETE CASCADE,
            t REAL NOT NULL, step INTEGER NOT NULL, vm TEXT NOT NULL,
            inputs TEXT NOT NULL,
            old_target INTEGER NOT NULL, new_target INTEGER NOT NULL, actual INTEGER,
            policy TEXT NOT NULL, reason TEXT NOT NULL
        );
        CREATE INDEX membal_decision_run ON membal_decision(run_id, vm, step);
        """,
    ),
    (
        3,
        "per-second latency histograms (fio histogram logs)",
        """
        CREATE TABLE hist_log (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, t_ms INTEGER NOT NULL, ddir TEXT NOT NULL,
            bins TEXT NOT NULL
        );
        CREATE INDEX hist_log_run ON hist_log(run_id);
        """,
    ),
    (
        4,
        "device capacity measured by vmio calibrate, per host and stable device identity",
        """
        CREATE TABLE device_capacity (
            host TEXT NOT NULL,
            device_id TEXT NOT NULL,
            path TEXT NOT NULL, device TEXT,
            measured REAL NOT NULL,
            result TEXT NOT NULL,
            capacity_read_iops REAL, capacity_write_iops REAL,
            PRIMARY KEY (host, device_id)
        );
        """,
    ),
    (
        5,
        "steady state, preconditioning and the fio job file of each point",
        """
        ALTER TABLE run ADD COLUMN steady_json TEXT;
        ALTER TABLE run ADD COLUMN precondition_json TEXT;
        ALTER TABLE run ADD COLUMN fio_job_json TEXT;
        """,
    ),
    (
        6,
        "seed 004: the campaign seed and the operation offsets drawn from it, the offset of each logged operation",
        """
        ALTER TABLE campaign ADD COLUMN seed INTEGER;
        ALTER TABLE campaign ADD COLUMN offsets_json TEXT;
        ALTER TABLE oplat ADD COLUMN offset INTEGER;
        """,
    ),
    (
        7,
        "sweeps: the queue depth, job count, share of the max point and arrivals of each point; where sweeps stopped",
        """
        ALTER TABLE run ADD COLUMN iodepth INTEGER;
        ALTER TABLE run ADD COLUMN numjobs INTEGER;
        ALTER TABLE run ADD COLUMN offered_pct REAL;
        ALTER TABLE run ADD COLUMN arrivals TEXT;
        ALTER TABLE campaign ADD COLUMN stops_json TEXT;
        """,
    ),
    (
        8,
        "the figures of each point summed and merged over its measured jobs, stored when it is written",
        """
        ALTER TABLE run ADD COLUMN read_jobs INTEGER;
        ALTER TABLE run ADD COLUMN read_iops REAL;
        ALTER TABLE run ADD COLUMN read_bw REAL;
        ALTER TABLE run ADD COLUMN read_ops INTEGER;
        ALTER TABLE run ADD COLUMN read_lat_min REAL;
        ALTER TABLE run ADD COLUMN read_lat_mean REAL;
        ALTER TABLE run ADD COLUMN read_lat_max REAL;
        ALTER TABLE run ADD COLUMN read_p50 REAL;
        ALTER TABLE run ADD COLUMN read_p90 REAL;
        ALTER TABLE run ADD COLUMN read_p99 REAL;
        ALTER TABLE run ADD COLUMN read_p999 REAL;
        ALTER TABLE run ADD COLUMN read_p9999 REAL;
        ALTER TABLE run ADD COLUMN write_jobs INTEGER;
        ALTER TABLE run ADD COLUMN write_iops REAL;
        ALTER TABLE run ADD COLUMN write_bw REAL;
        ALTER TABLE run ADD COLUMN write_ops INTEGER;
        ALTER TABLE run ADD COLUMN write_lat_min REAL;
        ALTER TABLE run ADD COLUMN write_lat_mean REAL;
        ALTER TABLE run ADD COLUMN write_lat_max REAL;
        ALTER TABLE run ADD COLUMN write_p50 REAL;
        ALTER TABLE run ADD COLUMN write_p90 REAL;
        ALTER TABLE run ADD COLUMN write_p99 REAL;
        ALTER TABLE run ADD COLUMN write_p999 REAL;
        ALTER TABLE run ADD COLUMN write_p9999 REAL;
        ALTER TABLE run ADD COLUMN hosts_json TEXT;
        """,
    ),
    (
        9,
        "the device, CPU and QEMU-process figures of each point, stored when it is written",
        """
        ALTER TABLE run ADD COLUMN dev_read_iops REAL;
        ALTER TABLE run ADD COLUMN dev_write_iops REAL;
        ALTER TABLE run ADD COLUMN dev_busy_pct REAL;
        ALTER TABLE run ADD COLUMN dev_queue REAL;
        ALTER TABLE run ADD COLUMN dev_await_ms REAL;
        ALTER TABLE run ADD COLUMN dev_read_bw REAL;
        ALTER TABLE run ADD COLUMN dev_write_bw REAL;
        ALTER TABLE run ADD COLUMN cpu_usr_pct REAL;
        ALTER TABLE run ADD COLUMN cpu_sys_pct REAL;
        ALTER TABLE run ADD COLUMN cpu_iowait_pct REAL;
        ALTER TABLE run ADD COLUMN cpu_steal_pct REAL;
        ALTER TABLE run ADD COLUMN cpu_idle_pct REAL;
        ALTER TABLE run ADD COLUMN cpu_guest_pct REAL;
        ALTER TABLE run ADD COLUMN qemu_cpu_json TEXT;
        """,
    ),
    (
        10,
        "series: the series a campaign belongs to and the campaigns accepted in it; per point, the repetitions "
        "repeat-until-stable took and whether it settled",
        """
        ALTER TABLE campaign ADD COLUMN series TEXT;
        ALTER TABLE campaign ADD COLUMN accepted REAL;
        CREATE INDEX campaign_series ON campaign(series);
        CREATE TABLE point_settle (
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            point TEXT NOT NULL,
            repetitions INTEGER NOT NULL,
            settled INTEGER NOT NULL CHECK (settled IN (0, 1)),
            spread REAL,
            PRIMARY KEY (campaign_id, point)
        );
        """,
    ),
    (
        11,
        "imported files: the run-wide disk_util fio measured, once per imported file, not in the facts of each point",
        """
        CREATE TABLE imported_file (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            ended REAL NOT NULL,
            jobs_json TEXT NOT NULL,
            disk_util_json TEXT
        );
        CREATE INDEX imported_file_campaign ON imported_file(campaign_id);
        """,
    ),
    (
        12,
        "layers: per point, the latency of each layer and direction (as show prints it) and their histograms",
        """
        ALTER TABLE run ADD COLUMN layers_json TEXT;
        CREATE TABLE layer_hist (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            layer TEXT NOT NULL, ddir TEXT NOT NULL, span TEXT NOT NULL,
            sum_ns INTEGER NOT NULL,
            bins TEXT NOT NULL
        );
        CREATE INDEX layer_hist_run ON layer_hist(run_id);
        """,
    ),
    (
        13,
        "samples: one row per run, its samples as four lists (times, sources, metrics, values) in export order",
        f"""{PACKED_SAMPLES};
        DROP TABLE sample;
        ALTER TABLE sample_packed RENAME TO sample;
        """,
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
PCT_COLUMNS = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p999", "p99.99": "p9999"}
