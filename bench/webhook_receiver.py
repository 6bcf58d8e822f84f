#!/usr/bin/env python3
"""A webhook receiver on 127.0.0.1 that timestamps every delivery (for bench/run_all.py's latency measurement).

  webhook_receiver.py PORT_FILE OUT_FILE

Binds 127.0.0.1:0, writes the port to PORT_FILE, then for every POST appends one line to OUT_FILE:
`<CLOCK_MONOTONIC ns at arrival><TAB><fields.probe or -><TAB><rule><TAB><webhook-id>` and answers 204.
The arrival time is taken when the request line and headers have been read, before the body; CLOCK_MONOTONIC is
one clock for every process of the machine, so it compares with the writer's timestamps. Runs until killed.
Python 3 standard library only.
"""
from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    out = None

    def do_POST(self):  # noqa: N802
        t = time.monotonic_ns()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        probe, rule = "-", "-"
        try:
            doc = json.loads(body)
            rule = doc.get("rule", "-")
            fields = doc.get("fields") or {}
            probe = str(fields.get("probe", "-"))
        except ValueError:
            pass
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
        Handler.out.write("%d\t%s\t%s\t%s\n" % (t, probe, rule, self.headers.get("webhook-id", "-")))
        Handler.out.flush()

    def log_message(self, *args):  # quiet
        pass


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    Handler.out = open(sys.argv[2], "a", encoding="utf-8")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
