#!/usr/bin/env bash
# A plain site for the trial: Debian's xrootd with XrdHttp, data under /tmp/trial-s10/data,
# run as the xrootd user. start | stop
set -euo pipefail
R=/tmp/trial-s10
case "${1:-}" in
start)
  mkdir -p $R/data $R/run; chown -R xrootd: $R; chmod 755 $R
  cat > $R/xrootd.cfg <<CFG
xrd.port 21094
all.export /
oss.localroot $R/data
all.adminpath $R/run
all.pidpath $R/run
xrd.protocol XrdHttp:28080 libXrdHttp.so
CFG
  cd $R && nohup xrootd -R xrootd -c $R/xrootd.cfg -l $R/xrootd.log > $R/nohup.log 2>&1 &
  sleep 2; xrdfs root://localhost:21094 ls / && echo started;;
stop)
  # the server's own PID file (all.pidpath): xrootd -R forks, so $! is not the server
  kill "$(cat $R/run/xrootd.pid)" && echo stopped;;
*) echo "usage: $0 start|stop"; exit 2;;
esac
