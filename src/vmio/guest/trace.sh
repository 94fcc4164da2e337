#!/bin/sh
# vmio guest tracer: the guest_block layer (docs/layers.md), switched on and off by the host.
# Usage: vmio-trace DEVICE (the virtio-serial port named vmio.trace). One command a line from the host, each
# answered by its output and "--- vmio-trace end RC":
#   on DISK SLOT_NS SIZE BS  trace DISK's block layer (/sys/block/DISK): issue to completion, aggregated in
#                          the kernel by a hist trigger on a synthetic event, keyed by direction (rwbs), the
#                          completion's time slot (SLOT_NS long) and the latency in us, with the sum in ns;
#                          each table holds SIZE entries
#   read                   that histogram, then the issue table's totals (what it dropped), whether a
#                          renewal failed and how many renewals were made (below)
#   off                    every trigger and the synthetic event removed
#   state                  the trigger files and the dynamic events, as they read now
# A trigger pairs an issue with its completion by (dev, sector) in a table the kernel never empties. When
# every start sector the requests can have (the disk over BS, fio's smallest block size) fits in PAIR_MAX
# entries, the two pairing tables hold them all; otherwise they hold SIZE and, while on, both pairing triggers
# are renewed (removed and written again, with empty tables) whenever half a table's worth of requests was
# issued since the last renewal (checked every 0.25 s); the requests in flight at a renewal, or issued or
# completed while it is under way, are lost.
device=$1
T=/sys/kernel/tracing
SYN=vmio_blk_lat
ISSUE="" ; DONE="" ; HIST="" ; ISSUE_T=$T/events/block/block_rq_issue/trigger
DONE_T=$T/events/block/block_rq_complete/trigger ; HIST_T=$T/events/synthetic/$SYN/trigger
renewer=""
failed=/tmp/vmio-trace.failed
renewals=/tmp/vmio-trace.renewals
PAIR_MAX=32768  # entries of a pairing table sized to hold every start sector of a disk (~10 MiB each)

off() {
    [ -n "$renewer" ] && kill "$renewer" 2>/dev/null && wait "$renewer" 2>/dev/null
    renewer=""
    [ -n "$HIST" ] && echo "!$HIST" >> "$HIST_T"
    [ -n "$DONE" ] && echo "!$DONE" >> "$DONE_T"
    [ -n "$ISSUE" ] && echo "!$ISSUE" >> "$ISSUE_T"
    HIST="" ; DONE="" ; ISSUE=""
    grep -q "^$SYN[[:space:]]" "$T/synthetic_events" 2>/dev/null && echo "!$SYN" >> "$T/synthetic_events"
    return 0
}

refused() {  # the kernel's own words on a refused trigger, then everything off again
    tail -n 3 "$T/error_log" 2>/dev/null
    off
}

on() {
    disk=$1 ; slot=$2 ; size=$3 ; bs=${4:-512}
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
    off
    free0=$(sed -n "s/^MemFree: *\([0-9]*\).*/\1/p" /proc/meminfo)
    : > "$T/error_log" 2>/dev/null
    echo "$SYN u64 lat; u64 us; u64 slot; char rwbs[8]" >> "$T/synthetic_events" || return 1
    ISSUE="hist:keys=dev,sector:ts0=common_timestamp:tu0=common_timestamp/1000:size=$pairs if dev==$devt"
    echo "$ISSUE" >> "$ISSUE_T" || { ISSUE="" ; refused ; return 1; }
    DONE="hist:keys=dev,sector:lat=common_timestamp-\$ts0:us=common_timestamp/1000-\$tu0:slot=common_timestamp/$slot:size=$pairs:onmatch(block.block_rq_issue).trace($SYN,\$lat,\$us,\$slot,rwbs) if dev==$devt"
    echo "$DONE" >> "$DONE_T" || { DONE="" ; refused ; return 1; }
    HIST="hist:keys=rwbs,slot,us:vals=hitcount,lat:sort=slot:size=$size"
    echo "$HIST" >> "$HIST_T" || { HIST="" ; refused ; return 1; }
    issue=$ISSUE ; done_=$DONE
    rm -f "$failed" ; : > "$renewals"
    read -r r _ _ _ w _ < "/sys/block/$disk/stat" ; last=$((r + w))
    if [ "$half" -gt 0 ]; then (
        # every 0.25 s: once half a table's worth of requests was issued since the last renewal, both
        # pairing triggers are renewed with empty tables
        while sleep 0.25; do
            read -r r _ _ _ w _ < "/sys/block/$disk/stat" || continue
            [ $((r + w - last)) -lt "$half" ] && continue
            last=$((r + w))
            # a trigger with variables cannot be cleared (":clear" would define them again): removed and
            # written again, the completion's first (it reads the issue's variables)
            echo "!$done_" >> "$DONE_T" ; echo "!$issue" >> "$ISSUE_T"
            { echo "$issue" >> "$ISSUE_T" && echo "$done_" >> "$DONE_T"; } 2>/dev/null \
                || { echo "renewal failed: the guest's pairing triggers could not be written again" > "$failed"
                    break; }
            echo renewed >> "$renewals"
        done
    ) & renewer=$!
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

exec 3<>"$device" || exit 1
out=/tmp/vmio-trace.out
while :; do
    if read -r cmd a b c d <&3; then
        # not in $(...): on and off keep their state (the triggers written, the renewer) in this shell
        case $cmd in
            on) on "$a" "$b" "$c" "$d" ;;
            read) cat "$T/events/synthetic/$SYN/hist" && echo "== issue" \
                && { grep -A9 '^Totals:' "$T/events/block/block_rq_issue/hist"; cat "$failed" 2>/dev/null
                    echo "renewals $(grep -c . "$renewals" 2>/dev/null)"; true; } ;;
            off) off ;;
            state) state ;;
            *) echo "unknown command: $cmd" ; false ;;
        esac > "$out" 2>&1
        rc=$?
        { cat "$out" ; echo "--- vmio-trace end $rc" ; } >&3
    else
        sleep 0.2  # the host is not connected (the port reads as ended)
    fi
done
