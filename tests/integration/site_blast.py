"""Test helper run inside a storage namespace: send zeros to the first client for a while.

A raw TCP source isolates the tbf limit from server and disk: what arrives is the link rate.
Usage: python site_blast.py PORT SECONDS
"""

import socket
import sys
import time

port, seconds = int(sys.argv[1]), float(sys.argv[2])
with socket.create_server(("0.0.0.0", port)) as server:
    print("listening", flush=True)
    conn, _ = server.accept()
    chunk = bytes(1 << 20)
    deadline = time.monotonic() + seconds
    with conn:
        while time.monotonic() < deadline:
            conn.sendall(chunk)
