#!/usr/bin/env python3
"""The HTTP API of a real `faultline run`: /healthz, /readyz, /api/v1/incidents (filters), /api/v1/incidents/<id>,
/api/v1/rules, /api/v1/status, the live stream /api/v1/events, the page at /, the bearer token and the page's session
cookie, and the --webhook shortcut delivering the same incidents; one incident's revision history survives a restart."""
import http.client
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def test(work):
    rx = tl.Receiver(work=work).start()
    token = work.file("api-token", "api-secret-42\n")
    fl = tl.boom_daemon(work, "server:\n  api_token_file: %s\n" % token, args=["--webhook", rx.url("/in")])
    auth = {"Authorization": "Bearer api-secret-42"}

    def api(path, headers=auth):
        status, hdrs, body = tl.http_get(fl.base + path, headers)
        return status, hdrs, body

    check(api("/healthz", {})[0] == 200, "healthz")
    status, _, body = api("/readyz", {})
    check(status == 200 and b"ok   rules" in body and b"ok   sources" in body and b"ok   state_dir" in body,
          "readyz: %s %s" % (status, body))
    check(api("/api/v1/incidents", {})[0] == 401, "the API answered without the token")
    check(api("/api/v1/incidents", {"Authorization": "Bearer nope"})[0] == 401, "the API took a wrong token")
    status, hdrs, page = api("/", {})
    check(status == 200 and b"page.js" in page, "the page's files are open (they hold no data): %s" % status)
    check(api("/api/v1/status", {})[0] == 401, "the status answered without the token")
    check(api("/metrics", {})[0] == 200, "metrics need no token")

    work.append("BOOM 1", "BOOM 2", "BOOM 3")
    wait_until(lambda: json.loads(api("/api/v1/incidents")[2])["count"] == 3, 20, what="three incidents in the API")
    work.append("RECOVERED 2")
    wait_until(lambda: json.loads(api("/api/v1/incidents?status=resolved")[2])["count"] == 1, 20,
               what="the resolution in the API")
    listing = json.loads(api("/api/v1/incidents")[2])
    check([i["fields"]["n"] for i in listing["incidents"]] == ["2", "3", "1"], "order: newest update first: %s"
          % [i["fields"]["n"] for i in listing["incidents"]])
    firing = json.loads(api("/api/v1/incidents?status=firing&rule=e2e-boom&severity=critical")[2])
    check(sorted(i["fields"]["n"] for i in firing["incidents"]) == ["1", "3"], "filters: %s" % firing)
    check(json.loads(api("/api/v1/incidents?rule=other")[2])["count"] == 0, "rule filter")
    check(json.loads(api("/api/v1/incidents?since=1m")[2])["count"] == 3, "since=1m")
    future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    check(json.loads(api("/api/v1/incidents?since=" + future)[2])["count"] == 0, "since in the future")
    check(api("/api/v1/incidents?severity=fatal")[0] == 400, "bad severity accepted")
    check(json.loads(api("/api/v1/incidents?limit=1")[2])["count"] == 1, "limit")

    one_id = listing["incidents"][0]["id"]
    status, hdrs, body = api("/api/v1/incidents/" + one_id)
    check(status == 200 and json.loads(body)["status"] == "resolved", "one incident: %s %s" % (status, body[:200]))
    check(hdrs.get("Content-Type") == "application/json", "content type %s" % hdrs.get("Content-Type"))
    check(api("/api/v1/incidents/0000000000000000")[0] == 404, "unknown id")
    history = [(r["revision"], r["change"], r["status"]) for r in json.loads(body)["history"]["revisions"]]
    check(history == [(1, "first", "firing"), (2, "status", "resolved")], "history of one incident: %s" % history)

    rules = json.loads(api("/api/v1/rules")[2])
    check([r["id"] for r in rules["rules"]] == ["e2e-boom"], "rules: %s" % rules)
    check(rules["rules"][0]["severity"] == "critical" and len(rules["rules"][0]["content_hash"]) >= 8,
          "rule info: %s" % rules)

    status, hdrs, page = api("/")
    check(status == 200 and "text/html" in hdrs.get("Content-Type", ""), "page: %s" % status)
    check(b"E2E boom" not in page, "the page's HTML carries no incident")
    body = api("/api/v1/incidents?q=boom%201")[2]
    check(b"E2E boom 1" in body and b"[REDACTED]" in body and b"abcdef0123456789" not in body, "redacted in the API")
    listing = json.loads(api("/api/v1/incidents?limit=2&offset=1")[2])
    check(listing["count"] == 2 and listing["total"] == 3 and listing["offset"] == 1, "paging: %s" % listing)

    # A browser's session: the form posts the token, the cookie then reads the API.
    conn = http.client.HTTPConnection("127.0.0.1", fl.port, timeout=10)
    origin = "http://127.0.0.1:%d" % fl.port
    conn.request("POST", "/login", urllib.parse.urlencode({"token": "api-secret-42"}),
                 {"Content-Type": "application/x-www-form-urlencoded", "Origin": origin})
    r = conn.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie") or ""
    check(r.status == 204 and "HttpOnly" in cookie and "SameSite=Strict" in cookie, "login: %s %s" % (r.status, cookie))
    session = {"Cookie": cookie.split(";")[0]}
    check(api("/api/v1/incidents", session)[0] == 200, "the session cookie reads the API")
    conn.request("POST", "/login", "token=api-secret-42", {"Origin": "http://evil.example",
                                                           "Content-Type": "application/x-www-form-urlencoded"})
    r = conn.getresponse()
    r.read()
    check(r.status == 403, "a cross-origin login was accepted: %s" % r.status)
    conn.close()

    # Live: the event stream sends the status at once, and again when an incident changes.
    stream = http.client.HTTPConnection("127.0.0.1", fl.port, timeout=20)
    stream.request("GET", "/api/v1/events", headers=auth)
    events = stream.getresponse()
    check(events.status == 200 and events.getheader("Content-Type").startswith("text/event-stream"), "event stream")

    def next_status():
        for raw in events:
            if raw.startswith(b"data: "):
                return json.loads(raw[6:])
        raise tl.Failure("the event stream ended")
    first = next_status()
    check(first["incidents"]["total"] == 3, "first status: %s" % first)
    while first["reading"]["files"] != 1 or first["reading"]["lines_read"] != 4:  # published every second
        first = next_status()
    work.append("BOOM 4")
    later = next_status()  # each event is a change: bounded by the stream's timeout
    while later["incidents"]["total"] != 4 or later["reading"]["lines_read"] < 5:
        later = next_status()
    check(later["change"] > first["change"], "live status: %s" % later)
    stream.close()

    # The --webhook shortcut delivered the same five revisions.
    wait_until(lambda: len(rx.received()) == 5, 20, what="webhook deliveries")
    ids = {r["headers"]["webhook-id"] for r in rx.received()}
    check(len(ids) == 5, "webhook ids: %s" % ids)
    check(fl.metric("faultline_incidents_total", rule="e2e-boom") == 4, "incidents_total")
    check(fl.metric("faultline_incidents_active", rule="e2e-boom") == 3, "incidents_active")
    check(fl.metric("faultline_http_requests_total", handler="unauthorized") >= 3, "401s counted")
    check(fl.stop() == 0, "faultline exited non-zero")

    # A restart on the same state dir keeps the history the store had.
    again = tl.boom_daemon(work, "server:\n  api_token_file: %s\n" % token, name="again")
    status, _, body = tl.http_get(again.base + "/api/v1/incidents/" + one_id, auth)
    check(status == 200, "after a restart: %s %s" % (status, body[:200]))
    kept = [(r["revision"], r["change"], r["status"]) for r in json.loads(body)["history"]["revisions"]]
    check(kept == history, "history after a restart: %s" % kept)
    check(again.stop() == 0, "faultline (restarted) exited non-zero")


if __name__ == "__main__":
    tl.main(test)
