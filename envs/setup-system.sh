#!/usr/bin/env bash
# Check the Debian packages of the groups named (envs/apt-packages.txt: site, emulated, test;
# none named: all). As root: install the missing ones with apt-get. Otherwise: one message
# naming everything missing and the command an admin types; nothing missing: no error.
# Usage: envs/setup-system.sh [GROUP...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list="$here/apt-packages.txt"
groups=("$@")
[ ${#groups[@]} -eq 0 ] && mapfile -t groups < <(sed -n 's/^\[\([a-z]*\)\]$/\1/p' "$list")

# The packages of one group: the lines after [GROUP] up to the next [..], without comments.
packages_of() {
  awk -v g="[$1]" '/^\[/ {on = ($0 == g); next} on && !/^[[:space:]]*(#|$)/ {print $1}' "$list"
}

wanted=()
for g in "${groups[@]}"; do
  mapfile -t these < <(packages_of "$g")
  if [ ${#these[@]} -eq 0 ]; then
    echo "instore: no package group '$g' in $list" >&2
    exit 2
  fi
  wanted+=("${these[@]}")
done

if ! command -v dpkg-query >/dev/null; then
  echo "instore: not a Debian system, so the packages cannot be checked here; what they provide" \
       "must be installed (${groups[*]}): ${wanted[*]}" >&2
  exit 0
fi

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# The grid CAs are no Debian package: say where they come from when a site study may need them.
if [[ " ${groups[*]} " == *" site "* ]] && [ ! -d "${X509_CERT_DIR:-/etc/grid-security/certificates}" ]; then
  echo "instore: note: no grid CA directory (${X509_CERT_DIR:-/etc/grid-security/certificates});" \
       "a site using X.509 needs the IGTF CA bundle, which is not a Debian package: install" \
       "ca-policy-egi-core from https://repository.egi.eu/sw/production/cas/1/current/ (or" \
       "unpack https://dist.igtf.net/distribution/current/accredited/) and export X509_CERT_DIR" >&2
fi

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "instore: missing Debian packages (${groups[*]}): ${missing[*]} -- ask an admin to run:" \
       "apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "instore: installing Debian packages (${groups[*]}): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
