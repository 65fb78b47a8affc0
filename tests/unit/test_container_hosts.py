"""The worker's own addresses named for the payload's container (container/hosts.py)."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
from instore.container import hosts
from instore.container.runtime import launch


def _addr(family: int, address: str) -> SimpleNamespace:
    return SimpleNamespace(family=family, address=address)


@pytest.fixture
def interfaces(monkeypatch):
    table = {
        "lo": [_addr(socket.AF_INET, "127.0.0.1"), _addr(socket.AF_INET6, "::1")],
        "eth0": [
            _addr(socket.AF_INET, "192.0.2.2"),
            _addr(socket.AF_INET6, "fd00::2"),
            _addr(socket.AF_INET6, "fe80::fc:ff:fe00:1%eth0"),
            _addr(socket.AF_PACKET, "02:00:00:00:00:01"),
        ],
        "instore-679c51w": [_addr(socket.AF_INET, "10.213.226.1")],
    }
    monkeypatch.setattr(hosts.psutil, "net_if_addrs", lambda: table)


def test_ipv4_addresses_are_named_also_in_their_mapped_form(interfaces):
    entries = hosts.own_address_entries()
    assert ("instore-worker-eth0", "192.0.2.2") in entries
    assert ("instore-worker-eth0", "::ffff:192.0.2.2") in entries
    assert ("instore-worker-instore-679c51w", "::ffff:10.213.226.1") in entries


def test_loopback_and_link_layer_are_left_alone_and_scopes_dropped(interfaces):
    addresses = [a for _, a in hosts.own_address_entries()]
    assert "127.0.0.1" not in addresses and "::1" not in addresses
    assert "fe80::fc:ff:fe00:1" in addresses
    assert "02:00:00:00:00:01" not in addresses
    assert not any("%" in a for a in addresses)


def test_podman_gets_one_add_host_per_entry(interfaces):
    from tests.unit.test_container_runtime import PODMAN

    argv = launch(PODMAN, ["true"]).argv
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--add-host"]
    assert "instore-worker-eth0:::ffff:192.0.2.2" in pairs
    assert len(pairs) == len(hosts.own_address_entries())
    assert argv.index("--add-host") < argv.index("localhost/instore-payload:abc")
