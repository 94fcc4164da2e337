"""Why vmio refuses an option of a person's own fio job file: the class of its reason, by one table.

Every option of a job file is run as given (``fiofile.KEPT``), replaced by vmio and named
(``fiofile.REPLACED``), or refused with one of the reasons below; ``docs/fio-files.md`` lists the table.
An option in none of the tables is asked of the installed fio (``fio --cmdhelp=NAME``, once per name):
one it does not know is refused as unknown to it, one it knows as not yet classed as an I/O pattern.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Callable

MEASUREMENT = "vmio's measurement needs it"
ENGINE = "an engine or device kind vmio does not run"
FILE_OPERATION = "a file operation, not an I/O pattern"
HOST = "it acts on the host beyond the job's I/O (runs a program, changes a kernel setting or identity)"
UNKNOWN = "unknown to the installed fio"
UNCLASSED = "not one vmio runs as an I/O pattern (not in its table of options)"

REASONS = (MEASUREMENT, ENGINE, FILE_OPERATION, HOST, UNKNOWN, UNCLASSED)

REFUSED: dict[str, str] = {
    **dict.fromkeys(
        [
            "unified_rw_reporting",  # one "mixed" direction: vmio keeps reads and writes apart
            "disable_lat",
            "disable_clat",
            "disable_slat",
            "disable_bw_measurement",
            "gtod_reduce",  # turns the latency clocks off
            "stats",
            "clocksource",
            "gtod_cpu",
            "startdelay",  # jobs that start late leave vmio's measured window
        ],
        MEASUREMENT,
    ),
    **dict.fromkeys(
        [
            # network, RDMA, HTTP, NBD, HDFS engines
            "hostname", "port", "protocol", "proto", "listen", "interface", "ttl", "pingpong", "nodelay",
            "window_size", "mss", "verb", "bindname", "https", "http_host", "http_user", "http_pass",
            "http_mode", "http_verbose", "http_s3_key", "http_s3_keyid", "http_s3_region", "uri",
            "namenode", "hdfsdirectory",
            # NVMe passthrough, SCSI generic, xNVMe
            "cmd_type", "sg_write_mode", "xnvme_async", "xnvme_sync", "xnvme_admin", "xnvme_dev_nsid",
            "xnvme_iovec",
            # zoned block devices
            "zonemode", "zonesize", "zonerange", "zoneskip", "zonecapacity", "max_open_zones",
            "job_max_open_zones", "zone_reset_threshold", "zone_reset_frequency", "read_beyond_wp",
            "ignore_zone_limits",
            # NVMe protection information and FUA (passthrough), SCSI generic write modes
            "apptag", "apptag_mask", "pi_act", "pi_chk", "md_per_io_size", "readfua", "writefua", "write_mode",
            "num_range",
            # e4defrag, libblkio, GPU, RADOS, MTD engines
            "donorname", "inplace", "libblkio_driver", "libblkio_path", "gpu_dev_id", "conf", "skip_bad",
            # the CPU-burning engine
            "cpuload", "cpuchunks", "cpumode", "exit_on_io_done",
        ],
        ENGINE,
    ),
    **dict.fromkeys(
        [
            "unlink", "unlink_each_loop", "create_serialize", "create_fsync", "create_only",
            "allow_file_create", "allow_mounted_write", "file_append", "lockfile", "openfiles",
            "filename_format", "unique_filename", "opendir", "stat_type", "read_iolog", "write_iolog",
            "iolog", "replay_no_stall", "replay_redirect", "replay_align", "replay_scale",
            "replay_time_scale", "replay_skip", "verify_state_save", "verify_state_load", "verify_dump",
            "mem",  # mem=mmaphuge:FILE and mmapshared back the buffers with a file fio creates
        ],
        FILE_OPERATION,
    ),
    **dict.fromkeys(
        [
            "exec_prerun", "exec_postrun", "ioscheduler", "cgroup", "cgroup_weight", "cgroup_nodelete",
            "uid", "gid", "daemonize", "program", "arguments", "grace_time", "std_redirect",
        ],
        HOST,
    ),
    "threads": UNCLASSED,  # an option of fio's tiobench profile (--profile=tiobench), not of a job
}  # fmt: skip

# ioengine values vmio does not run, by the class of their reason (others: ENGINE)
ENGINE_CLASSES = {
    **dict.fromkeys(
        ["filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"], FILE_OPERATION
    ),
    "exec": HOST,
}


def engine_reason(engine: str) -> str:
    return ENGINE_CLASSES.get(engine, ENGINE)


def reason(key: str, knows: Callable[[str], bool] | None = None) -> str:
    """The class of the reason vmio refuses option ``key`` (one it neither runs nor replaces); ``knows``
    says whether the installed fio reads an option of that name (default: ``fio_knows``)."""
    if key in REFUSED:
        return REFUSED[key]
    return UNCLASSED if (knows or fio_knows)(key) else UNKNOWN


@functools.cache
def fio_knows(key: str, fio: str = "fio") -> bool:
    """Whether the installed fio knows option ``key`` by its name or an alias (``fio --cmdhelp=KEY``
    prints "No such command" otherwise). Without fio at hand every option counts as known: vmio then
    cannot tell, and says the milder thing."""
    path = shutil.which(fio)
    if path is None:
        return True
    try:
        done = subprocess.run([path, f"--cmdhelp={key}"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return "No such command" not in done.stdout + done.stderr
