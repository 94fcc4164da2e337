PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT, applied REAL);
INSERT INTO migrations VALUES(1,'initial schema',1795369872.5270621776);
INSERT INTO migrations VALUES(2,'membal live controller runs and decisions',1795369872.5272595882);
INSERT INTO migrations VALUES(3,'per-second latency histograms (fio histogram logs)',1795369872.5273478031);
CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec_path TEXT,
            spec_text TEXT,
            canonical TEXT,
            created REAL
        );
INSERT INTO campaign VALUES(1,'v3','v3.toml',replace('[campaign]\nname = "v3"\n[[target]]\nname = "file"\npath = "/tmp/sst/v3target"\nsize = "8M"\n[[workload]]\nname = "rr"\nrw = "randread"\nruntime = "1s"\n','\n',char(10)),'{"targets": [{"kind": "host", "name": "file", "path": "/tmp/sst/v3target", "size": 8388608}], "workloads": [{"bs": [4096], "direct": true, "iodepth": 1, "ioengine": "libaio", "load_processes": [0], "name": "rr", "numjobs": 1, "offered_iops": [null], "ops": 0, "ramp": 0.0, "runtime": 1.0, "rw": "randread", "rwmixread": 50}]}',1795369872.5275425911);
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
INSERT INTO run VALUES(1,1,'file/rr/bs=4096/offered=max/load=0/rep=1','file','host','rr',4096,NULL,0,1,'done',1795369872.5991022586,1795369874.2027006148,NULL,'fio-3.33',NULL,'{"cores": 2, "cpu_model": "Intel(R) Xeon(R) Processor", "fio_version": "fio-3.33", "hostname": "vm", "kernel": "6.18.44-fc-v669", "loadavg": [7.66552734375, 7.0625, 4.29150390625], "memory_bytes": 25276502016, "python": "3.11.7", "vmio_version": "0.1.0"}',replace('[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4096\niodepth=1\nlat_percentiles=1\npercentile_list=50:90:99:99.9:99.99\nrandrepeat=0\nfilename=/tmp/sst/v3target\nsize=8388608\n\n[measure]\nnumjobs=1\ntime_based=1\nruntime=1000ms\nwrite_hist_log=/tmp/vmio-run-62_di53i/file_rr_bs=4096_offered=max_load=0_rep=1/hist-0\nlog_hist_msec=1000\nper_job_logs=1\n\n','\n',char(10)),NULL,'vda',NULL,NULL);
CREATE TABLE result (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, role TEXT, ddir TEXT,
            iops REAL, bw_bytes REAL, total_ios INTEGER, runtime_ms INTEGER,
            lat_min REAL, lat_mean REAL, lat_max REAL, lat_stddev REAL,
            p50 REAL, p90 REAL, p99 REAL, p999 REAL, p9999 REAL,
            usr_cpu REAL, sys_cpu REAL
        );
INSERT INTO result VALUES(1,1,'local','measure','measure','read',9650.7936509999999539,39529650.0,9728,1008,32379.0,103007.6371300000028,8797336.0,397174.73783599998569,60672.0,79360.0,407552.0,6651904.0,8847360.0,1.5888780000000000125,25.719960000000000378);
CREATE TABLE histogram (
            result_id INTEGER PRIMARY KEY REFERENCES result(id) ON DELETE CASCADE,
            bins TEXT NOT NULL
        );
