#!/bin/sh
# vmio guest agent: every INTERVAL seconds write /proc/vmstat and /proc/meminfo to DEVICE.
# Usage: vmio-agent DEVICE INTERVAL.  Records are framed by "--- vmio <uptime>" and "--- end".
# When the kernel has PSI (boot with psi=1 on Debian kernels), the memory stall totals follow as
# vmstat-style lines: "psi_memory_some_us N" and "psi_memory_full_us N" (microseconds since boot).
device=$1
interval=${2:-1}
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
        echo "--- end"
    } >&3 || exit 1
    sleep "$interval"
done
