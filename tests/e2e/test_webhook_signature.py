#!/usr/bin/env python3
"""A real HTTP receiver gets faultline's JSON webhook and verifies its Standard Webhooks signature; the same check
rejects a tampered body, a tampered id and a stale timestamp. Also: evidence is redacted, the payload is the incident
JSON, and the resolution arrives as a new revision."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def test(work):
    rx = tl.Receiver(work=work).start()
    secret = tl.make_secret()
    secret_file = work.file("webhook-secret", secret + "\n")
    token_file = work.file("receiver-token", "rx-token-1\n")
    config = tl.sinks_yaml([{
        "name": "receiver", "url": rx.url("/hooks/faultline"), "format": "json",
        "hmac_secret_file": secret_file, "bearer_token_file": token_file,
        "headers": {"X-Env": "e2e"}, "timeout": "5s", "backoff_initial": "200ms", "backoff_max": "1s",
    }])
    fl = tl.boom_daemon(work, config)

    work.append("starting", "BOOM 7 on the worker", "all fine")
    wait_until(lambda: rx.received(), 20, what="the webhook")
    req = rx.received()[0]
    check(req["path"] == "/hooks/faultline", "path %s" % req["path"])
    h = {k.lower(): v for k, v in req["headers"].items()}
    check(h.get("authorization") == "Bearer rx-token-1", "bearer token: %r" % h.get("authorization"))
    check(h.get("x-env") == "e2e", "custom header missing")
    check(h.get("content-type") == "application/json", "content type %r" % h.get("content-type"))
    body = req["body"]
    incident = json.loads(body)
    check(incident["rule"] == "e2e-boom", "rule %s" % incident["rule"])
    check(h["webhook-id"] == "%s-%d" % (incident["id"], incident["revision"]), "webhook-id %s" % h["webhook-id"])
    check("abcdef0123456789" not in body.decode(), "the bearer token in the summary was not redacted")
    check("[REDACTED]" in incident["summary"], "summary: %s" % incident["summary"])

    # The receiver's check accepts the real delivery ...
    tl.verify_standard_webhook(secret, req["headers"], body)
    # ... and rejects a tampered body, a tampered id, a stale timestamp and the wrong secret.
    for what, headers, payload, now in [
        ("tampered body", req["headers"], body.replace(b"e2e-boom", b"e2e-bang"), None),
        ("tampered id", dict(req["headers"], **{"webhook-id": incident["id"] + "-99"}), body, None),
        ("stale timestamp", req["headers"], body, int(h["webhook-timestamp"]) + 3600),
        ("wrong secret", req["headers"], body, None),
    ]:
        try:
            tl.verify_standard_webhook(tl.make_secret() if what == "wrong secret" else secret, headers, payload, now=now)
        except ValueError:
            continue
        raise AssertionError("the signature check accepted a %s" % what)
    # Replaying the message with a fresh timestamp needs the secret: the old signature does not cover it.
    forged = dict(req["headers"], **{"webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)})
    try:
        tl.verify_standard_webhook(secret, forged, body)
        check(False, "a changed timestamp kept a valid signature")
    except ValueError:
        pass

    # The resolution is a new revision with its own id, signed too.
    work.append("RECOVERED 7")
    wait_until(lambda: len(rx.received()) >= 2, 20, what="the resolved revision")
    r2 = rx.received()[1]
    inc2 = json.loads(r2["body"])
    check(inc2["id"] == incident["id"] and inc2["revision"] == incident["revision"] + 1,
          "second delivery is %s rev %s" % (inc2["id"], inc2["revision"]))
    check(inc2["status"] == "resolved", "status %s" % inc2["status"])
    tl.verify_standard_webhook(secret, r2["headers"], r2["body"])
    check(fl.metric("faultline_webhook_deliveries_total", sink="receiver", result="success") == 2,
          "deliveries metric: %s" % fl.metric("faultline_webhook_deliveries_total", sink="receiver"))
    check(fl.stop() == 0, "faultline exited non-zero")


if __name__ == "__main__":
    tl.main(test)