INSERT INTO histogram VALUES(1,'[[32384, 1], [32640, 2], [33024, 2], [33536, 11], [34048, 13], [34560, 9], [35072, 8], [35584, 5], [36096, 9], [36608, 9], [37120, 4], [37632, 8], [38144, 7], [38656, 8], [39168, 3], [39680, 3], [40192, 7], [40704, 10], [41216, 5], [41728, 5], [42240, 6], [42752, 4], [43264, 2], [43776, 5], [44288, 3], [44800, 8], [45312, 28], [45824, 50], [46336, 68], [46848, 106], [47360, 154], [47872, 225], [48384, 290], [48896, 345], [49408, 375], [49920, 365], [50432, 342], [50944, 345], [51456, 312], [51968, 258], [52480, 219], [52992, 197], [53504, 159], [54016, 151], [54528, 102], [55040, 107], [55552, 83], [56064, 68], [56576, 67], [57088, 51], [57600, 45], [58112, 42], [58624, 44], [59136, 33], [59648, 34], [60160, 34], [60672, 29], [61184, 18], [61696, 25], [62208, 21], [62720, 12], [63232, 24], [63744, 20], [64256, 25], [64768, 48], [65280, 59], [66048, 141], [67072, 226], [68096, 325], [69120, 469], [70144, 472], [71168, 480], [72192, 425], [73216, 302], [74240, 233], [75264, 172], [76288, 152], [77312, 115], [78336, 93], [79360, 72], [80384, 40], [81408, 32], [82432, 43], [83456, 36], [84480, 28], [85504, 16], [86528, 24], [87552, 14], [88576, 14], [89600, 19], [90624, 9], [91648, 11], [92672, 13], [93696, 6], [94720, 9], [95744, 4], [96768, 5], [97792, 9], [98816, 10], [99840, 10], [100864, 6], [101888, 7], [102912, 10], [103936, 5], [104960, 6], [105984, 7], [107008, 7], [108032, 7], [109056, 8], [110080, 5], [111104, 4], [112128, 4], [113152, 7], [114176, 4], [115200, 6], [116224, 3], [117248, 5], [118272, 1], [119296, 2], [120320, 4], [121344, 6], [122368, 3], [123392, 3], [124416, 4], [125440, 2], [126464, 4], [127488, 1], [128512, 4], [129536, 3], [130560, 3], [132096, 4], [134144, 1], [136192, 1], [138240, 2], [140288, 3], [142336, 2], [144384, 2], [146432, 2], [150528, 2], [152576, 1], [156672, 2], [158720, 1], [162816, 4], [164864, 1], [168960, 2], [171008, 1], [177152, 1], [179200, 1], [187392, 1], [191488, 1], [203776, 1], [205824, 1], [209920, 1], [214016, 2], [222208, 1], [224256, 1], [226304, 1], [232448, 3], [234496, 3], [236544, 2], [238592, 10], [240640, 7], [242688, 7], [244736, 10], [246784, 4], [248832, 5], [250880, 5], [252928, 1], [254976, 4], [257024, 3], [259072, 3], [261120, 6], [264192, 26], [268288, 17], [272384, 6], [276480, 1], [280576, 20], [284672, 18], [288768, 15], [292864, 7], [296960, 7], [301056, 8], [305152, 16], [309248, 7], [313344, 4], [317440, 2], [321536, 6], [325632, 5], [329728, 10], [333824, 4], [337920, 1], [342016, 3], [346112, 4], [350208, 2], [354304, 1], [358400, 2], [362496, 2], [366592, 2], [370688, 2], [378880, 2], [387072, 2], [395264, 1], [399360, 1], [407552, 4], [411648, 1], [415744, 2], [497664, 1], [536576, 1], [626688, 1], [634880, 1], [757760, 1], [815104, 1], [897024, 1], [921600, 1], [1056768, 1], [1171456, 1], [1204224, 1], [1400832, 1], [1499136, 1], [1548288, 2], [1564672, 1], [1859584, 1], [1941504, 1], [2113536, 1], [2244608, 1], [2342912, 2], [2473984, 4], [2572288, 1], [2637824, 2], [2670592, 1], [2736128, 1], [2768896, 1], [2801664, 3], [2867200, 1], [2899968, 1], [2932736, 1], [3063808, 2], [3162112, 1], [3260416, 2], [3325952, 1], [3358720, 1], [3391488, 1], [3457024, 2], [3489792, 2], [3588096, 1], [3686400, 1], [3751936, 1], [3850240, 1], [3883008, 2], [3915776, 2], [3981312, 6], [4014080, 4], [4046848, 3], [4177920, 1], [4489216, 1], [4620288, 1], [4751360, 1], [5013504, 2], [5079040, 1], [5210112, 1], [5275648, 1], [5537792, 1], [5668864, 1], [6324224, 2], [6651904, 1], [6782976, 2], [7503872, 1], [7700480, 2], [8224768, 1], [8355840, 1], [8585216, 1], [8847360, 1]]');
CREATE TABLE sample (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL
        );
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','read_iops',5227.9411838929318039);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','write_iops',6.9959067649112069986);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','read_bw',21413647.089225448668);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','write_bw',28655.234109076303866);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','busy_pct',30.382223664757244563);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','queue',0.34479826198490948208);
INSERT INTO sample VALUES(1,1.0005850899999586545,'dev:vda','await_ms',0.066055746468117598757);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','usr_pct',82.089552238805964636);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','sys_pct',17.910447761194028259);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','iowait_pct',0.0);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','steal_pct',0.0);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','idle_pct',0.0);
INSERT INTO sample VALUES(1,1.0005850899999586545,'cpu','guest_pct',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','read_iops',8728.9611896796268407);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','write_iops',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','read_bw',35753825.032927751541);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','write_bw',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','busy_pct',48.138367245731537025);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','queue',0.51438174677898618192);
INSERT INTO sample VALUES(1,1.515766667999969286,'dev:vda','await_ms',0.058928174338447852909);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','usr_pct',78.431372549019613416);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','sys_pct',21.568627450980393689);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','iowait_pct',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','steal_pct',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','idle_pct',0.0);
INSERT INTO sample VALUES(1,1.515766667999969286,'cpu','guest_pct',0.0);
CREATE TABLE run_metric (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            source TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
            PRIMARY KEY (run_id, source, metric)
        );
