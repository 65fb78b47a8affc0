"""Each protocol's reader and operations, reached through the one scheme -> class table
(``instore.storage.storage_for``): range and vector reads, size, checksum, put, get (stage-in
and cache warming) and listing, for paths, XRootD (a stand-in for its Python client and
tools) and HTTP (a small local server), and the XRootD Python client loads only where a
root:// file is opened by it."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from instore.storage import Checksum, open_reader, storage_for
from instore.storage import xrootd as xrootd_storage
from instore.storage.file import FileReader, FileStorage
from instore.storage.http import HTTPReader, HTTPStorage
from instore.storage.xrootd import XRootDReader, XRootDStorage

DATA = bytes(range(256)) * 40


def test_a_path_reads_ranges_and_is_copied_listed_and_summed(tmp_path: Path) -> None:
    path = tmp_path / "d" / "f.root"
    path.parent.mkdir()
    path.write_bytes(DATA)
    store = storage_for(f"file://{path}")
    assert type(store) is FileStorage and store.copy_tool == "cp"
    reader = open_reader(str(path), 5)
    assert type(reader) is FileReader and reader.size == len(DATA)
    assert reader.read_ranges([(0, 10), (300, 310)]) == [DATA[:10], DATA[300:310]]
    reader.close()
    assert store.stat(str(path)) == len(DATA) and store.stat(str(tmp_path / "no")) is None
    assert store.checksum(str(path)) == Checksum(f"{zlib.adler32(DATA):08x}", "read here")
    store.get(str(path), tmp_path / "staged.root")
    store.put(tmp_path / "staged.root", str(tmp_path / "e" / "g.root"))
    assert (tmp_path / "e" / "g.root").read_bytes() == DATA
    assert store.listdir(str(path.parent), 5) == ["f.root"]
    assert store.probe(str(tmp_path / "no"), 5) == "No such file or directory"


class _Status:
    ok, message = True, ""


class _FakeFile:
    """The ``XRootD.client.File`` calls a reader makes, answered from ``DATA``."""

    calls: ClassVar[list[str]] = []

    def open(self, url: str, timeout: int) -> tuple[_Status, None]:
        return _Status(), None

    def stat(self, timeout: int) -> tuple[_Status, Any]:
        return _Status(), SimpleNamespace(size=len(DATA))

    def read(self, offset: int, size: int, timeout: int) -> tuple[_Status, bytes]:
        self.calls.append("read")
        return _Status(), DATA[offset : offset + size]

    def vector_read(self, chunks: list[tuple[int, int]], timeout: int) -> tuple[_Status, Any]:
        self.calls.append("vector_read")
        found = [SimpleNamespace(buffer=DATA[a : a + n]) for a, n in chunks]
        return _Status(), SimpleNamespace(chunks=found)

    def close(self, timeout: int) -> None:
        self.calls.append("close")


class _FakeFileSystem:
    def __init__(self, host: str) -> None:
        assert host == "xroot://se:1094"

    def dirlist(self, path: str, flags: int, timeout: int) -> tuple[_Status, list[Any]]:
        def entry(name: str, is_dir: bool) -> Any:
            return SimpleNamespace(name=name, statinfo=SimpleNamespace(flags=2 * is_dir))

        return _Status(), [entry("a.root", False), entry("sub", True)]


def test_xrootd_reads_vectors_and_lists_through_its_client(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(File=_FakeFile, FileSystem=_FakeFileSystem)
    monkeypatch.setattr(xrootd_storage, "client", lambda: fake)
    monkeypatch.setitem(sys.modules, "XRootD.client.flags", SimpleNamespace(
        DirListFlags=SimpleNamespace(STAT=1), StatInfoFlags=SimpleNamespace(IS_DIR=2)))  # fmt: skip
    _FakeFile.calls = []
    url = "xroot://se:1094//store/f.root"
    assert type(storage_for(url)) is XRootDStorage and storage_for(url).copy_tool == "xrdcp"
    reader = open_reader(url, 5)
    assert type(reader) is XRootDReader and reader.size == len(DATA)
    assert reader.read_ranges([(0, 4), (100, 104)]) == [DATA[:4], DATA[100:104]]
    assert reader.read_ranges([(7, 9)]) == [DATA[7:9]]
    reader.close()
    assert _FakeFile.calls == ["vector_read", "read", "close"]
    assert storage_for(url).listdir("xroot://se:1094//store/", 5) == ["a.root"]


@pytest.mark.parametrize(
    ("url", "sent"),
    [
        ("root://se//f.root", ["root://se//f.root"]),
        ("davs://se//f.root", ["--allow-http", "https://se//f.root"]),
        ("https://se//f.root", ["--allow-http", "https://se//f.root"]),
    ],
)
def test_remote_files_are_fetched_with_xrdcp(
    url: str, sent: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stage-in and cache warming: xrdcp, which knows https:// but not davs://, and copies
    http(s) only when allowed to (else: "https file protocol is not supported")."""
    argv: list[list[str]] = []

    def run(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        argv.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(xrootd_storage.subprocess, "run", run)
    storage_for(url).get(url, tmp_path / "f.root")
    assert argv == [["xrdcp", "--force", "--silent", "--nopbar", *sent, str(tmp_path / "f.root")]]


class _RangeHandler(BaseHTTPRequestHandler):
    """HEAD, ranged GET (one range or multipart/byteranges), PUT and RFC 3230 digests."""

    stored: ClassVar[dict[str, bytes]] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def _head(self, code: int, length: int, ctype: str = "application/octet-stream") -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Type", ctype)

    def do_HEAD(self) -> None:
        body = self.stored.get(self.path)
        if body is None:
            self._head(404, 0)
        else:
            self._head(200, len(body))
            if self.headers.get("Want-Digest") == "adler32":
                self.send_header("Digest", f"adler32={zlib.adler32(body):08x}")
        self.end_headers()

    def do_GET(self) -> None:
        body = self.stored[self.path]
        ranges = [(int(a), int(b)) for a, b in re.findall(r"(\d+)-(\d+)", self.headers["Range"])]
        if len(ranges) == 1:
            (a, b), out = ranges[0], body[ranges[0][0] : ranges[0][1] + 1]
            self._head(206, len(out))
            self.send_header("Content-Range", f"bytes {a}-{b}/{len(body)}")
        else:
            out = b"".join(b"--X\r\nContent-Range: bytes %d-%d/%d\r\n\r\n%s\r\n"
                           % (a, b, len(body), body[a : b + 1]) for a, b in ranges) + b"--X--"  # fmt: skip
            self._head(206, len(out), "multipart/byteranges; boundary=X")
        self.end_headers()
        self.wfile.write(out)

    def do_PUT(self) -> None:
        self.stored[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
        self._head(201, 0)
        self.end_headers()


@pytest.fixture
def http_server() -> Iterator[str]:
    _RangeHandler.stored = {"/f.root": DATA}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_reads_ranges_in_one_get_and_puts_and_sums(http_server: str, tmp_path: Path) -> None:
    url = f"dav://{http_server}/f.root"  # WebDAV spelling: sent as http://
    store = storage_for(url)
    assert type(store) is HTTPStorage and store.copy_tool == "xrdcp"
    reader = open_reader(url, 5)
    assert type(reader) is HTTPReader and reader.size == len(DATA)
    assert reader.read_ranges([(0, 4), (100, 104), (9000, 9010)]) == [
        DATA[:4], DATA[100:104], DATA[9000:9010]]  # fmt: skip
    assert reader.read_ranges([(5, 8)]) == [DATA[5:8]]
    reader.close()
    assert store.stat(url) == len(DATA) and store.stat(f"dav://{http_server}/no.root") is None
    assert store.checksum(url) == Checksum(f"{zlib.adler32(DATA):08x}")
    (tmp_path / "up.root").write_bytes(DATA[:100])
    store.put(tmp_path / "up.root", f"http://{http_server}/up.root")
    assert _RangeHandler.stored["/up.root"] == DATA[:100]
    assert store.probe(url, 5) is None and store.probe(f"dav://{http_server}/no", 5) == "HTTP 404"


def test_the_xrootd_python_client_loads_only_to_open_a_root_url_with_it() -> None:
    """A root-engine job (``via_root``) and a process that only runs XRootD's tools never load
    the Python client: it and ROOT's crash one process together."""
    code = ("import sys, instore.storage as s, instore.storage.source; "
            "u = 'root://se//f.root'; s.storage_for(u); s.storage_for(u, via_root=True); "
            "s.preload([u, '/f'], via_root=True); print('XRootD' in sys.modules); "
            "s.preload([u]); print('XRootD' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_preloading_a_path_or_http_url_loads_no_xrootd_client() -> None:
    code = (
        "import sys, instore.storage as s; s.preload(['/f', 'https://h/f']); "
        "print('XRootD' in sys.modules, 'instore.storage.http' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
