"""A server we stop is gone, port and all, before the next one starts. XRootD is threaded: its
main thread can end (the process's /proc stat then says zombie) while its other threads still
run and hold the listening socket. Counted gone at that moment, a restarted XCache found its
port in use and exited, and the warm-up read through it waited XRootD's 120-s connection window
(test_site_xcache's warm state took 122 s in the fresh-clone CI of 5e8d005; reproduced by a
loop of cold restarts: "Unable to bind socket to port ...; address already in use"). No root
needed."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.site.emulated.system import alive, stop_pid

# A threaded server whose main thread exits first: a thread holds the listening socket for
# HOLD_S, then ends the process; the main thread leaves through pthread_exit (ctypes lets the
# GIL go before the call), so the process's leader is a zombie while that thread runs.
HOLD_S = 1.5
SERVER = f"""
import ctypes, os, signal, socket, sys, threading, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # its threads shut down in their own time
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
listener.bind(("127.0.0.1", 0))
listener.listen()
print(listener.getsockname()[1], flush=True)
def hold():
    sys.stdin.readline()  # the test says when the main thread may go
    time.sleep({HOLD_S})
    os._exit(0)
threading.Thread(target=hold).start()
ctypes.CDLL(None).pthread_exit(None)
"""
MARKER = "instore-unit-stop-pid"


def _leader_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[str], int]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, MARKER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield proc, port
    finally:
        proc.kill()
        proc.wait()


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_a_process_whose_main_thread_ended_is_alive_while_another_thread_runs(
    server: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = server
    deadline = time.monotonic() + 10
    while _leader_state(proc.pid) != "Z":  # the main thread has gone through pthread_exit
        assert time.monotonic() < deadline, "the main thread never ended"
        time.sleep(0.01)
    assert alive(proc.pid), "its other thread runs and holds the port"
    assert not _port_free(port)
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    proc.wait(timeout=10)
    assert not alive(proc.pid)


def test_a_stopped_server_has_let_its_port_go(server: tuple[subprocess.Popen[str], int]) -> None:
    """stop_pid returns once every thread has ended, so the port is free for its successor."""
    proc, port = server
    deadline = time.monotonic() + 10
    while _leader_state(proc.pid) != "Z":
        assert time.monotonic() < deadline, "the main thread never ended"
        time.sleep(0.01)
    assert proc.stdin is not None
    proc.stdin.write("go\n")  # it ignores SIGTERM: its thread ends the process HOLD_S on
    proc.stdin.flush()
    started = time.monotonic()
    assert stop_pid(proc.pid, MARKER, grace_s=HOLD_S + 5)
    assert _port_free(port), f"stop_pid returned after {time.monotonic() - started:.2f} s"
