#!/usr/bin/env bash
# The site admin's trial again on the final code (issue 38): a new user who is not root, rootless
# podman, the grid site of the tests (GSI on root://, XrdHttp over TLS), docs/own-site.md's steps:
# make setup, the site file, the dry run, the quick profile; this time with an XCache in front of
# root:// (the user's own, GSI to the origin) and its purge command, so caching can run (10 of 12).
set -uo pipefail
T=/work/notes/s17/trial
U=siteadmin
id $U >/dev/null 2>&1 || useradd -m $U
UID_SA=$(id -u $U)
H=/home/$U
git -C /work/main bundle create /tmp/s17-main.bundle main 2>/dev/null; chmod 644 /tmp/s17-main.bundle
(cd /work/main && PYTHONPATH=/work/main .venv/bin/python docs/data/trials/grid-site-podman/serve.py $T/site > $T/serve.log 2>&1 & echo $! > $T/serve.pid)
for i in $(seq 90); do [ -f $T/site/site.env ] && break; sleep 1; done
. $T/site/site.env
rm -rf /tmp/s17-certs && cp -r "$CERTDIR" /tmp/s17-certs && chmod -R a+rX /tmp/s17-certs
install -o $U -m 600 "$PROXY" /tmp/x509up_u$UID_SA
CACHE_PORT=21094
{ cat $T/site/site.env; echo CACHE_PORT=$CACHE_PORT; } > $T/site.env
install -o $U -m 644 $T/site.env $H/site.env
install -o $U -m 755 $T/xcache-start.sh $T/xcache-purge.sh $H/
install -o $U -m 644 $T/site-file.sh $H/site-file.sh
as_user() {  # a login-like shell: no XDG_RUNTIME_DIR, the CA directory exported
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/s17-certs $(cat /work/notes/s13/trial.env) bash -c "$1"
}
as_user "rm -rf ~/instore && git clone -q -b main /tmp/s17-main.bundle ~/instore && cd ~/instore && git log --oneline -1" > $T/clone.log 2>&1
as_user "cd ~/instore && /usr/bin/time -f '%e s' make setup" > $T/setup.log 2>&1
as_user "cd ~/instore && bash ~/site-file.sh ~/site.env" > $T/site-file.log 2>&1
as_user "mkdir -p ~/xcache && echo $ROOT_PORT > ~/xcache/origin_port && echo $CACHE_PORT > ~/xcache/port && ~/xcache-start.sh $ROOT_PORT $CACHE_PORT" > $T/xcache-start.log 2>&1
as_user 'cd ~/instore && make study DRY_RUN=1 CONFIG="sites=[mysite] runtime=podman"' > $T/dry-run.log 2>&1
as_user 'cd ~/instore && /usr/bin/time -f "%e s" make study PROFILE=quick CONFIG="sites=[mysite] runtime=podman"' > $T/quick.log 2>&1; echo "quick rc=$?" >> $T/quick.log
echo done > $T/done
