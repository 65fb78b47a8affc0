"""Site files: the shipped profiles validate, and every mistake is one line naming file,
field and fix. Real-site preflight: dead endpoints fail with one line each. No root needed."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.site import PreflightError, load_site, open_site
from instore.site.config import SITES_DIR
from instore.site.real import preflight


def write(tmp_path: Path, data: dict, name: str = "site.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def emulated(**changes: object) -> dict:
    data = yaml.safe_load((SITES_DIR / "lan-hdd.yaml").read_text())
    data["name"] = "t-site"
    data.update(changes)
    return data


@pytest.mark.parametrize("name", sorted(p.stem for p in SITES_DIR.glob("*.yaml")))
def test_shipped_sites_validate(name: str) -> None:
    site = load_site(name)
    assert site.name == name
    assert site.protocols


def test_profiles_carry_the_issue_conditions() -> None:
    hdd, ssd, wan = load_site("lan-hdd"), load_site("lan-ssd"), load_site("wan")
    # The issue asks for about 0.2 ms; 0.5 ms is what the user-space delayer holds to 20% on a
    # loaded 2-core host (0.2 ms measured 0.30 ms in a full test run). Still a LAN round trip.
    assert hdd.network.bandwidth_mbit == 1000 and 0.1 <= hdd.network.rtt_ms <= 1.0
    assert hdd.disk.read_iops == 150 and 100 <= hdd.disk.read_mbps <= 150
    assert ssd.network.bandwidth_mbit == 10000 and ssd.disk.read_iops is None
    assert wan.network.bandwidth_mbit == 100 and 20 <= wan.network.rtt_ms <= 30


def error_of(tmp_path: Path, data: dict) -> str:
    with pytest.raises(InstoreError) as info:
        load_site(write(tmp_path, data))
    text = str(info.value)
    assert "\n" not in text
    assert str(tmp_path / "site.yaml") in text
    return text


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    data = emulated()
    data["network"]["bandwidth_mbit"] = "fast"
    assert "network.bandwidth_mbit" in error_of(tmp_path, data)


def test_unknown_protocol_lists_the_valid_ones(tmp_path: Path) -> None:
    text = error_of(tmp_path, emulated(protocols=["posix", "gridftp"]))
    assert "protocols.1" in text and "xrootd" in text


def test_missing_field_says_to_add_it(tmp_path: Path) -> None:
    data = emulated()
    del data["workers"]
    text = error_of(tmp_path, data)
    assert "workers" in text and "add the missing field" in text


def test_real_site_must_not_carry_emulation(tmp_path: Path) -> None:
    data = {"name": "r", "kind": "real", "workers": {"nodes": 1, "cores": 1},
            "endpoints": {"posix": "/data/{file}"}, "disk": {"size_mb": 100}}  # fmt: skip
    assert "remove the fields" in error_of(tmp_path, data)


def test_emulated_site_must_not_carry_endpoints(tmp_path: Path) -> None:
    text = error_of(tmp_path, emulated(endpoints={"posix": "/data/{file}"}))
    assert "real sites take endpoints" in text and "remove the fields" in text


def test_kind_hint_does_not_replace_the_missing_field_fix(tmp_path: Path) -> None:
    """The emulated/real hint belongs to the forbidden fields only, not to missing ones."""
    data = emulated()
    del data["network"]
    text = error_of(tmp_path, data)
    assert "network" in text and "add the missing field" in text


def test_unknown_field_is_named_with_a_guess(tmp_path: Path) -> None:
    text = error_of(tmp_path, emulated(protocol=["posix"]))
    assert "field protocol:" in text and "did you mean protocols?" in text


def test_endpoint_without_file_placeholder_is_refused(tmp_path: Path) -> None:
    data = {"name": "r", "kind": "real", "workers": {"nodes": 1, "cores": 1},
            "endpoints": {"xrootd": "root://host:1094//data/"}}  # fmt: skip
    assert "endpoints.xrootd" in error_of(tmp_path, data)


def test_stage_in_source_must_be_offered(tmp_path: Path) -> None:
    text = error_of(tmp_path, emulated(protocols=["posix", "stage-in"]))
    assert "stage_in.source" in text


def test_bad_yaml_and_unknown_site(tmp_path: Path) -> None:
    bad = tmp_path / "site.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(InstoreError, match="not valid YAML"):
        load_site(bad)
    with pytest.raises(InstoreError, match="lan-hdd"):
        load_site("no-such-site")


def closed_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dead_site(tmp_path: Path) -> Path:
    port = closed_port()
    return write(tmp_path, {
        "name": "dead", "kind": "real", "workers": {"nodes": 1, "cores": 1},
        "timeouts": {"preflight_s": 2},
        "endpoints": {
            "xrootd": f"root://127.0.0.1:{port}//store/{{file}}",
            "http": f"http://127.0.0.1:{port}/store/{{file}}",
            "posix": str(tmp_path / "missing" / "{file}"),
            "stage-in": "root://host.invalid:1094//store/{file}",
        },
    })  # fmt: skip


def test_preflight_gives_one_line_per_dead_endpoint(tmp_path: Path) -> None:
    site = load_site(dead_site(tmp_path))
    lines = preflight(site)
    assert len(lines) == 4
    assert {line.split()[0] for line in lines} == {"xrootd", "http", "posix", "stage-in"}
    assert all("\n" not in line for line in lines)
    assert any("refused" in line for line in lines)
    assert any("not a directory" in line for line in lines)


def test_open_site_refuses_before_measuring(tmp_path: Path) -> None:
    with (
        pytest.raises(PreflightError) as info,
        open_site(dead_site(tmp_path), results=tmp_path / "results"),
    ):
        pytest.fail("the body must not run when preflight fails")
    assert len(info.value.lines) == 4
    assert "\n" not in str(info.value)


def test_reachable_real_site_opens(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        path = write(tmp_path, {
            "name": "alive", "kind": "real", "workers": {"nodes": 1, "cores": 1},
            "endpoints": {"xrootd": f"root://127.0.0.1:{port}//store/{{file}}",
                          "posix": str(tmp_path / "store" / "{file}")},
        })  # fmt: skip
        with open_site(path, results=tmp_path / "results") as live:
            assert live.url("xrootd", "a.root") == f"root://127.0.0.1:{port}//store/a.root"
            assert live.protocols == ["posix", "xrootd"]
            assert live.job_env() == {}
            assert live.conditions()["kind"] == "real"
            with pytest.raises(InstoreError):
                live.set_block_readahead(512)
            with pytest.raises(InstoreError, match="does not offer"):
                live.url("http", "a.root")


def test_site_down_takes_the_path_site_up_took(tmp_path: Path) -> None:
    """`site up PATH` brings a site up under the name its file gives; `site down PATH` must
    find that name, not look for a site called PATH and quietly remove nothing."""
    from instore.site.config import site_name

    data = yaml.safe_load(load_site("wan").path.read_text())
    data["name"] = "wan-rtt50"
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    assert site_name(str(path)) == "wan-rtt50"
    assert site_name("lan-hdd") == "lan-hdd"
