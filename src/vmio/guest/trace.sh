#!/bin/sh
# vmio guest tracer: the guest_block layer (docs/layers.md), switched on and off by the host.
# Usage: vmio-trace DEVICE (the virtio-serial port named vmio.trace). One command a line from the host, each
# answered by its output and "--- vmio-trace end RC". Or: sh -s -- -c COMMAND ARGS... with this text on
# stdin: one command, its output and exit status (a libvirt guest, through the QEMU guest agent's guest-exec;
# nothing installed there). The commands:
#   on DISK SLOT_NS SIZE BS LIMIT_S [OWNER]  trace DISK's block layer (/sys/block/DISK): issue to completion,
#                          aggregated in the kernel by a hist trigger on a synthetic event, keyed by direction
#                          (rwbs), the completion's time slot (SLOT_NS long) and the latency in us, with the sum
#                          in ns; each table holds SIZE entries. Past LIMIT_S seconds (when > 0) the guest
#                          switches it all off itself: a host that stopped asking (killed) leaves nothing on.
#                          OWNER names the run (one word); while another run's tracer holds the guest (below),
#                          on refuses and changes nothing
#   read [OWNER]           that histogram, then the issue table's totals (what it dropped), whether a
#                          renewal failed and how many renewals were made (below)
#   off [OWNER]            every trigger of vmio's and its synthetic event removed, found in the trigger files
#                          (so off also sweeps what an earlier tracer left); on runs it first. With OWNER,
#                          read and off refuse while another run holds the guest
#   state                  the trigger files and the dynamic events, as they read now
# The holder: on claims the guest by making the folder $S/held (mkdir: one claim wins) and writes in it who holds
# it: the keeper's PID and start time (from /proc/PID/stat: a PID used again is not mistaken for it), the uptime
# second its limit passes and OWNER. A claim is live while that process runs and its limit has not passed;
# a stale one (the keeper killed, its limit passed) is swept by the next on, with what it left in tracefs. A
# reboot empties /run, and tracefs with it.
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
held=$S/held  # the claim: made by mkdir, holding "by" (PID START END OWNER: who holds the guest, until when)
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

forget() {  # the state files and the claim gone, and their folder when nothing else is in it (serial mode
    # keeps its out)
    rm -f "$failed" "$renewals"
    release
    rmdir "$S" 2>/dev/null
    return 0
}

release() { rm -f "$held/by"; rmdir "$held" 2>/dev/null; return 0; }

started() {  # process $1's start time (field 22 of /proc/PID/stat; after the name, which may hold spaces);
    # nothing once it ended (a zombie: no one may reap a keeper whose on has exited)
    sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | {
        read -r state _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ st _ && [ "$state" != Z ] && echo "$st"; }
}

claimed() {  # whether the guest is claimed, with the claim's PID START END OWNER in hp hs he ho
    hp= ; hs= ; he= ; ho=
    [ -d "$held" ] || return 1
    # a claim being made writes its "by" at once: none a second later is a killed on's (stale)
    read -r hp hs he ho < "$held/by" 2>/dev/null || { sleep 1; read -r hp hs he ho < "$held/by" 2>/dev/null; }
    return 0
}

running() { [ -n "$hs" ] && [ "$(started "$hp")" = "$hs" ]; }  # the claim's process (not one reusing its PID)

live() {  # claimed, by a process that runs, whose limit has not passed
    claimed && running && { [ "${he:-0}" -eq 0 ] || [ "$(uptime_s)" -lt "$he" ]; }
}

held_by() {  # the one line that says who holds the guest, and until when (after live)
    until_=""
    [ "${he:-0}" -gt 0 ] && until_=" until its limit, $(( he - $(uptime_s) )) s from now"
    echo "the guest's block layer is being traced by another run, ${ho:-unnamed} (its tracer, PID $hp in" \
        "the guest, holds it$until_)"
}

end_keeper() {  # the claim's keeper ended (after claimed), before its triggers go: it may be renewing them.
    # SIGKILL: a shell handles SIGTERM only once its sleep ends (up to a second); a renewal cut short leaves
    # nothing that the sweep after this does not remove
    running && [ "$hp" != "$$" ] || return 0
    kill -9 "$hp" 2>/dev/null || return 0
    wait "$hp" 2>/dev/null ; n=0  # (reaped when it is this shell's child; else watched to its end)
    while [ $n -lt 20 ] && [ "$(started "$hp")" = "$hs" ]; do sleep 0.05; n=$((n + 1)); done
}

