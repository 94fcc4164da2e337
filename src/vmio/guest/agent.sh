#!/bin/sh
# vmio guest agent: every INTERVAL seconds write /proc/vmstat and /proc/meminfo to DEVICE.
# Usage: vmio-agent DEVICE INTERVAL.  Records are framed by "--- vmio <uptime>" and "--- end".
device=$1
interval=${2:-1}
exec 3>"$device" || exit 1
while :; do
    {
        read -r uptime _ < /proc/uptime
        echo "--- vmio $uptime"
        cat /proc/vmstat /proc/meminfo
        echo "--- end"
    } >&3 || exit 1
    sleep "$interval"
done
