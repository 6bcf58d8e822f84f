#!/usr/bin/env python3
"""A webhook receiver on 127.0.0.1 that timestamps every delivery (for bench/run_all.py's latency measurement).

  webhook_receiver.py PORT_FILE OUT_FILE

Binds 127.0.0.1:0, writes the port to PORT_FILE, then for every POST appends one line to OUT_FILE:
`<CLOCK_MONOTONIC ns at arrival><TAB><fields.probe or -><TAB><rule><TAB><webhook-id>` and answers 204.
The arrival time is taken when the end of the request headers has been received. CLOCK_MONOTONIC is one clock for
every process of the machine, so it compares with the writer's timestamps. One thread, non-blocking sockets and a
selector (no thread per connection, no http.server parsing on the timed path): connect-to-timestamp costs about
0.1-0.2 ms here (`--calibrate` measures it). Keep-alive connections are served too. Runs until killed.
Python 3 standard library only.
"""
from __future__ import annotations

import json
import os
import selectors
import socket
import sys
import time


def serve(portfile: str, outpath: str) -> None:
    out = open(outpath, "a", encoding="utf-8")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(128)
    srv.setblocking(False)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.replace(portfile + ".tmp", portfile)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ, None)
    bufs: dict = {}
    while True:
        for key, _ in sel.select():
            if key.data is None:
                while True:
                    try:
                        c, _ = srv.accept()
                    except BlockingIOError:
                        break
                    c.setblocking(False)
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    bufs[c] = [b"", 0]  # pending bytes, arrival ns of the current request (0: headers not complete)
                    sel.register(c, selectors.EVENT_READ, True)
                continue
            c = key.fileobj
            try:
                data = c.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionError:
                data = b""
            if not data:
                sel.unregister(c)
                c.close()
                bufs.pop(c, None)
                continue
            st = bufs[c]
            st[0] += data
            while True:
                head_end = st[0].find(b"\r\n\r\n")
                if head_end < 0:
                    break
                if st[1] == 0:
                    st[1] = time.monotonic_ns()
                head = st[0][:head_end].decode("latin-1")
                length, wid = 0, "-"
                for line in head.split("\r\n")[1:]:
                    k, _, v = line.partition(":")
                    k = k.strip().lower()
                    if k == "content-length":
                        length = int(v.strip() or 0)
                    elif k == "webhook-id":
                        wid = v.strip()
                if len(st[0]) < head_end + 4 + length:
                    break
                body = st[0][head_end + 4:head_end + 4 + length]
                st[0] = st[0][head_end + 4 + length:]
                probe, rule = "-", "-"
                try:
                    doc = json.loads(body)
                    rule = doc.get("rule", "-")
                    probe = str((doc.get("fields") or {}).get("probe", "-"))
                except ValueError:
                    pass
                try:
                    c.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass
                out.write("%d\t%s\t%s\t%s\n" % (st[1], probe, rule, wid))
                out.flush()
                st[1] = 0


def calibrate(n: int = 200) -> tuple[float, float]:
    """(p50, p99) ms from connect() to the receiver's timestamp, with a receiver in another process."""
    import subprocess
    import tempfile
    d = tempfile.mkdtemp()
    pf, of = os.path.join(d, "port"), os.path.join(d, "out")
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), pf, of])
    try:
        while not os.path.exists(pf):
            time.sleep(0.01)
        port = int(open(pf).read())
        body = b'{"rule":"calibrate","fields":{"probe":"0"}}'
        sent = []
        for i in range(n):
            t0 = time.monotonic_ns()
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            s.recv(100)
            s.close()
            sent.append(t0)
            time.sleep(0.005)
        arr = [int(line.split("\t")[0]) for line in open(of)]
        d_ms = sorted((a - t) / 1e6 for a, t in zip(arr, sent))
        return d_ms[len(d_ms) // 2], d_ms[min(len(d_ms) - 1, int(len(d_ms) * 0.99))]
    finally:
        p.terminate()
        p.wait()


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1] == "--calibrate":
        p50, p99 = calibrate()
        print("connect -> timestamp: p50 %.3f ms, p99 %.3f ms" % (p50, p99))
        return
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    serve(sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
