#!/usr/bin/env python3
"""`GET /api/v1/fingerprints` on a real `faultline run` with the shipped catalog: real corpus failures appended to a
followed log show up in the inventory — the one no rule knows unclaimed, the typed one claimed by its rule — in the
shape `faultline fingerprints --json` prints, with the same fingerprints; a repeat raises its count; the bearer
token guards it; a restart keeps the inventory (it is part of the checkpoint: counts, first and last seen) and the
unclassified incident in the incident API (docs/fingerprints.md)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

CORPUS = os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real")
CATALOG = os.path.join(tl.SOURCE_DIR, "rules")
UNKNOWN = "rust_panic__femtogpt-23.log"     # no rule knows it: unclassified-failure
TYPED = "cublas_error__code-lms-31.log"     # cublas-error claims its traceback


def lines_of(name):
    with open(os.path.join(CORPUS, name), encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def test(work):
    token = work.file("api-token", "fp-token-7\n")
    d = tl.Daemon(work, ["--source", work.log_file], config="server:\n  api_token_file: %s\n" % token,
                  rules=CATALOG).start()
    auth = {"Authorization": "Bearer fp-token-7"}

    def inventory():
        status, hdrs, body = tl.http_get(d.base + "/api/v1/fingerprints", auth)
        check(status == 200 and hdrs.get("Content-Type") == "application/json", "fingerprints: %s %s" % (status, body))
        return json.loads(body)

    check(tl.http_get(d.base + "/api/v1/fingerprints")[0] == 401, "the inventory answered without the token")
    check(inventory() == {"count": 0, "fingerprints": []}, "an empty inventory before any failure")

    # What `faultline fingerprints --json` says about the same two files.
    expected = {}
    for name in (UNKNOWN, TYPED):
        p = tl.run("fingerprints", "--json", os.path.join(CORPUS, name))
        check(p.returncode in (0, 1), "fingerprints %s: %s" % (name, p.stderr[-300:]))
        for line in p.stdout.splitlines():
            e = json.loads(line)
            expected[e["fingerprint"]] = e
    unknown = [e for e in expected.values() if not e["claimed_by"] and not e["below_error"]]
    claimed = [e for e in expected.values() if e["claimed_by"] == "cublas-error"]
    check(len(unknown) == 1 and claimed, "the CLI lists one unclassified and one claimed story: %s" % expected)

    # Far enough apart (more than the 20 lines a story lingers) to be two stories, as in a real log.
    filler = ["request %d done" % i for i in range(30)]
    work.append(*lines_of(UNKNOWN), *filler)
    work.append(*lines_of(TYPED), *filler)
    want = {unknown[0]["fingerprint"], claimed[0]["fingerprint"]}
    wait_until(lambda: want <= {e["fingerprint"] for e in inventory()["fingerprints"]}, 30,
               what="both fingerprints in the API", alive=d)
    got = {e["fingerprint"]: e for e in inventory()["fingerprints"]}
    inv = inventory()
    check(inv["count"] == len(inv["fingerprints"]), "count is the number of entries: %s" % inv["count"])
    for fp in want:
        e, x = got[fp], expected[fp]
        check(set(e) == set(x), "the API's entry has the CLI's keys: %s vs %s" % (sorted(e), sorted(x)))
        for k in ("type", "template", "claimed_by", "below_error"):
            check(e[k] == x[k], "%s: %s is %r in the API, %r from the CLI" % (fp, k, e[k], x[k]))
        # The example is the story as read: here the lines that follow it in the log may join a cut excerpt.
        check(e["example"][:len(x["example"])] == x["example"], "%s: the example %r" % (fp, e["example"]))
        check(e["streams"] == [work.log_file] and e["count"] == 1, "streams and count: %s" % e)
        check(e["first_seen"] and e["last_seen"] >= e["first_seen"], "first and last seen: %s" % e)
    check(got[claimed[0]["fingerprint"]]["claimed_by"] == "cublas-error", "the typed story is claimed by its rule")

    # A repeat of the unknown failure: the same fingerprint, counted twice.
    work.append(*lines_of(UNKNOWN), *filler)
    fp = unknown[0]["fingerprint"]
    wait_until(lambda: any(e["fingerprint"] == fp and e["count"] == 2 for e in inventory()["fingerprints"]), 30,
               what="the repeat counted", alive=d)
    metrics = d.metrics()
    check((metrics.value("faultline_http_requests_total", handler="fingerprints", code="200") or 0) >= 1,
          "requests to the inventory are counted under handler=fingerprints")
    before = {e["fingerprint"]: e for e in inventory()["fingerprints"]}
    d.stop_ok()

    # Restarted on the same state dir: the inventory is kept (the checkpoint holds it) with its counts and first
    # sight; a repeat after the restart counts on; the incident is still served.
    d.start()
    after = {e["fingerprint"]: e for e in inventory()["fingerprints"]}
    check(set(after) == set(before), "the inventory survives a restart: %s vs %s" % (sorted(after), sorted(before)))
    for k, e in before.items():
        for field in ("count", "first_seen", "last_seen", "type", "template", "claimed_by", "streams", "severity"):
            check(after[k][field] == e[field], "%s: %s is %r after the restart, %r before" % (k, field, after[k][field],
                                                                                           e[field]))
    check(after[fp]["count"] == 2, "the repeat's count is kept: %s" % after[fp])
    work.append(*lines_of(UNKNOWN), *filler)
    wait_until(lambda: any(e["fingerprint"] == fp and e["count"] == 3 for e in inventory()["fingerprints"]), 30,
               what="a repeat after the restart counted on", alive=d)
    check({e["fingerprint"]: e for e in inventory()["fingerprints"]}[fp]["first_seen"] == before[fp]["first_seen"],
          "first seen is the first sight before the restart")
    status, _, body = tl.http_get(d.base + "/api/v1/incidents?rule=unclassified-failure", auth)
    incs = json.loads(body)["incidents"]
    check(status == 200 and [i["fingerprint"] for i in incs] == [fp], "the unclassified incident survives: %s" % body)
    d.stop_ok()

tl.main(test)
