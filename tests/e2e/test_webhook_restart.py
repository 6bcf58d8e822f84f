#!/usr/bin/env python3
"""faultline is killed (SIGKILL) with deliveries pending in its spool, and restarted once the receiver is up: the
pending deliveries are sent, each once, and nothing already delivered is sent again."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def test(work):
    port = tl.free_port()
    config = tl.sinks_yaml([{
        "name": "hook", "url": "http://127.0.0.1:%d/hook" % port, "format": "json",
        "timeout": "2s", "backoff_initial": "100ms", "backoff_max": "500ms",
    }])
    # First: one incident delivered normally.
    rx = tl.Receiver(port=port, work=work).start()
    fl = tl.boom_daemon(work, config)
    work.append("BOOM 1")
    wait_until(lambda: len(rx.received()) == 1, 20, what="the first delivery")
    rx.stop()

    # The receiver goes away; more incidents pile up in the spool; faultline dies hard.
    work.append("BOOM 2", "BOOM 3", "BOOM 4", "RECOVERED 1")
    spool = os.path.join(work.state, "spool", "hook")

    def spooled():
        """Deliveries in the spool (a file holds one batch of them)."""
        n = 0
        for f in os.listdir(spool) if os.path.isdir(spool) else []:
            if f.endswith(".json"):
                with open(os.path.join(spool, f)) as fh:
                    n += len(json.load(fh)["deliveries"])
        return n

    wait_until(lambda: spooled() == 4, 20, what="four deliveries in the spool")
    fl.kill9()

    rx2 = tl.Receiver(port=port, work=work).start()
    fl2 = tl.boom_daemon(work, config, name="faultline-2")
    wait_until(lambda: len(rx2.received()) >= 4, 30, what="the pending deliveries after the restart")
    wait_until(lambda: not [f for f in os.listdir(spool) if f.endswith(".json")], 20, what="an empty spool")
    ids = [r["headers"]["webhook-id"] for r in rx2.received()]
    first = rx.received()[0]["headers"]["webhook-id"]
    check(first not in ids, "the delivery acknowledged before the kill was sent again")
    check(len(ids) == len(set(ids)) == 4, "deliveries after restart: %s" % ids)
    got = sorted((json.loads(r["body"])["fields"]["n"], json.loads(r["body"])["status"]) for r in rx2.received())
    check(got == [("1", "resolved"), ("2", "firing"), ("3", "firing"), ("4", "firing")], "payloads: %s" % got)
    # Nothing more arrives (the restarted pipeline's replay of the log, if any, is deduplicated).
    work.append("unrelated line")
    import time
    time.sleep(1.5)
    check(len(rx2.received()) == 4, "extra deliveries: %s" % [r["headers"]["webhook-id"] for r in rx2.received()])
    check(fl2.stop() == 0, "faultline exited non-zero")


if __name__ == "__main__":
    tl.main(test)
