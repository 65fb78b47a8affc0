#!/usr/bin/env bash
# Install the Debian packages listed in envs/apt-packages.txt that are missing.
# As root: installs them with apt-get. Otherwise: one message naming what is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v '^\s*#' "$here/apt-packages.txt" | grep -v '^\s*$')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "instore: missing Debian packages: ${missing[*]} -- ask an admin to run: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "instore: installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
