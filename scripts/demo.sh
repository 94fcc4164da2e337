#!/usr/bin/env bash
# vmio's main job on its embedded defaults: build the guest, run the default campaign (hitachi-nvme-2016's
# configurations, examples/demo.toml), write the report. Called by `make demo` after the system packages,
# .venv and `vmio qemu add 10.0` are in place. Re-running resumes the campaign. At its end it prints the
# wall time it took: from VMIO_DEMO_START (seconds since the epoch; `make demo` sets it when make starts, so
# the installs count) or else from this script's start.
set -euo pipefail
began=${VMIO_DEMO_START:-$(date +%s)}
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

echo "== running $SPEC (hitachi-nvme-2016: bare, 1fio/vm x N, N fio/vm, + raw device, + iothread, two backings)"
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
took=$(( $(date +%s) - began ))
echo "demo: took $(( took / 60 )) min $(( took % 60 )) s on this host ($(nproc) cores; its accelerator is under == accelerator above)"
exit "$status"
