#!/usr/bin/env bash
# Issue 38's target on the site with the user's XCache, the quick profile and then the full one:
# a new user who is not root, rootless podman, a fresh clone of main, docs/own-site.md's steps
# (make setup, the site file, the dry run, `make study`). Run as root from /work/main.
#   T: where the logs go (default /work/notes/s18/trial)
#   TRIAL_ENV: a file of VAR=value words the user's shell gets (the machine's pip settings)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
T=${T:-/work/notes/s18/trial}
TRIAL_ENV=${TRIAL_ENV:-/work/notes/s18/trial.env}
U=siteadmin
mkdir -p "$T"
id $U >/dev/null 2>&1 || useradd -m $U
UID_SA=$(id -u $U)
H=/home/$U
git -C /work/main bundle create /tmp/trial-main.bundle main 2>/dev/null; chmod 644 /tmp/trial-main.bundle
(cd /work/main && PYTHONPATH=/work/main exec .venv/bin/python docs/data/trials/grid-site-podman/serve.py $T/site > $T/serve.log 2>&1) & echo $! > $T/serve.pid  # the server itself: its SIGTERM stops the site
for i in $(seq 90); do [ -f $T/site/site.env ] && break; sleep 1; done
. $T/site/site.env
rm -rf /tmp/trial-certs && cp -r "$CERTDIR" /tmp/trial-certs && chmod -R a+rX /tmp/trial-certs
install -o $U -m 600 "$PROXY" /tmp/x509up_u$UID_SA
CACHE_PORT=21094
{ cat $T/site/site.env; echo CACHE_PORT=$CACHE_PORT; } > $T/site.env
install -o $U -m 644 $T/site.env $H/site.env
install -o $U -m 755 "$HERE/xcache-start.sh" "$HERE/xcache-purge.sh" $H/
install -o $U -m 644 "$HERE/site-file.sh" $H/site-file.sh
as_user() {  # a login-like shell: no XDG_RUNTIME_DIR, the CA directory exported
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/trial-certs $(cat "$TRIAL_ENV") bash -c "$1"
}
as_user "voms-proxy-info -file /tmp/x509up_u$UID_SA -timeleft" > $T/proxy-timeleft.log 2>&1
as_user "rm -rf ~/instore && git clone -q -b main /tmp/trial-main.bundle ~/instore && cd ~/instore && git log --oneline -1" > $T/clone.log 2>&1
as_user "cd ~/instore && /usr/bin/time -f '%e s' make setup" > $T/setup.log 2>&1
as_user "cd ~/instore && bash ~/site-file.sh ~/site.env" > $T/site-file.log 2>&1
as_user "mkdir -p ~/xcache && echo $ROOT_PORT > ~/xcache/origin_port && echo $CACHE_PORT > ~/xcache/port && ~/xcache-start.sh $ROOT_PORT $CACHE_PORT" > $T/xcache-start.log 2>&1
echo ready > $T/ready
[ -n "${SETUP_ONLY:-}" ] && exit 0
# the quick run under its own label (results/runs/quick/): the full run's results stay its own
for profile in quick full; do
  label=$([ $profile = quick ] && echo " run=quick")
  as_user "cd ~/instore && make study DRY_RUN=1 PROFILE=$profile CONFIG=\"sites=[mysite] runtime=podman$label\"" > $T/dry-run-$profile.log 2>&1
  as_user "cd ~/instore && /usr/bin/time -f '%e s' make study PROFILE=$profile CONFIG=\"sites=[mysite] runtime=podman$label\"" > $T/$profile.log 2>&1
  echo "$profile rc=$?" >> $T/$profile.log
done
echo done > $T/done
