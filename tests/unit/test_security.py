"""Records keep no secrets, and config values never reach a shell."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli import Cli
from tests.conftest import write_real_site

SECRET = "s3cr3t-token-value-do-not-record"


def test_records_carry_no_credentials_or_environment(
    small_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    proxy = tmp_path / "x509up_u0"
    proxy.write_text(f"-----BEGIN CERTIFICATE-----\n{SECRET}\n")
    env = {
        **os.environ,
        "BEARER_TOKEN": SECRET,
        "X509_USER_PROXY": str(proxy),
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "XRD_REQUESTTIMEOUT": "30",
    }
    for engine in ("root", "uproot"):
        proc = cli("read", str(small_files["ordered"]), "--engine", engine, env=env)
        assert proc.returncode == 0, proc.stderr
        assert SECRET not in proc.stdout and str(proxy) not in proc.stdout
        record = json.loads(proc.stdout)
        assert record["provenance"]["env"] == {"XRD_REQUESTTIMEOUT": "30"}, (
            "only named, harmless variables"
        )


def test_shell_metacharacters_in_a_site_file_are_not_executed(tmp_path: Path, cli: Cli) -> None:
    marker = tmp_path / "pwned"
    endpoints = {
        "posix": f"/tmp/$(touch {marker})/{{file}}",
        "xrootd": f"root://127.0.0.1:1;touch {marker}//{{file}}",
        "http": f"http://127.0.0.1:1/`touch {marker}`/{{file}}",
    }
    path = write_real_site(tmp_path / "evil.yaml", endpoints, name="evil")
    proc = cli("site", "preflight", str(path), timeout=600)
    assert proc.returncode != 0
    assert "invalid choice" not in proc.stderr, "the preflight really ran"
    for protocol in ("posix", "xrootd", "http"):
        assert protocol in proc.stdout + proc.stderr, f"preflight reports the {protocol} endpoint"
    assert not marker.exists()
    assert "Traceback" not in proc.stderr


def test_records_keep_the_proxy_subject_and_expiry_never_its_content_or_a_token(
    small_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    from tests.unit.test_credentials import make_proxy

    proxy = make_proxy(tmp_path / "x509up_u0")
    secret_lines = [
        line for line in proxy.read_text().splitlines() if line and not line.startswith("-----")
    ]
    env = {**os.environ, "X509_USER_PROXY": str(proxy), "BEARER_TOKEN": SECRET}
    proc = cli("read", str(small_files["ordered"]), "--engine", "uproot", "--entries", "0.05",
               env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["provenance"]["credential"]["kind"] == "x509+token"
    assert record["provenance"]["credential"]["subject"] == "/DC=test/CN=Test User"
    assert record["provenance"]["credential"]["expires"]
    for text in (proc.stdout, proc.stderr):
        assert SECRET not in text and str(proxy) not in text
        assert not any(line in text for line in secret_lines), "no proxy content"
