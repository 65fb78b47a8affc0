#!/usr/bin/env bash
# The trial user's XCache in front of the grid site's root:// (as a node-local site cache):
# XRootD's proxy file cache, GSI to the origin with the user's proxy, open to this host only.
# usage: xcache-start.sh ORIGIN_PORT CACHE_PORT   (run as the trial user; writes ~/xcache/pid)
set -euo pipefail
origin=$1 port=$2 d=$HOME/xcache
mkdir -p "$d/store" "$d/admin" "$d/run"
cat > "$d/xcache.cfg" <<CFG
all.export /
xrd.allow host localhost
xrd.port $port
ofs.osslib libXrdPss.so
pss.cachelib libXrdPfc.so
pss.origin localhost:$origin
oss.localroot $d/store
pfc.blocksize 1024k
pfc.ram 1g
all.adminpath $d/admin
all.pidpath $d/run
CFG
X509_USER_PROXY=${X509_USER_PROXY:-/tmp/x509up_u$(id -u)} setsid xrootd -c "$d/xcache.cfg" \
  -l "$d/xcache.log" -n xcache -b >/dev/null 2>&1 < /dev/null
for i in $(seq 50); do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then break; fi; sleep 0.2
done
pgrep -u "$(id -u)" -f "$d/xcache.cfg" | head -1 > "$d/pid"
echo "xcache on $port, pid $(cat $d/pid)"
