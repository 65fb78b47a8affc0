#!/usr/bin/env bash
# The trial's user part again on main after the XCache fixes (the grid site and the XCache stay
# up): a fresh clone, make setup, the site file, the XCache emptied, the dry run, the quick profile.
set -uo pipefail
T=/work/notes/s17/trial
U=siteadmin; UID_SA=$(id -u $U); H=/home/$U
git -C /work/main bundle create /tmp/s17-main.bundle main 2>/dev/null; chmod 644 /tmp/s17-main.bundle
as_user() {
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/s17-certs $(cat /work/notes/s13/trial.env) bash -c "$1"
}
as_user "rm -rf ~/instore && git clone -q -b main /tmp/s17-main.bundle ~/instore && cd ~/instore && git log --oneline -1" > $T/clone.log 2>&1
as_user "cd ~/instore && /usr/bin/time -f '%e s' make setup" > $T/setup.log 2>&1
as_user "cd ~/instore && bash ~/site-file.sh ~/site.env" > $T/site-file.log 2>&1
as_user "~/xcache-purge.sh && du -sb ~/xcache/store" > $T/purge.log 2>&1
as_user 'cd ~/instore && make study DRY_RUN=1 CONFIG="sites=[mysite] runtime=podman"' > $T/dry-run.log 2>&1
as_user 'cd ~/instore && /usr/bin/time -f "%e s" make study PROFILE=quick CONFIG="sites=[mysite] runtime=podman"' > $T/quick.log 2>&1; echo "quick rc=$?" >> $T/quick.log
echo done > $T/done2
