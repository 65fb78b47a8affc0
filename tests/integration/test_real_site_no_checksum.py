"""A site's XRootD without ``xrootd.chksum adler32`` (as many run it): it reports no adler32, so
`instore site upload` and the preflight compute one by reading the copy back through the
endpoint, say so in one line, and still verify: a copy changed on the server's disk is caught
in one line, by root:// and by http alike."""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.site import upload
from instore.site.config import load_site
from instore.storage import storage_for

from tests.conftest import write_real_site
from tests.integration.grid_site import Server, needs_tools, readable_tmp
from tests.integration.grid_site import xrootd_server as serve

pytestmark = pytest.mark.integration
NOTE = "checksum: the endpoint reports none; computed by reading the copy back"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    needs_tools()
    with readable_tmp("instore-nochksum-") as root, serve(root / "se", chksum=False) as running:
        yield running


@pytest.fixture
def plain_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No credential: the server asks for none."""
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "X509_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("X509_USER_PROXY", str(tmp_path / "no-proxy"))
    monkeypatch.setenv("XRD_CONNECTIONRETRY", "1")


def _site(server: Server, tmp_path: Path, sub: str) -> Path:
    return write_real_site(tmp_path / "site.yaml", {
        "xrootd": f"xroot://localhost:{server.port}//{sub}/x/{{file}}",
        "http": f"http://localhost:{server.http_port}//{sub}/h/{{file}}",
    })  # fmt: skip


def test_the_endpoint_reports_no_adler32(server: Server, plain_env: None, tmp_path: Path) -> None:
    (server.data / "probe.bin").write_bytes(b"x" * 10)
    for url in (f"root://localhost:{server.port}//probe.bin",
                f"http://localhost:{server.http_port}//probe.bin"):  # fmt: skip
        assert storage_for(url).stat(url) == 10
        assert storage_for(url).reported_adler32(url) is None, url


def test_upload_and_preflight_verify_by_reading_back(
    server: Server,
    plain_env: None,
    small_files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    local = small_files["ordered"]
    size = local.stat().st_size
    site_file = _site(server, tmp_path, "ok")
    record = upload.upload(load_site(site_file), [local])
    assert {(f["protocol"], f["action"], f["checksum_from"]) for f in record["files"]} == {  # type: ignore[index]
        ("xrootd", "copied", "read back"), ("http", "copied", "read back")}  # fmt: skip
    assert (server.data / "ok" / "x" / local.name).read_bytes() == local.read_bytes()
    lines = upload.notes(record)
    assert [line.split(" ", 1)[0] for line in lines] == ["xrootd", "http"]
    assert all(line.endswith(f"{NOTE} ({size / 1e6:.1f} MB)") for line in lines), lines
    again = upload.upload(load_site(site_file), [local])
    assert {f["action"] for f in again["files"]} == {"present"}  # type: ignore[index]

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(local, data / local.name)
    code = main(["site", "preflight", str(site_file), "--data", str(data), "--all"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0, err
    assert err[-1] == "site local: ok"
    notes = [line for line in err if NOTE in line]
    assert len(notes) == 2 and all(f"({size / 1e6:.1f} MB)" in line for line in notes), err
    print(json.dumps({"size_mb": size / 1e6, "notes": notes}))


def test_a_copy_changed_on_the_servers_disk_is_caught_in_one_line(
    server: Server, plain_env: None, small_files: dict[str, Path], tmp_path: Path
) -> None:
    local = small_files["ordered-r1"]
    site = load_site(_site(server, tmp_path, "bad"))
    upload.upload(site, [local])
    for sub, scheme in (("x", "xroot"), ("h", "http")):
        copy = server.data / "bad" / sub / local.name
        good = copy.read_bytes()
        changed = good[:1000] + bytes([good[1000] ^ 0xFF]) + good[1001:]  # one byte, same size
        copy.write_bytes(changed)
        with pytest.raises(InstoreError) as err:
            upload.upload(site, [local])
        line = str(err.value)
        assert "\n" not in line
        assert line.startswith(f"adler32 of {scheme}://localhost:"), line
        assert f"is 0x{zlib.adler32(changed):08x} but the local file's is " in line
        assert line.endswith(upload.foreign(site.name))
        copy.write_bytes(good)
