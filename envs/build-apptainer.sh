#!/usr/bin/env bash
# Build Apptainer from its Go module source, unprivileged (--without-suid), into a prefix.
#
#   envs/build-apptainer.sh [PREFIX]      (default: build/apptainer in the checkout)
#
# Skips when `apptainer` is already on PATH (a site's own installation is used as it is) or when
# PREFIX already holds the pinned version. Otherwise: fetches the module from the Go module proxy,
# checks its zip against the hash pinned in envs/apptainer.sum (the module is in no checksum
# database reachable here), extracts that very zip, fetches the dependencies (checked against
# Apptainer's own go.sum), configures, builds and installs, at nice 19. Needs Go >= 1.23 and the
# Debian packages of the "apptainer" block of envs/apt-packages.txt; no root.
# APPTAINER_FORCE=1 builds even when an apptainer is on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
sum_file="$here/apptainer.sum"
prefix=${1:-${APPTAINER_PREFIX:-$root/build/apptainer}}
work=${APPTAINER_WORK:-$root/build/apptainer-src}

read -r module version pinned < <(grep -v '^\s*#' "$sum_file" | grep -v '^\s*$' | head -n 1)
v=${version#v}

if [ "${APPTAINER_FORCE:-0}" != 1 ] && site=$(command -v apptainer); then
  echo "instore: using the apptainer on PATH ($site, $("$site" --version 2>/dev/null || echo 'version unknown')); not building one"
  exit 0
fi
# One build at a time per checkout (make apptainer beside a test session's background build).
mkdir -p "$work"
exec 9>"$work/.lock"
flock 9
if [ -x "$prefix/bin/apptainer" ] && [ "$("$prefix/bin/apptainer" --version 2>/dev/null)" = "apptainer version $v" ]; then
  echo "instore: apptainer $v is already installed in $prefix"
  exit 0
fi

go=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$go" ] || { echo "instore: building apptainer needs Go (>= 1.23), which is not installed -- install it from https://go.dev/dl/ into /usr/local/go" >&2; exit 1; }
for tool in gcc make pkg-config mksquashfs; do
  command -v "$tool" >/dev/null || { echo "instore: building apptainer needs $tool, which is missing -- see the apptainer block of envs/apt-packages.txt (apt-get install as root)" >&2; exit 1; }
done
pkg-config --exists libseccomp || { echo "instore: building apptainer needs libseccomp's headers -- ask an admin to run: apt-get install libseccomp-dev" >&2; exit 1; }

export GOTOOLCHAIN=local GOFLAGS=-modcacherw GOSUMDB=off GOPATH=${GOPATH:-$($go env GOPATH)}
# Apptainer takes its version from `git describe` when its source is inside a git work tree
# (here: this checkout's build/), and from VERSION only outside one: git stops above $work.
export GIT_CEILING_DIRECTORIES=$work
log="$work/build.log"
echo "instore: building apptainer $v into $prefix (log: $log)"

info=$("$go" mod download -json "$module@$version")
zip=$(printf '%s' "$info" | sed -n 's/^\s*"Zip": "\(.*\)",\?$/\1/p')
reported=$(printf '%s' "$info" | sed -n 's/^\s*"Sum": "\(.*\)",\?$/\1/p')
[ -f "$zip" ] || { echo "instore: go mod download gave no zip for $module@$version: $info" >&2; exit 1; }
# The h1: hash recomputed here from the zip's bytes (Go's dirhash: sha256 of the sorted lines
# "<sha256 of the file>  <name>"), so a module cache altered after its download is caught too.
computed=$(python3 - "$zip" <<'EOF'
import base64, hashlib, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    lines = "".join(f"{hashlib.sha256(z.read(n)).hexdigest()}  {n}\n" for n in sorted(z.namelist()))
print("h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode())
EOF
)
if [ "$computed" != "$pinned" ] || [ "$reported" != "$pinned" ]; then
  echo "instore: $module@$version does not match its pinned hash: pinned $pinned, zip $computed, go reported $reported -- the proxy served other source; do not build it (re-pin envs/apptainer.sum only after checking why)" >&2
  exit 1
fi

src="$work/apptainer-$v"
rm -rf "$src" "$work/$module@$version"
python3 -m zipfile -e "$zip" "$work"
mv "$work/$module@$version" "$src"
rm -rf "$work/github.com"
# Module zips keep no file modes, and no .git to derive the version from.
chmod +x "$src/mconfig" "$src"/scripts/* "$src"/makeit/* "$src"/mlocal/*/* 2>/dev/null || true
find "$src" -name '*.sh' -exec chmod +x {} +
echo "$v" > "$src/VERSION"

cd "$src"
{
  GOFLAGS="-mod=mod -modcacherw" nice -n 19 "$go" mod download
  # --without-network: no CNI plugins (16 Go programs, built and linked one by one): the
  # study's jobs share the host's network, as apptainer's default does, and never ask for --net
  PATH="$(dirname "$go"):$PATH" nice -n 19 ./mconfig --without-suid --without-network --prefix="$prefix"
  GOFLAGS="-mod=mod -modcacherw" PATH="$(dirname "$go"):$PATH" nice -n 19 make -C builddir
  PATH="$(dirname "$go"):$PATH" make -C builddir install
} >"$log" 2>&1 || { echo "instore: building apptainer failed -- see the end of $log" >&2; tail -n 20 "$log" >&2; exit 1; }
"$prefix/bin/apptainer" --version