sweep() {  # vmio's triggers and synthetic event removed; else what is left and the kernel's words, one line
    said=$(off_triggers 2>&1)  # a removal the kernel refused: the shell's write error names its errno
    left=$(for f in "$ISSUE_T" "$DONE_T" "$T/synthetic_events"; do
        grep -qs -e "$SYN" -e vmio_ts0 "$f" && printf ' %s' "${f#"$T"/}"; done)
    [ -z "$left" ] && return 0
    set -f  # whitespace folded, nothing globbed
    echo "the guest's triggers could not all be removed (left in$left):" $said \
        $(tail -n 3 "$T/error_log" 2>/dev/null)
    set +f
    return 1
}

not_mine() {  # another run's live claim, when the caller names its run ($1; after live)
    [ -n "$1" ] && [ "$ho" != "$1" ] || return 1
    echo "$(held_by); refused for $1"
}

off() {
    live && not_mine "$1" && return 1
    claimed && end_keeper
    sweep ; rc=$?
    forget
    return $rc
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

claim() {  # the guest claimed for run $1 until uptime second $2 (0: no limit); else who holds it
    by=$S/by.$$
    echo "$$ $(started $$) $2 $1" > "$by" || return 1
    if ! mkdir "$held" 2>/dev/null; then
        live && [ "$ho" != "$1" ] && { rm -f "$by"; echo "$(held_by); nothing was changed"; return 1; }
        # stale (its process ended, or its limit passed), or this run's own (an earlier point's off that did
        # not get through): its keeper ended, the claim let go (when it is still the one read) and made anew;
        # what it left in tracefs is swept by on
        end_keeper ; seen="$hp $hs $he $ho"
        read -r p1 p2 p3 p4 < "$held/by" 2>/dev/null ; [ "$p1 $p2 $p3 $p4" = "$seen" ] && release
        if ! mkdir "$held" 2>/dev/null; then
            rm -f "$by"
            live && echo "$(held_by); nothing was changed" || echo "another run is switching it on; nothing was changed"
            return 1
        fi
    fi
    mv "$by" "$held/by"
}

on() {
    disk=$1 ; slot=$2 ; size=$3 ; bs=${4:-512} ; limit=${5:-0} ; owner=${6:-}
    case $owner in *[!A-Za-z0-9@:._-]*) echo "the run's name is not one plain word: $owner"; return 1 ;; esac
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
    end=0 ; [ "$limit" -gt 0 ] && end=$(( $(uptime_s) + limit ))
    state_dir || return 1
    claim "$owner" "$end" || return 1  # another run's live tracer: refused, nothing changed
    if [ -r "$S/keeper" ]; then  # the keeper of a vmio from before claims (its PID alone), ended as it was
        read -r k < "$S/keeper" && kill "$k" 2>/dev/null ; rm -f "$S/keeper"
    fi
    sweep || { forget; return 1; }  # what an earlier tracer left (its keeper gone): removed, else its words
    free0=$(sed -n "s/^MemFree: *\([0-9]*\).*/\1/p" /proc/meminfo)
    : > "$T/error_log" 2>/dev/null
    echo "$SYN u64 lat; u64 us; u64 slot; char rwbs[8]" >> "$T/synthetic_events" || { refused ; return 1; }
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
        k=$!  # the claim passes to the keeper: it holds the guest while it runs
        echo "$k $(started $k) $end $owner" > "$S/by.$$" && mv "$S/by.$$" "$held/by"
    fi
    free1=$(sed -n "s/^MemFree: *\([0-9]*\).*/\1/p" /proc/meminfo)
    # the guest's clocks: fio's (the clocksource: jiffies ones step by the kernel's tick) and the trace
    # clock the triggers stamp with (in brackets; "global" by default when the kernel found sched_clock
    # unstable, as without a usable TSC)
    read -r cs < /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || cs=unknown
    tc=$(sed -n 's/.*\[\([a-z0-9-]*\)\].*/\1/p' "$T/trace_clock" 2>/dev/null)
    echo "on $disk dev $devt pairs $pairs renew_every $half tables_kb $((free0 - free1)) clock $cs ${tc:-unknown}"
}

state() {
    [ -r "$held/by" ] && { echo "== $held/by"; cat "$held/by"; }  # the claim: who holds the guest
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
        read) live && not_mine "$1" && return 1
            cat "$T/events/synthetic/$SYN/hist" && echo "== issue" \
            && { grep -A9 '^Totals:' "$T/events/block/block_rq_issue/hist"; cat "$failed" 2>/dev/null
                echo "renewals $(grep -c . "$renewals" 2>/dev/null)"; true; } ;;
        off) off "$1" ;;
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
    if read -r cmd a b c d e f <&3; then
        dispatch "$cmd" $a $b $c $d $e $f > "$out" 2>&1
        rc=$?
        { cat "$out" ; echo "--- vmio-trace end $rc" ; } >&3
    else
        sleep 0.2  # the host is not connected (the port reads as ended)
    fi
done
