#!/bin/sh
# vmio guest tracer: the guest_block layer (docs/layers.md), switched on and off by the host.
# Usage: vmio-trace DEVICE (the virtio-serial port named vmio.trace). One command a line from the host, each
# answered by its output and "--- vmio-trace end RC". Or: sh -s -- -c COMMAND ARGS... with this text on
# stdin: one command, its output and exit status (a libvirt guest, through the QEMU guest agent's guest-exec;
# nothing installed there). The commands:
#   on DISK SLOT_NS SIZE BS LIMIT_S  trace DISK's block layer (/sys/block/DISK): issue to completion,
#                          aggregated in the kernel by a hist trigger on a synthetic event, keyed by direction
#                          (rwbs), the completion's time slot (SLOT_NS long) and the latency in us, with the sum
#                          in ns; each table holds SIZE entries. Past LIMIT_S seconds (when > 0) the guest
#                          switches it all off itself: a host that stopped asking (killed) leaves nothing on
#   read                   that histogram, then the issue table's totals (what it dropped), whether a
#                          renewal failed and how many renewals were made (below)
#   off                    every trigger of vmio's and its synthetic event removed, found in the trigger files
#                          (so off also sweeps what an earlier tracer left); on runs it first
#   state                  the trigger files and the dynamic events, as they read now
# A trigger pairs an issue with its completion by (dev, sector) in a table the kernel never empties. When
# every start sector the requests can have (the disk over BS, fio's smallest block size) fits in PAIR_MAX
# entries, the two pairing tables hold them all; otherwise they hold SIZE and, while on, both pairing triggers
# are renewed (removed and written again, with empty tables) whenever half a table's worth of requests was
# issued since the last renewal (checked every 0.25 s); the requests in flight at a renewal, or issued or
# completed while it is under way, are lost.
T=/sys/kernel/tracing
SYN=vmio_blk_lat
ISSUE_T=$T/events/block/block_rq_issue/trigger
DONE_T=$T/events/block/block_rq_complete/trigger ; HIST_T=$T/events/synthetic/$SYN/trigger
S=/run/vmio-trace  # the tracer's state between commands: root's alone (/run is), never another user's
failed=$S/failed
renewals=$S/renewals
keeper_pid=$S/keeper  # the PID of the background keeper (renewals and the time limit)
PAIR_MAX=32768  # entries of a pairing table sized to hold every start sector of a disk (~10 MiB each)

state_dir() {
    mkdir -m 700 "$S" 2>/dev/null
    [ -d "$S" ] && [ ! -L "$S" ] || { echo "the guest's $S is not a folder of its own"; return 1; }
}

drop() {  # the triggers in trigger file $1 whose text holds $2, each removed as the kernel prints it
    [ -e "$1" ] || return 0
    grep -v '^#' "$1" | grep -F -e "$2" | sed 's/ *\[[a-z]*\] *$//' | while IFS= read -r line; do
        echo "!$line" >> "$1"
    done
}

off_triggers() {  # vmio's triggers (named by vmio_ in their variables or event), the synthetic event last
    drop "$DONE_T" "$SYN"
    drop "$HIST_T" "hist:"  # every trigger on vmio's own synthetic event
    drop "$ISSUE_T" "vmio_ts0"
    grep -q "^$SYN[[:space:]]" "$T/synthetic_events" 2>/dev/null && echo "!$SYN" >> "$T/synthetic_events"
    return 0
}

forget() {  # the state files gone, and their folder when nothing else is in it (serial mode keeps its out)
    rm -f "$keeper_pid" "$failed" "$renewals"
    rmdir "$S" 2>/dev/null
    return 0
}

off() {
    if [ -r "$keeper_pid" ]; then
        read -r k < "$keeper_pid" && kill "$k" 2>/dev/null && wait "$k" 2>/dev/null
    fi
    off_triggers
    forget
    ! grep -qs -e "$SYN" -e vmio_ts0 "$DONE_T" "$ISSUE_T" "$T/synthetic_events" \
        || { echo "the guest's triggers could not all be removed"; tail -n 3 "$T/error_log" 2>/dev/null; return 1; }
}

uptime_s() { read -r up _ < /proc/uptime; echo "${up%.*}"; }

keeper() {  # in the background while on: renews both pairing triggers with empty tables once half a table's
    # worth of requests was issued since the last renewal (when HALF > 0, every 0.25 s) and switches
    # everything off past LIMIT seconds (when > 0)
    disk=$1 ; half=$2 ; limit=$3 ; issue=$4 ; done_=$5
    end=$(( $(uptime_s) + limit )) ; tick=1
    [ "$half" -gt 0 ] && tick=0.25
    read -r r _ _ _ w _ < "/sys/block/$disk/stat" ; last=$((r + w))
    while sleep "$tick"; do
        if [ "$limit" -gt 0 ] && [ "$(uptime_s)" -ge "$end" ]; then
            off_triggers ; forget ; return 0
        fi
        [ "$half" -gt 0 ] || continue
        read -r r _ _ _ w _ < "/sys/block/$disk/stat" || continue
        [ $((r + w - last)) -lt "$half" ] && continue
        last=$((r + w))
        # a trigger with variables cannot be cleared (":clear" would define them again): removed and
        # written again, the completion's first (it reads the issue's variables)
        echo "!$done_" >> "$DONE_T" ; echo "!$issue" >> "$ISSUE_T"
        { echo "$issue" >> "$ISSUE_T" && echo "$done_" >> "$DONE_T"; } 2>/dev/null \
            || { echo "renewal failed: the guest's pairing triggers could not be written again" > "$failed"
                half=0; }
        [ "$half" -gt 0 ] && echo renewed >> "$renewals"
    done
}

