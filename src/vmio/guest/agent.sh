#!/bin/sh
# vmio guest agent: every INTERVAL seconds write /proc/vmstat and /proc/meminfo to DEVICE.
# Usage: vmio-agent DEVICE INTERVAL [COMMS].  Records are framed by "--- vmio <uptime>" and "--- end".
# When the kernel has PSI (boot with psi=1 on Debian kernels), the memory stall totals follow as
# vmstat-style lines: "psi_memory_some_us N" and "psi_memory_full_us N" (microseconds since boot).
# Then, for every process whose name (/proc/PID/comm) is one of COMMS (space-separated; default "all":
# every process but the agent itself, whose own reads of /proc would count as hits), its read counters
# from /proc/PID/io: "pio PID COMM RCHAR READ_BYTES" (bytes read through read syscalls, bytes fetched
# from storage; a process's reaped children's counts are in its own, so the total over every process
# keeps what ended processes read).
device=$1
interval=${2:-1}
comms=${3:-all}
self=$$
exec 3>"$device" || exit 1
while :; do
    {
        read -r uptime _ < /proc/uptime
        echo "--- vmio $uptime"
        cat /proc/vmstat /proc/meminfo
        if [ -r /proc/pressure/memory ]; then
            while read -r kind _ _ _ total; do
                echo "psi_memory_${kind}_us ${total#total=}"
            done < /proc/pressure/memory
        fi
        # in numeric order (a glob sorts 1000 before 999): a parent (lower PID) is read before its children,
        # so a job reaped while the agent reads is seen once (its counters in the job, or the parent's), never
        # twice (a glob that read the exited job, then the parent that had just reaped it, counted it twice)
        for dir in /proc/[0-9] /proc/[0-9][0-9] /proc/[0-9][0-9][0-9] /proc/[0-9][0-9][0-9][0-9] \
            /proc/[0-9][0-9][0-9][0-9][0-9] /proc/[0-9][0-9][0-9][0-9][0-9][0-9] /proc/[0-9][0-9][0-9][0-9][0-9][0-9][0-9]; do
            [ "${dir#/proc/}" = "$self" ] && continue
            read -r comm 2>/dev/null < "$dir/comm" || continue
            case " $comms " in *" all "* | *" $comm "*) ;; *) continue ;; esac
            # the shell's own read, not a cat per process: under TCG a fork per process made a record take
            # ~1.8 s of the guest's CPU (measured with ~60 processes), beside the workload it measures
            rchar="" ; bytes=""
            while read -r key value; do
                case $key in rchar:) rchar=$value ;; read_bytes:) bytes=$value ;; esac
            done 2>/dev/null < "$dir/io"
            [ -n "$rchar" ] && [ -n "$bytes" ] && echo "pio ${dir#/proc/} $comm $rchar $bytes"
        done
        echo "--- end"
    } >&3 || exit 1
    sleep "$interval"
done
