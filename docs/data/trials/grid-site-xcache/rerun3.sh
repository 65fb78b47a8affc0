#!/usr/bin/env bash
# After the caching page's fix: pull main, measure again from clean results, the quick profile.
set -uo pipefail
T=/work/notes/s17/trial
U=siteadmin; H=/home/$U
git -C /work/main bundle create /tmp/s17-main.bundle main 2>/dev/null; chmod 644 /tmp/s17-main.bundle
as_user() {
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/s17-certs $(cat /work/notes/s13/trial.env) bash -c "$1"
}
as_user "cd ~/instore && git pull -q /tmp/s17-main.bundle main && git log --oneline -1 && make clean-results" > $T/pull3.log 2>&1
as_user 'cd ~/instore && /usr/bin/time -f "%e s" make study PROFILE=quick CONFIG="sites=[mysite] runtime=podman"' > $T/quick3.log 2>&1; echo "quick rc=$?" >> $T/quick3.log
echo done > $T/done4
