#!/usr/bin/env bash
# After the upload stopped on the earlier checkout's copies: pull main (with --replace), follow
# the error's fix, then the quick profile again.
set -uo pipefail
T=/work/notes/s17/trial
U=siteadmin; H=/home/$U
git -C /work/main bundle create /tmp/s17-main.bundle main 2>/dev/null; chmod 644 /tmp/s17-main.bundle
as_user() {
  runuser -u $U -- env -i HOME=$H USER=$U LOGNAME=$U PATH=/usr/local/bin:/usr/bin:/bin \
    X509_CERT_DIR=/tmp/s17-certs $(cat /work/notes/s13/trial.env) bash -c "$1"
}
as_user "cd ~/instore && git pull -q /tmp/s17-main.bundle main && git log --oneline -1" > $T/pull.log 2>&1
as_user "cd ~/instore && .venv/bin/instore site upload mysite --replace --no-progress" > $T/upload-replace.log 2>&1; echo "rc=$?" >> $T/upload-replace.log
as_user "du -sb ~/xcache/store" >> $T/upload-replace.log 2>&1
as_user 'cd ~/instore && /usr/bin/time -f "%e s" make study PROFILE=quick CONFIG="sites=[mysite] runtime=podman"' > $T/quick.log 2>&1; echo "quick rc=$?" >> $T/quick.log
echo done > $T/done3
