#!/usr/bin/env bash
# tuning.xcache_purge for the trial: stop the cache, empty its store, start it again (what
# `systemctl restart` after clearing the cache directory would do on a real cache host).
set -euo pipefail
d=$HOME/xcache
pid=$(cat "$d/pid")
kill "$pid"; for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
rm -rf "$d/store"
exec "$(dirname "$0")/xcache-start.sh" "$(cat "$d/origin_port")" "$(cat "$d/port")"
