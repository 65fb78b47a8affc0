#!/usr/bin/env bash
# config/sites/mysite.yaml from the shipped template, as docs/own-site.md says: name, upload,
# one 2-core node, the grid site's two endpoints, no POSIX mount, and the user's XCache in front
# of root:// with its purge command (tuning.xcache_purge).
set -euo pipefail
. "$1"   # site.env: ROOT_PORT HTTP_PORT CACHE_PORT
python3 - "$ROOT_PORT" "$HTTP_PORT" "$CACHE_PORT" "$HOME" <<'PY'
import re, sys
root, http, cache, home = sys.argv[1:]
s = open("config/sites/example-real.yaml").read()
s = s.replace("name: example-real", "name: mysite")
s = s.replace("upload: false ", "upload: true  ")
s = re.sub(r"  nodes: 4 ", "  nodes: 1 ", s)
s = re.sub(r"  cores: 16 ", "  cores: 2  ", s)
s = re.sub(r"endpoints:\n(  .*\n)+?(?=stage_in)",
           f"endpoints:\n  xrootd: root://localhost:{root}//instore/{{file}}\n"
           f"  http: https://localhost:{http}//instore/{{file}}\n"
           f"  xcache: root://localhost:{cache}//instore/{{file}}\n", s)
s = s.replace("# tuning:", "tuning:").replace(
    "#   xcache_purge: [ssh, xcache.example.org, sudo, /usr/local/bin/xcache-purge]",
    f"  xcache_purge: [{home}/xcache-purge.sh]")
s = re.sub(r"#   block_readahead: .*\n", "", s)
s = re.sub(r"  posix_dir: .*\n", "", s)
open("config/sites/mysite.yaml", "w").write(s)
PY
cat config/sites/mysite.yaml
