BEGIN TRANSACTION;
CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec_path TEXT,
            spec_text TEXT,
            canonical TEXT,
            created REAL
        , seed INTEGER, offsets_json TEXT, stops_json TEXT, series TEXT, accepted REAL);
INSERT INTO "campaign" VALUES(1,'fixture','fixture.toml','name = "fixture"
','{"fixture": 1}',1700000000.0,4,'[8192, 0]','[{"bound_ms": 5.0, "metric": "p99", "not_run": [], "point": "host/randread/4k/qd=8/50%/1", "sweep": "host/randread/bs=4k/load=0/rep=1", "value_ms": 7.5, "why": "p99 7.5 ms > 5 ms (stop_at)"}]','nightly',NULL);
CREATE TABLE device_capacity (
            host TEXT NOT NULL,
            device_id TEXT NOT NULL,
            path TEXT NOT NULL, device TEXT,
            measured REAL NOT NULL,
            result TEXT NOT NULL,
            capacity_read_iops REAL, capacity_write_iops REAL,
            PRIMARY KEY (host, device_id)
        );
CREATE TABLE hist_log (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, t_ms INTEGER NOT NULL, ddir TEXT NOT NULL,
            bins TEXT NOT NULL
        );
CREATE TABLE histogram (
            result_id INTEGER PRIMARY KEY REFERENCES result(id) ON DELETE CASCADE,
            bins TEXT NOT NULL
        );
INSERT INTO "histogram" VALUES(1,'[[395264, 2600], [501760, 2300], [700416, 90], [888832, 10]]');
CREATE TABLE imported_file (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            ended REAL NOT NULL,
            jobs_json TEXT NOT NULL,
            disk_util_json TEXT
        );
CREATE TABLE layer_hist (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            layer TEXT NOT NULL, ddir TEXT NOT NULL, span TEXT NOT NULL,
            sum_ns INTEGER NOT NULL,
            bins TEXT NOT NULL
        );
CREATE TABLE membal_decision (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES membal_run(id) ON DELETE CASCADE,
            t REAL NOT NULL, step INTEGER NOT NULL, vm TEXT NOT NULL,
            inputs TEXT NOT NULL,
            old_target INTEGER NOT NULL, new_target INTEGER NOT NULL, actual INTEGER,
            policy TEXT NOT NULL, reason TEXT NOT NULL
        );
INSERT INTO "membal_decision" VALUES(1,1,0.5,1,'vm0','{"free": 1}',512,480,480,'static','keep');
CREATE TABLE membal_run (
            id INTEGER PRIMARY KEY,
            started REAL NOT NULL, ended REAL,
            policy TEXT NOT NULL,
            settings TEXT NOT NULL,
            accel TEXT, qemu_version TEXT, qemu_argv TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            error TEXT, summary TEXT
        );
INSERT INTO "membal_run" VALUES(1,1700000000.0,1700000001.0,'static','{"vms": 2}',NULL,NULL,NULL,'done',NULL,'{"steps": 1}');
CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT, applied REAL);
INSERT INTO "migrations" VALUES(1,'initial schema',1700000000.0);
INSERT INTO "migrations" VALUES(2,'membal live controller runs and decisions',1700000000.0);
INSERT INTO "migrations" VALUES(3,'per-second latency histograms (fio histogram logs)',1.79536999851791191098e+09);
INSERT INTO "migrations" VALUES(4,'device capacity measured by vmio calibrate, per host and stable device identity',1.7953700692408564091e+09);
INSERT INTO "migrations" VALUES(5,'steady state, preconditioning and the fio job file of each point',1.79537055932011556632e+09);
INSERT INTO "migrations" VALUES(6,'seed 004: the campaign seed and the operation offsets drawn from it, the offset of each logged operation',1.79537757940689325329e+09);
INSERT INTO "migrations" VALUES(7,'sweeps: the queue depth, job count, share of the max point and arrivals of each point; where sweeps stopped',1795534313.82281);
INSERT INTO "migrations" VALUES(8,'the figures of each point summed and merged over its measured jobs, stored when it is written',1795543200.0);
INSERT INTO "migrations" VALUES(9,'the device, CPU and QEMU-process figures of each point, stored when it is written',1795550400.0);
INSERT INTO "migrations" VALUES(10,'series: the series a campaign belongs to and the campaigns accepted in it; per point, the repetitions repeat-until-stable took and whether it settled',1.79579621869396853454e+09);
INSERT INTO "migrations" VALUES(11,'imported files: the run-wide disk_util fio measured, once per imported file, not in the facts of each point',1.79580508318863749507e+09);
INSERT INTO "migrations" VALUES(12,'layers: per point, the latency of each layer and direction (as show prints it) and their histograms',1.79580666880644798273e+09);
CREATE TABLE oplat (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, seq INTEGER, t_ms INTEGER, lat_ns INTEGER, ddir TEXT
        , offset INTEGER);
