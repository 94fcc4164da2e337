BEGIN TRANSACTION;
CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec_path TEXT,
            spec_text TEXT,
            canonical TEXT,
            created REAL
        );
INSERT INTO "campaign" VALUES(1,'old','old.toml','[campaign]
name=''old''
','{}',1.79536912026184320451e+09);
CREATE TABLE histogram (
            result_id INTEGER PRIMARY KEY REFERENCES result(id) ON DELETE CASCADE,
            bins TEXT NOT NULL
        );
INSERT INTO "histogram" VALUES(1,'[[200000, 1000], [500000, 1000]]');
CREATE TABLE membal_decision (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES membal_run(id) ON DELETE CASCADE,
            t REAL NOT NULL, step INTEGER NOT NULL, vm TEXT NOT NULL,
            inputs TEXT NOT NULL,
            old_target INTEGER NOT NULL, new_target INTEGER NOT NULL, actual INTEGER,
            policy TEXT NOT NULL, reason TEXT NOT NULL
        );
CREATE TABLE membal_run (
            id INTEGER PRIMARY KEY,
            started REAL NOT NULL, ended REAL,
            policy TEXT NOT NULL,
            settings TEXT NOT NULL,
            accel TEXT, qemu_version TEXT, qemu_argv TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            error TEXT, summary TEXT
        );
CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT, applied REAL);
INSERT INTO "migrations" VALUES(1,'initial schema',1.79536912026138830182e+09);
INSERT INTO "migrations" VALUES(2,'membal live controller runs and decisions',1.79536912026173424723e+09);
CREATE TABLE oplat (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, seq INTEGER, t_ms INTEGER, lat_ns INTEGER, ddir TEXT
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
INSERT INTO "result" VALUES(1,1,'local','measure','measure','read',1000.0,4096000.0,2000,2000,100000.0,200000.0,900000.0,10000.0,200000.0,300000.0,500000.0,800000.0,900000.0,1.0,2.0);
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
INSERT INTO "run" VALUES(1,1,'t/w/bs=4k/offered=max/load=0/rep=1','t','host','w',4096,NULL,0,1,'done',1.0,3.0,NULL,NULL,NULL,'{}',NULL,NULL,NULL,NULL,NULL);
CREATE TABLE run_metric (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            source TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
            PRIMARY KEY (run_id, source, metric)
        );
CREATE TABLE sample (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL
        );
CREATE INDEX sample_run ON sample(run_id, source, metric);
CREATE INDEX result_run ON result(run_id);
CREATE INDEX oplat_run ON oplat(run_id);
CREATE INDEX membal_decision_run ON membal_decision(run_id, vm, step);
COMMIT;
