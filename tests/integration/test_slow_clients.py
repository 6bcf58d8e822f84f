"""Probes are never starved by slow or idle clients: while 200 slowloris connections (a header byte per second,
reconnecting when closed) and 10,000 idle connections are held against the listener, `/healthz` and `/metrics`,
probed every 0.25 s with a 1 s client timeout for about 20 s, answer at least 99 % of the probes within 1 s.

Everything runs on the loopback network: the probes come from 127.0.0.1 (as kubelet and Prometheus come from their
own addresses), the attackers from 127.0.0.2-127.0.0.101 (100 addresses, so that both the per-client limit and the
listener's total are exceeded). The test raises its own RLIMIT_NOFILE (the daemon inherits it) and closes every socket
it opened when it ends."""
import http.client
import os
import resource
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

SLOWLORIS = 200
IDLE = 10_000
PROBE_SECONDS = 20.0
PROBE_EVERY = 0.25
PROBE_TIMEOUT = 1.0
TARGET = 0.99
ATTACKERS = ["127.0.0.%d" % n for n in range(2, 102)]
BIND_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # the port is chosen at connect (4-tuple unique)


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard == resource.RLIM_INFINITY else max(soft, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        raise tl.Skip("RLIMIT_NOFILE hard limit %d < %d needed" % (soft, need))


class Attack:
    """The slowloris and idle clients, on two threads; stop() closes every socket."""

    def __init__(self, port):
        self.port = port
        self.stopping = threading.Event()
        self.idle = []
        self.idle_failed = 0
        self.slow_connects = 0
        self.slow_bytes = 0
        self.threads = [threading.Thread(target=self._hold_idle, daemon=True),
                        threading.Thread(target=self._slowloris, daemon=True)]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)

    def _connect(self, n, blocking=True):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2.0 if blocking else 0)
        try:
            s.setsockopt(socket.IPPROTO_IP, BIND_NO_PORT, 1)
            s.bind((ATTACKERS[n % len(ATTACKERS)], 0))
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            raise
        return s

    def _hold_idle(self):
        try:
            for n in range(IDLE):
                if self.stopping.is_set():
                    break
                try:
                    self.idle.append(self._connect(n))
                except OSError:
                    self.idle_failed += 1
            self.stopping.wait()
        finally:
            for s in self.idle:
                s.close()

    def _slowloris(self):
        header = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000
        conns = {}  # socket -> bytes of the header sent so far

        def open_one():
            try:
                s = self._connect(self.slow_connects)
                s.setblocking(False)
                s.send(header[:23])  # the request line
                conns[s] = 23
                self.slow_connects += 1
            except OSError:
                pass

        try:
            for _ in range(SLOWLORIS):
                open_one()
            next_byte = time.monotonic() + 1.0
            while not self.stopping.is_set():
                poller = select.poll()  # not select(): the descriptors are above FD_SETSIZE
                by_fd = {s.fileno(): s for s in conns}
                for fd in by_fd:
                    poller.register(fd, select.POLLIN)
                ready = poller.poll(100) if by_fd else []
                for fd, _ in ready:  # the server answered or closed it: reconnect
                    s = by_fd[fd]
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        s.close()
                        del conns[s]
                while len(conns) < SLOWLORIS and not self.stopping.is_set():
                    before = len(conns)
                    open_one()
                    if len(conns) == before:
                        break
                if time.monotonic() >= next_byte:
                    next_byte += 1.0
                    for s in list(conns):
                        try:
                            s.send(header[conns[s]:conns[s] + 1])
                            conns[s] += 1
                            self.slow_bytes += 1
                        except OSError:
                            s.close()
                            del conns[s]
        finally:
            for s in conns:
                s.close()


def probe(port, path):
    """True when `path` answered 200 within PROBE_TIMEOUT (connect included), on a new connection."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        res.read()
        return res.status == 200 and time.monotonic() - start <= PROBE_TIMEOUT
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def test(work):
    raise_fd_limit(IDLE + SLOWLORIS + 500)
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    d = tl.Daemon(work).start()
    attack = Attack(d.port)
    work.on_cleanup(attack.stop)
    attack.start()
    answered = {"/healthz": 0, "/metrics": 0}
    sent = {"/healthz": 0, "/metrics": 0}
    t0 = time.monotonic()
    next_probe = t0
    while time.monotonic() - t0 < PROBE_SECONDS:
        for path in answered:
            sent[path] += 1
            answered[path] += probe(d.port, path)
        next_probe += PROBE_EVERY
        time.sleep(max(0.0, next_probe - time.monotonic()))
    held = len(attack.idle)
    attack.stop()
    print("idle connections opened %d (failed %d), slowloris connections %d, header bytes sent %d"
          % (held, attack.idle_failed, attack.slow_connects, attack.slow_bytes))
    for path in answered:
        print("%s answered within %.0f s: %d / %d" % (path, PROBE_TIMEOUT, answered[path], sent[path]))
    check(held + attack.idle_failed == IDLE, "idle clients still connecting at the end: %d" % held)
    check(attack.slow_connects >= SLOWLORIS, "slowloris connections: %d" % attack.slow_connects)
    total, ok = sum(sent.values()), sum(answered.values())
    check(ok >= TARGET * total, "probes answered within 1 s: %d / %d (%s)" % (ok, total, answered))
    check(d.running(), "the daemon died:\n%s" % d.log_text())
    # Still serving normally once the attack is over.
    status, _, _ = d.get("/readyz")
    check(status == 200, "/readyz after the attack: HTTP %s" % status)


if __name__ == "__main__":
    tl.main(test)