INSERT INTO "oplat" VALUES(1,'local','measure.1',0,3,52000,'read',8192);
CREATE TABLE point_settle (
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            point TEXT NOT NULL,
            repetitions INTEGER NOT NULL,
            settled INTEGER NOT NULL CHECK (settled IN (0, 1)),
            spread REAL,
            PRIMARY KEY (campaign_id, point)
        );
INSERT INTO "point_settle" VALUES(1,'host/randread/4k/max',2,0,0.12);
CREATE TABLE result (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, role TEXT, ddir TEXT,
            iops REAL, bw_bytes REAL, total_ios INTEGER, runtime_ms INTEGER,
            lat_min REAL, lat_mean REAL, lat_max REAL, lat_stddev REAL,
            p50 REAL, p90 REAL, p99 REAL, p999 REAL, p9999 REAL,
            usr_cpu REAL, sys_cpu REAL
        );
INSERT INTO "result" VALUES(1,1,'local','measure','measure','read',2500.0,10240000.0,5000,2000,100000.0,400000.0,900000.0,50000.0,395264.0,501760.0,700416.0,888832.0,888832.0,1.5,3.0);
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
            job_file TEXT, qemu_argv TEXT, device TEXT, error TEXT, log TEXT, steady_json TEXT, precondition_json TEXT, fio_job_json TEXT, iodepth INTEGER, numjobs INTEGER, offered_pct REAL, arrivals TEXT, read_jobs INTEGER, read_iops REAL, read_bw REAL, read_ops INTEGER, read_lat_min REAL, read_lat_mean REAL, read_lat_max REAL, read_p50 REAL, read_p90 REAL, read_p99 REAL, read_p999 REAL, read_p9999 REAL, write_jobs INTEGER, write_iops REAL, write_bw REAL, write_ops INTEGER, write_lat_min REAL, write_lat_mean REAL, write_lat_max REAL, write_p50 REAL, write_p90 REAL, write_p99 REAL, write_p999 REAL, write_p9999 REAL, hosts_json TEXT, dev_read_iops REAL, dev_write_iops REAL, dev_busy_pct REAL, dev_queue REAL, dev_await_ms REAL, dev_read_bw REAL, dev_write_bw REAL, cpu_usr_pct REAL, cpu_sys_pct REAL, cpu_iowait_pct REAL, cpu_steal_pct REAL, cpu_idle_pct REAL, cpu_guest_pct REAL, qemu_cpu_json TEXT, layers_json TEXT,
            UNIQUE (campaign_id, point_key)
        );