refused() {  # the kernel's own words on a refused trigger, then everything off again
    tail -n 3 "$T/error_log" 2>/dev/null
    off > /dev/null
}

on() {
    disk=$1 ; slot=$2 ; size=$3 ; bs=${4:-512} ; limit=${5:-0}
    [ -e "$T/events" ] || mount -t tracefs tracefs "$T" 2>/dev/null \
        || { echo "tracefs could not be mounted at $T in the guest"; return 1; }
    [ -e "$T/events/block/block_rq_issue" ] \
        || { echo "the guest kernel has no block tracepoints ($T/events/block/block_rq_issue)"; return 1; }
    [ -e "$T/synthetic_events" ] \
        || { echo "the guest kernel has no synthetic events or hist triggers (CONFIG_SYNTH_EVENTS)"; return 1; }
    read -r dev < "/sys/block/$disk/dev" 2>/dev/null || { echo "the guest has no disk $disk"; return 1; }
    # the requests' distinct start sectors: every request starts at a multiple of the greatest common divisor
    # of fio's smallest block size and the largest request (a bio split at max_sectors_kb), so there are at
    # most the disk's bytes over it; when they fit in a pairing table of at most PAIR_MAX entries the tables
    # are made that big and never renewed (a full table drops what does not fit, and says so)
    read -r sectors < "/sys/block/$disk/size" ; read -r maxkb < "/sys/block/$disk/queue/max_sectors_kb"
    a=$bs ; b=$((maxkb * 1024)) ; while [ "$b" -gt 0 ]; do t=$((a % b)); a=$b; b=$t; done
    keys=$(( sectors * 512 / a )) ; pairs=$size ; half=0
    if [ "$keys" -le "$PAIR_MAX" ]; then
        while [ "$pairs" -lt "$keys" ]; do pairs=$((pairs * 2)); done
    else
        half=$((size / 2))
    fi
    devt=$(( (${dev%:*} << 20) | ${dev#*:} ))
    off || return 1
    state_dir || return 1
    free0=$(sed -n "s/^MemFree: *\([0-9]*\).*/\1/p" /proc/meminfo)
    : > "$T/error_log" 2>/dev/null
    echo "$SYN u64 lat; u64 us; u64 slot; char rwbs[8]" >> "$T/synthetic_events" || return 1
    issue="hist:keys=dev,sector:vmio_ts0=common_timestamp:vmio_tu0=common_timestamp/1000:size=$pairs if dev==$devt"
    echo "$issue" >> "$ISSUE_T" || { refused ; return 1; }
    done_="hist:keys=dev,sector:lat=common_timestamp-\$vmio_ts0:us=common_timestamp/1000-\$vmio_tu0:slot=common_timestamp/$slot:size=$pairs:onmatch(block.block_rq_issue).trace($SYN,\$lat,\$us,\$slot,rwbs) if dev==$devt"
    echo "$done_" >> "$DONE_T" || { refused ; return 1; }
    echo "hist:keys=rwbs,slot,us:vals=hitcount,lat:sort=slot:size=$size" >> "$HIST_T" || { refused ; return 1; }
    rm -f "$failed" ; : > "$renewals"
    if [ "$half" -gt 0 ] || [ "$limit" -gt 0 ]; then
        # exec, not a redirection on the call: the shell would keep the replaced descriptors (the agent's
        # pipes) open in saved copies while the function runs, and the agent would wait for the keeper
        ( exec < /dev/null > /dev/null 2>&1 ; keeper "$disk" "$half" "$limit" "$issue" "$done_" ) &
        echo $! > "$keeper_pid"
    fi
    free1=$(sed -n "s/^MemFree: *\([0-9]*\).*/\1/p" /proc/meminfo)
    echo "on $disk dev $devt pairs $pairs renew_every $half tables_kb $((free0 - free1))"
}

state() {
    for f in "$ISSUE_T" "$DONE_T" "$T/synthetic_events" "$T/dynamic_events" "$T/events/block/enable" \
        "$T/set_event"; do
        [ -e "$f" ] || continue
        echo "== $f"
        grep -v '^#' "$f"
    done
    return 0
}

dispatch() {
    cmd=$1 ; shift
    case $cmd in
        on) on "$@" ;;
        read) cat "$T/events/synthetic/$SYN/hist" && echo "== issue" \
            && { grep -A9 '^Totals:' "$T/events/block/block_rq_issue/hist"; cat "$failed" 2>/dev/null
                echo "renewals $(grep -c . "$renewals" 2>/dev/null)"; true; } ;;
        off) off ;;
        state) state ;;
        *) echo "unknown command: $cmd" ; false ;;
    esac
}

if [ "$1" = "-c" ]; then  # one command, through the guest agent
    shift  # (exec, as for the keeper below: no saved copy of the agent's pipes)
    exec 2>&1
    dispatch "$@"
    exit
fi
device=$1
exec 3<>"$device" || exit 1
state_dir || exit 1
out=$S/out
while :; do
    if read -r cmd a b c d e <&3; then
        dispatch "$cmd" $a $b $c $d $e > "$out" 2>&1
        rc=$?
        { cat "$out" ; echo "--- vmio-trace end $rc" ; } >&3
    else
        sleep 0.2  # the host is not connected (the port reads as ended)
    fi
done
