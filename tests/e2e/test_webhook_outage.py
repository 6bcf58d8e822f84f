#!/usr/bin/env python3
"""The receiver is down, then comes back: every incident revision arrives, none twice (by webhook-id = id-revision),
in order; retries and the spool are visible in the metrics while it is down."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

N = 20


def test(work):
    port = tl.free_port()  # nothing listens yet: connections are refused
    config = tl.sinks_yaml([{
        "name": "flaky", "url": "http://127.0.0.1:%d/hook" % port, "format": "json",
        "timeout": "2s", "backoff_initial": "100ms", "backoff_max": "500ms",
    }])
    fl = tl.boom_daemon(work, config)
    work.append(*["BOOM %d" % i for i in range(N)])
    wait_until(lambda: (fl.metric("faultline_webhook_retries_total", sink="flaky") or 0) >= 3, 30,
               what="retries while the receiver is down")
    check((fl.metric("faultline_spool_bytes", sink="flaky") or 0) > 0, "spool is empty while the receiver is down")
    check((fl.metric("faultline_webhook_deliveries_total", sink="flaky", result="network_error") or 0) >= 1,
          "network errors not counted")
    wait_until(lambda: fl.metric("faultline_incidents_total", rule="e2e-boom") == N, 20, what="all incidents raised")

    # A receiver that fails the first attempt of some deliveries with 500 as well.
    rx = tl.Receiver(port=port, work=work)
    seen_500 = set()

    def flaky(req):
        wid = req["headers"].get("webhook-id")
        if wid and wid.endswith("-1") and int(json.loads(req["body"])["fields"]["n"]) % 5 == 0 and wid not in seen_500:
            seen_500.add(wid)
            return 500
        return 200

    rx.status_fn = flaky
    rx.start()
    wait_until(lambda: len(rx.received()) >= N + len(seen_500), 30, what="every delivery")
    wait_until(lambda: fl.metric("faultline_spool_bytes", sink="flaky") == 0, 20, what="the spool to drain")
    accepted = [r["headers"]["webhook-id"] for r in rx.received() if r["status"] == 200]
    ns = [int(json.loads(r["body"])["fields"]["n"]) for r in rx.received()]
    check(sorted(set(ns)) == list(range(N)), "missing incidents: %s" % sorted(set(range(N)) - set(ns)))
    check(len(accepted) == len(set(accepted)) == N, "duplicates or gaps among accepted deliveries: %d accepted, "
          "%d unique" % (len(accepted), len(set(accepted))))
    check(len(seen_500) == 4, "the receiver refused %d deliveries, expected 4" % len(seen_500))
    # Order: deliveries to one sink keep the order of the incidents.
    order = [int(json.loads(r["body"])["fields"]["n"]) for r in rx.received()]
    firsts = []
    for n in order:
        if n not in firsts:
            firsts.append(n)
    check(firsts == list(range(N)), "out of order: %s" % firsts)
    check(fl.metric("faultline_spool_dropped_total", sink="flaky") == 0, "deliveries were dropped")
    check(fl.stop() == 0, "faultline exited non-zero")


if __name__ == "__main__":
    tl.main(test)