INSERT INTO "run" VALUES(1,1,'host/randread/4k/max/1','host','host','randread',4096,NULL,0,1,'done',1700000000.0,1700000002.0,NULL,NULL,NULL,'{"kernel": "6.1.0"}','[measure]
rw=randread
',NULL,'loop0',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,1,2500.0,10240000.0,5000,100000.0,400000.0,900000.0,395264.0,501760.0,700416.0,888832.0,888832.0,0,0.0,0.0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'["local"]',NULL,NULL,NULL,NULL,NULL,NULL,NULL,13.0,NULL,NULL,NULL,NULL,NULL,'null',NULL);
INSERT INTO "run" VALUES(2,1,'host/randread/4k/max/2','host','host','randread',4096,NULL,0,2,'failed',1700000003.0,1700000004.0,NULL,NULL,NULL,'{}',NULL,NULL,NULL,'fio exited with code 1',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0.0,0.0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0.0,0.0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'null',NULL);
INSERT INTO "run" VALUES(3,1,'host/randread/4k/qd=8/50%/1','host','host','randread',4096,1250,0,1,'failed',1700000005.0,1700000006.0,NULL,NULL,NULL,'{}',NULL,NULL,NULL,'fio exited with code 1',NULL,NULL,NULL,NULL,8,1,50.0,'poisson',0,0.0,0.0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0.0,0.0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'[]',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,'null',NULL);
CREATE TABLE run_metric (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            source TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
            PRIMARY KEY (run_id, source, metric)
        );
INSERT INTO "run_metric" VALUES(1,'cpu','usr_pct',13.0);
INSERT INTO "run_metric" VALUES(1,'device','busy_pct',42.0);
CREATE TABLE sample (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL
        );
INSERT INTO "sample" VALUES(1,0.5,'cpu','usr_pct',12.5);
INSERT INTO "sample" VALUES(1,1.5,'cpu','usr_pct',13.5);
INSERT INTO "sample" VALUES(1,0.5,'cpu','usr_pct',12.0);
INSERT INTO "sample" VALUES(1,1.0,'ab','m',0.0);
INSERT INTO "sample" VALUES(1,1.0,'é☃','=SUM(A1)',1.0e-300);
INSERT INTO "sample" VALUES(1,1.0,'tab	src','+x',1.0e+308);
INSERT INTO "sample" VALUES(1,2.0,'q"uote','back\slash',4.6116860184273879039e+18);
INSERT INTO "sample" VALUES(1,2.0,'new
line','cr' || char(13),NULL);
INSERT INTO "sample" VALUES(1,2.0,'','',3.00000000000000044408e-01);
INSERT INTO "sample" VALUES(1,-1.25,'[',']',-1.5e-07);
INSERT INTO "sample" VALUES(1,2.0,char(0) || 'nul','',1.0e+16);
INSERT INTO "sample" VALUES(1,0.0,'a,b','["x"]',123456789.123);
INSERT INTO "sample" VALUES(1,3.0,'null','-m',-1.79769313486231562234e+308);
INSERT INTO "sample" VALUES(1,1.0e+16,'@at','dev:vda',-2.5);
INSERT INTO "sample" VALUES(2,4.0,'dev:vda','read_iops',3.0);
INSERT INTO "sample" VALUES(2,4.0,'dev:vda','read_iops',1.0);
INSERT INTO "sample" VALUES(2,4.0,'dev:vda','read_iops',2.0);
INSERT INTO "sample" VALUES(2,4.0,'cpu','sys_pct',4.94065645841247e-324);
INSERT INTO "sample" VALUES(3,0.25,'qemu:vmio-0','vcpu_pct',NULL);
CREATE INDEX sample_run ON sample(run_id, source, metric);
CREATE INDEX result_run ON result(run_id);
CREATE INDEX oplat_run ON oplat(run_id);
CREATE INDEX membal_decision_run ON membal_decision(run_id, vm, step);
CREATE INDEX hist_log_run ON hist_log(run_id);
CREATE INDEX campaign_series ON campaign(series);
CREATE INDEX imported_file_campaign ON imported_file(campaign_id);
CREATE INDEX layer_hist_run ON layer_hist(run_id);
COMMIT;
