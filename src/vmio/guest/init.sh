#!/bin/sh
# vmio guest init (PID 1): mount, load drivers, bring up the network, serve fio.
# Kernel command-line options it reads:
#   vmio.disks=/dev/vda,/dev/sda   wait (up to vmio.disk_wait seconds, default 30) for these devices
#   vmio.agent=SECONDS             start the agent on the virtio-serial port named vmio.agent
#   vmio.fio_port=PORT             fio server port (default 8765)
#   vmio.hits=fio,NAME             processes whose read counters the agent reports (default all: every
#                                  process but the agent)
#   vmio.skip_modules=a,b          modules of /etc/vmio/modules not to load (file names without .ko)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=@LD_LIBRARY_PATH@
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin /run
[ -e /bin/mount ] || /bin/busybox --install -s  # the image links the applets already
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
echo "vmio-guest: init on $(uname -r)"

disks="" ; agent="" ; fio_port=8765 ; disk_wait=30 ; hits=all ; skip_modules=""
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        vmio.disks=*) disks=$(echo "${arg#vmio.disks=}" | tr , ' ') ;;
        vmio.agent=*) agent="${arg#vmio.agent=}" ;;
        vmio.fio_port=*) fio_port="${arg#vmio.fio_port=}" ;;
        vmio.disk_wait=*) disk_wait="${arg#vmio.disk_wait=}" ;;
        vmio.hits=*) hits=$(echo "${arg#vmio.hits=}" | tr , ' ') ;;
        vmio.skip_modules=*) skip_modules=$(echo "${arg#vmio.skip_modules=}" | tr , ' ') ;;
    esac
done

# Each insmod costs ~15 ms under TCG: the host leaves out the drivers of hardware this VM does not have.
while read -r module; do
    name=${module##*/}
    case " $skip_modules " in *" ${name%.ko} "*) continue ;; esac
    insmod "$module" || echo "vmio-guest: insmod $module failed"
done < /etc/vmio/modules

ip link set lo up
ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up && ip route add default via 10.0.2.2 \
    || echo "vmio-guest: no eth0"

for disk in $disks; do
    waited=0
    while [ ! -b "$disk" ] && [ "$waited" -lt "$((disk_wait * 10))" ]; do
        sleep 0.1; waited=$((waited + 1))
    done
    [ -b "$disk" ] || echo "vmio-guest: disk $disk did not appear"
done

for port in /sys/class/virtio-ports/*; do
    case "$(cat "$port/name" 2>/dev/null)" in
        vmio.agent) [ -n "$agent" ] && /bin/vmio-agent "/dev/${port##*/}" "$agent" "$hits" & ;;
        vmio.trace) /bin/vmio-trace "/dev/${port##*/}" & ;;  # the guest_block layer's tracer (host-driven)
    esac
done

fio --server=",$fio_port" &
fio_pid=$!
hexport=$(printf '%04X' "$fio_port")
while ! grep -q ":$hexport 00000000:0000 0A" /proc/net/tcp 2>/dev/null; do
    kill -0 "$fio_pid" 2>/dev/null || break
    sleep 0.05
done
echo "VMIO-READY fio_port=$fio_port disks=$(echo $disks | tr ' ' ,)"
wait "$fio_pid"
echo "VMIO-FIO-EXITED rc=$?"
poweroff -f
