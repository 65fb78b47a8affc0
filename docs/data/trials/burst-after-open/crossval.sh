#!/bin/bash
# Each kept full study (its records and calibrations): refit every site's profile with a
# checkout's fit, validate the model on the study's replay and load points with those profiles,
# print the summary lines. Writes into /tmp/cv-TAG/.
# usage: docs/data/trials/http-request-time/crossval.sh PATH/TO/.venv/bin/instore TAG
set -euo pipefail
INSTORE=$(realpath "$1"); TAG=$2
cd "$(dirname "$0")/.."
for d in study-83fec17 study-0c713ed study-323eb56 study-9fa2734 study-a5fca5f study-b7863c0 ../reference/run-logs; do
  out=/tmp/cv-$TAG/$(basename "$(dirname "$d/x")")-$(basename "$d"); rm -rf "$out"; mkdir -p "$out"
  for s in lan-hdd lan-ssd wan; do mkdir -p "$out/$s"
    xz -dc "$d/$s-records.jsonl.xz" > "$out/$s/records.jsonl"
    cp "$d/profiles/$s-calibration.json" "$out/$s/calibration.json"
    "$INSTORE" predict --fit "$s" --results "$out" > /dev/null 2>&1 || echo "fit $s failed in $d"
  done
  (cd "$d" && "$INSTORE" predict --validate --results "$out" --traces traces 2>/dev/null > "$out/validate.txt")
  echo "$d: $(grep '^replay and load' "$out/validate.txt") | $(grep '^held out' "$out/validate.txt")"
done
