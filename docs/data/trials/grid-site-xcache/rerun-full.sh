#!/usr/bin/env bash
# After the stale-cache fix (1b069ef): the user pulls main and reruns the full profile in the
# same checkout (the upload done, the XCache still holding the quick profile's copies).
set -uo pipefail
T=${T:-/work/notes/s18/trial}
TRIAL_ENV=${TRIAL_ENV:-/work/notes/s18/trial.env}
U=siteadmin; H=/home/$U
git -C /work/main bundle create /tmp/trial-main.bundle main 2>/dev/null; chmod 644 /tmp/trial-main.bundle
as_user() {
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/trial-certs $(cat "$TRIAL_ENV") bash -c "$1"
}
as_user "cd ~/instore && git pull -q /tmp/trial-main.bundle main && git log --oneline -1" > $T/pull-full2.log 2>&1
as_user "cd ~/instore && /usr/bin/time -f '%e s' make study CONFIG=\"sites=[mysite] runtime=podman\"" > $T/full2.log 2>&1
echo "full rc=$?" >> $T/full2.log
echo done > $T/done2
