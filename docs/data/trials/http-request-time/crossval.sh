#!/bin/bash
# Each kept full study (its records and calibrations): refit every site's profile with a
# checkout's fit, validate the model on the study's replay and load points with those profiles,
# print the summary lines. Writes into /tmp/cv-TAG/. RUN: a kept study's directory under
# docs/data/trials (default: the six of 2026-12-02's first trials; add study-83fec17 for seven).
# usage: docs/data/trials/http-request-time/crossval.sh PATH/TO/.venv/bin/instore TAG [RUN ...]
set -euo pipefail
INSTORE=$(realpath "$1"); TAG=$2; shift 2
cd "$(dirname "$0")/.."
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(study-0c713ed study-323eb56 study-9fa2734 study-a5fca5f study-b7863c0 ../reference/run-logs)
for d in "${runs[@]}"; do
  out=/tmp/cv-$TAG/$(basename "$(dirname "$d/x")")-$(basename "$d"); rm -rf "$out"; mkdir -p "$out"
  for s in lan-hdd lan-ssd wan; do mkdir -p "$out/$s"
    xz -dc "$d/$s-records.jsonl.xz" > "$out/$s/records.jsonl"
    cp "$d/profiles/$s-calibration.json" "$out/$s/calibration.json"
    "$INSTORE" predict --fit "$s" --results "$out" > /dev/null 2>&1 || echo "fit $s failed in $d"
  done
  (cd "$d" && "$INSTORE" predict --validate --results "$out" --traces traces 2>/dev/null > "$out/validate.txt")
  echo "$d: $(grep '^replay and load' "$out/validate.txt") | $(grep '^held out' "$out/validate.txt")"
done
