#!/usr/bin/env bash
# vmio's main job on its embedded defaults: build the guest, run the default campaign (seed 000's
# configurations, examples/demo.toml), write the report. Called by `make demo` after the system packages,
# .venv and `vmio qemu add 10.0` are in place. Re-running resumes the campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
VMIO=${VMIO:-.venv/bin/vmio}
OUT=${VMIO_DEMO_OUT:-out/demo}
SPEC=examples/demo.toml
mkdir -p "$OUT"
DB="$OUT/vmio.db"

echo "== building (or reusing) the boot-to-fio guest"
timeout 900 "$VMIO" guest build
echo "== accelerator"
timeout 120 "$VMIO" guest probe

echo "== QEMU builds"
timeout 120 "$VMIO" qemu list
if ! timeout 120 "$VMIO" qemu list --json | grep -q '"version": "10\.0\.'; then
  # no 10.0 offered here (`vmio qemu add 10.0` failed above): every target runs on the system QEMU
  echo "vmio demo: no QEMU 10.0 installed; the targets that ask for it run on the system QEMU instead"
  sed '/^qemu = "10.0"$/d' "$SPEC" >"$OUT/demo.toml"
  SPEC="$OUT/demo.toml"
fi

# seed 000's "Path Through" (a dedicated SSD given to the VM) here: a raw host block device given to the
# VM (`bus = "block"`). Without a spare disk that device is a direct-I/O loop device over a written file,
# reached through the link the spec names; detached when the demo ends.
LOOP_FILE=/var/tmp/vmio/demo-block.img
LOOP_LINK=/var/tmp/vmio/demo-loop
mkdir -p /var/tmp/vmio
if [ ! -f "$LOOP_FILE" ]; then
  echo "== writing $LOOP_FILE (512 MiB) for the raw-device target"
  dd if=/dev/urandom of="$LOOP_FILE.partial" bs=1M count=512 status=none conv=fsync
  mv "$LOOP_FILE.partial" "$LOOP_FILE"
fi
LOOP_DEV=$(timeout 30 losetup -f --show --direct-io=on "$LOOP_FILE")
ln -sfn "$LOOP_DEV" "$LOOP_LINK"
cleanup() { rm -f "$LOOP_LINK"; timeout 30 losetup -d "$LOOP_DEV" || true; }
trap cleanup EXIT
echo "== raw block device for the Path Through stand-in: $LOOP_DEV (loop, direct I/O) over $LOOP_FILE"

echo "== running $SPEC (seed 000: bare, 1fio/vm x N, N fio/vm, + raw device, + iothread, two backings)"
status=0
start=$(date +%s)
"$VMIO" run "$SPEC" --db "$DB" --workdir "$OUT/runs" || status=$?
echo "campaign: $(( $(date +%s) - start )) s"
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi  # 1: some points failed, still report
echo "== results"
"$VMIO" show demo --db "$DB"
echo
"$VMIO" compare demo --baseline bare --db "$DB"
echo
"$VMIO" report demo --db "$DB" -o "$OUT/report.html" --png-dir "$OUT/png"
"$VMIO" diagnose demo --db "$DB" --point "2fio-1vm/4k-randread/bs=4096/offered=max/load=0/rep=1" || true
echo
echo "report: $(realpath "$OUT/report.html")"
echo "store:  $(realpath "$DB")   (vmio show demo --db $DB --json)"
exit "$status"
