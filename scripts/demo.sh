#!/usr/bin/env bash
# vmio's main job on its embedded defaults: build the guest, run the default campaign, write the report.
# Called by `make demo` after the system packages and .venv are in place. Re-running resumes the campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
VMIO=.venv/bin/vmio
OUT=${VMIO_DEMO_OUT:-out/demo}
mkdir -p "$OUT"
DB="$OUT/vmio.db"

echo "== building (or reusing) the boot-to-fio guest"
timeout 900 "$VMIO" guest build
echo "== accelerator"
timeout 120 "$VMIO" guest probe
echo "== running examples/demo.toml (bare vs virtio-blk, +iothread, virtio-scsi, nvme)"
status=0
"$VMIO" run examples/demo.toml --db "$DB" --workdir "$OUT/runs" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi  # 1: some points failed, still report
echo "== results"
"$VMIO" show demo --db "$DB"
echo
"$VMIO" compare demo --baseline bare --db "$DB"
echo
"$VMIO" report demo --db "$DB" -o "$OUT/report.html" --png-dir "$OUT/png"
"$VMIO" diagnose demo --db "$DB" --point "virtio-blk/4k-randread/bs=4096/offered=max/load=0/rep=1" || true
echo
echo "report: $(realpath "$OUT/report.html")"
echo "store:  $(realpath "$DB")   (vmio show demo --db $DB --json)"
exit "$status"
