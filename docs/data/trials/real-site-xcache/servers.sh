#!/bin/bash
# A site as a site runs it, for the caching section on a real site: an XRootD origin with
# XrdHttp, and an XCache (xrootd + pfc) in front of it, on fixed localhost ports.
# usage: servers.sh start|stop|purge
set -euo pipefail
T=/tmp/trial-xc
ORIGIN=21094 HTTP=28080 CACHE=21095
start_origin() {
  mkdir -p $T/origin/data/instore $T/origin/run
  chown -R xrootd: $T/origin
  cat > $T/origin/xrootd.cfg <<CFG
xrd.port $ORIGIN
all.export /
oss.localroot $T/origin/data
all.adminpath $T/origin/run
all.pidpath $T/origin/run
xrootd.chksum adler32
xrd.protocol XrdHttp:$HTTP libXrdHttp.so
CFG
  (cd $T/origin && setsid xrootd -R xrootd -c $T/origin/xrootd.cfg -l $T/origin/run/xrootd.log -b -s $T/origin/run/origin.pid </dev/null >/dev/null 2>&1)
}
start_cache() {
  mkdir -p $T/cache/store $T/cache/run
  chown -R xrootd: $T/cache
  cat > $T/cache/xcache.cfg <<CFG
all.export /
xrd.allow host localhost
xrd.port $CACHE
ofs.osslib libXrdPss.so
pss.cachelib libXrdPfc.so
pss.origin localhost:$ORIGIN
oss.localroot $T/cache/store
pfc.blocksize 1024k
pfc.prefetch 0
pfc.ram 1g
all.adminpath $T/cache/run
all.pidpath $T/cache/run
CFG
  (cd $T/cache && setsid xrootd -R xrootd -c $T/cache/xcache.cfg -l $T/cache/run/xcache.log -b -s $T/cache/run/cache.pid </dev/null >/dev/null 2>&1)
}
wait_port() { for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not answer" >&2; return 1; }
stop_pid() { [ -f "$1" ] && kill "$(cat $1)" 2>/dev/null; for i in $(seq 50); do [ -f "$1" ] && kill -0 "$(cat $1)" 2>/dev/null || return 0; sleep 0.1; done; }
case "$1" in
  start) mkdir -p $T; start_origin; wait_port $ORIGIN; start_cache; wait_port $CACHE ;;
  stop) stop_pid $T/cache/run/cache.pid; stop_pid $T/origin/run/origin.pid ;;
  purge) stop_pid $T/cache/run/cache.pid; sleep 0.5; rm -rf $T/cache/store; start_cache; wait_port $CACHE ;;
esac