INSERT INTO run_metric VALUES(1,'dev:vda','read_iops',6892.9248455037686652);
INSERT INTO run_metric VALUES(1,'dev:vda','write_iops',3.6688562360718219856);
INSERT INTO run_metric VALUES(1,'dev:vda','read_bw',28233420.167183436453);
INSERT INTO run_metric VALUES(1,'dev:vda','write_bw',15027.635142950182853);
INSERT INTO run_metric VALUES(1,'dev:vda','busy_pct',38.826531011380147617);
INSERT INTO run_metric VALUES(1,'dev:vda','queue',0.42544725313448206183);
INSERT INTO run_metric VALUES(1,'dev:vda','await_ms',0.062666079707219948802);
INSERT INTO run_metric VALUES(1,'cpu','usr_pct',80.349827985684413537);
INSERT INTO run_metric VALUES(1,'cpu','sys_pct',19.650172014315590018);
INSERT INTO run_metric VALUES(1,'cpu','iowait_pct',0.0);
INSERT INTO run_metric VALUES(1,'cpu','steal_pct',0.0);
INSERT INTO run_metric VALUES(1,'cpu','idle_pct',0.0);
INSERT INTO run_metric VALUES(1,'cpu','guest_pct',0.0);
CREATE TABLE oplat (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, seq INTEGER, t_ms INTEGER, lat_ns INTEGER, ddir TEXT
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
CREATE TABLE membal_decision (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES membal_run(id) ON DELETE CASCADE,
            t REAL NOT NULL, step INTEGER NOT NULL, vm TEXT NOT NULL,
            inputs TEXT NOT NULL,
            old_target INTEGER NOT NULL, new_target INTEGER NOT NULL, actual INTEGER,
            policy TEXT NOT NULL, reason TEXT NOT NULL
        );
CREATE TABLE hist_log (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, t_ms INTEGER NOT NULL, ddir TEXT NOT NULL,
            bins TEXT NOT NULL
        );
INSERT INTO hist_log VALUES(1,'local','measure.1',1007,'read','[[470, 1], [494, 1], [498, 1], [524, 2], [532, 1], [540, 3], [556, 1], [628, 1], [644, 1], [652, 1], [708, 1], [716, 2], [724, 1], [764, 1], [788, 1], [828, 1], [860, 1], [980, 1], [988, 1], [1020, 1], [1080, 1], [1800, 1], [1960, 1], [3056, 1], [5344, 1], [9920, 1], [13120, 1], [14784, 1], [16064, 1], [16768, 1], [17280, 1], [17536, 1], [18048, 1], [18304, 1], [19328, 1], [19584, 1], [19840, 1], [20096, 4], [20352, 8], [20608, 8], [20864, 7], [21120, 4], [21376, 5], [21632, 3], [21888, 7], [22144, 6], [22400, 3], [22656, 6], [22912, 5], [23168, 3], [23424, 6], [23680, 7], [23936, 5], [24192, 2], [24448, 2], [24704, 2], [24960, 2], [25216, 4], [25472, 4], [25728, 4], [25984, 6], [26496, 5], [26752, 3], [27008, 6], [27264, 3], [27520, 7], [27776, 7], [28032, 2], [28288, 4], [28544, 3], [28800, 2], [29056, 5], [29312, 9], [29568, 10], [29824, 20], [30080, 34], [30336, 54], [30592, 81], [30848, 77], [31104, 98], [31360, 102], [31616, 152], [31872, 169], [32128, 205], [32384, 208], [32640, 241], [33024, 493], [33536, 478], [34048, 432], [34560, 374], [35072, 292], [35584, 217], [36096, 160], [36608, 126], [37120, 77], [37632, 61], [38144, 61], [38656, 51], [39168, 45], [39680, 60], [40192, 59], [40704, 43], [41216, 47], [41728, 46], [42240, 50], [42752, 40], [43264, 39], [43776, 39], [44288, 14], [44800, 24], [45312, 24], [45824, 29], [46336, 24], [46848, 22], [47360, 52], [47872, 61], [48384, 62], [48896, 87], [49408, 139], [49920, 167], [50432, 184], [50944, 224], [51456, 262], [51968, 288], [52480, 285], [52992, 275], [53504, 269], [54016, 237], [54528, 212], [55040, 164], [55552, 125], [56064, 105], [56576, 87], [57088, 74], [57600, 66], [58112, 59], [58624, 56], [59136, 53], [59648, 49], [60160, 46], [60672, 36], [61184, 36], [61696, 35], [62208, 27], [62720, 19], [63232, 16], [63744, 23], [64256, 13], [64768, 10], [65280, 10], [66048, 28], [67072, 18], [68096, 12], [69120, 11], [70144, 19], [71168, 20], [72192, 13], [73216, 14], [74240, 10], [75264, 13], [76288, 9], [77312, 9], [78336, 6], [79360, 8], [80384, 9], [81408, 7], [82432, 3], [83456, 9], [84480, 7], [85504, 7], [86528, 7], [87552, 7], [88576, 7], [89600, 4], [90624, 5], [91648, 3], [92672, 8], [93696, 6], [94720, 4], [95744, 3], [96768, 2], [97792, 4], [98816, 4], [99840, 3], [100864, 2], [101888, 1], [102912, 2], [105984, 3], [107008, 1], [108032, 1], [109056, 3], [110080, 1], [111104, 2], [112128, 1], [113152, 1], [116224, 1], [119296, 2], [122368, 3], [123392, 2], [124416, 1], [126464, 1], [128512, 3], [130560, 1], [134144, 1], [136192, 1], [138240, 1], [140288, 2], [146432, 2], [148480, 1], [152576, 1], [156672, 1], [158720, 1], [160768, 1], [166912, 2], [175104, 1], [185344, 1], [193536, 1], [195584, 1], [197632, 2], [209920, 2], [211968, 1], [214016, 4], [216064, 2], [218112, 6], [220160, 11], [222208, 3], [224256, 4], [226304, 8], [228352, 8], [230400, 3], [232448, 5], [234496, 4], [236544, 3], [238592, 2], [240640, 5], [242688, 6], [244736, 9], [246784, 8], [248832, 11], [250880, 6], [252928, 7], [254976, 4], [257024, 5], [259072, 2], [261120, 6], [264192, 12], [268288, 23], [272384, 9], [276480, 6], [280576, 8], [284672, 9], [288768, 17], [292864, 2], [296960, 3], [301056, 6], [305152, 4], [309248, 8], [313344, 6], [317440, 4], [321536, 3], [325632, 4], [329728, 1], [333824, 2], [337920, 3], [342016, 3], [350208, 4], [362496, 2], [366592, 2], [382976, 1], [387072, 3], [391168, 3], [399360, 1], [460800, 1], [514048, 1], [610304, 2], [716800, 1], [774144, 1], [880640, 2], [1056768, 1], [1138688, 1], [1171456, 1], [1482752, 1], [1499136, 1], [1531904, 1], [1548288, 1], [1843200, 1], [1925120, 1], [2113536, 1], [2211840, 1], [2310144, 1], [2342912, 1], [2408448, 1], [2441216, 2], [2473984, 1], [2539520, 1], [2572288, 1], [2605056, 1], [2670592, 1], [2703360, 1], [2736128, 1], [2768896, 1], [2801664, 2], [2834432, 1], [2899968, 2], [3031040, 1], [3063808, 1], [3162112, 1], [3227648, 2], [3293184, 1], [3325952, 2], [3391488, 1], [3457024, 2], [3555328, 1], [3620864, 1], [3686400, 1], [3817472, 1], [3850240, 1], [3883008, 2], [3915776, 4], [3948544, 3], [3981312, 5], [4014080, 1], [4046848, 1], [4177920, 1], [4489216, 1], [4620288, 1], [4751360, 1], [4947968, 1], [5013504, 1], [5079040, 1], [5144576, 1], [5210112, 1], [5537792, 1], [5668864, 1], [6258688, 1], [6324224, 1], [6586368, 1], [6717440, 1], [6782976, 1], [7503872, 1], [7634944, 1], [7700480, 1], [8159232, 1], [8355840, 1], [8585216, 1], [8716288, 1]]');
CREATE INDEX sample_run ON sample(run_id, source, metric);
CREATE INDEX result_run ON result(run_id);
CREATE INDEX oplat_run ON oplat(run_id);
CREATE INDEX membal_decision_run ON membal_decision(run_id, vm, step);
CREATE INDEX hist_log_run ON hist_log(run_id);
COMMIT;
