#!/usr/bin/env python3
"""faultline posts straight to a real Alertmanager (a sink with format: alertmanager): the alert appears in
GET /api/v2/alerts with the right labels and annotations in the usual shape (summary the one-line title, description
the paragraph, runbook_url, the decisive line in evidence even behind many context lines), is re-sent while the
incident fires, and resolves when it ends."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def test(work):
    am = tl.Alertmanager(work).start()
    # The rule keeps 20 context lines: the decisive line comes after them in the incident's evidence.
    work.write_rule("e2e-boom.yaml", tl.BOOM_RULE + "context_lines: 20\n")
    fl = tl.follow(work, ["--node-name", "gpu-node-3"],
                   config="sinks:\n  - name: am\n    url: %s\n    format: alertmanager\n    resend_interval: 2s\n"
                   "    backoff_initial: 200ms\n    backoff_max: 1s\n" % am.base)
    work.append(*["[I] start-up line %d" % i for i in range(20)], "BOOM 42")
    alerts = wait_until(lambda: am.alerts(alertname="FaultlineE2eBoom"), 30, what="the alert in Alertmanager")
    check(len(alerts) == 1, "alerts: %s" % alerts)
    a = alerts[0]
    labels, ann = a["labels"], a["annotations"]
    check(labels.get("rule") == "e2e-boom", "rule label: %s" % labels)
    check(labels.get("severity") == "critical", "severity label: %s" % labels)
    check(labels.get("team") == "e2e", "static rule label missing: %s" % labels)
    check(len(labels.get("incident_id", "")) == 16, "incident_id label: %s" % labels)
    check(labels.get("node") == "gpu-node-3", "node label: %s" % labels)
    check(ann.get("runbook_url") == "https://example.com/runbooks/e2e-boom", "runbook_url: %s" % ann)
    check(ann.get("evidence") == "BOOM 42", "evidence annotation (the decisive line only): %s" % ann)
    check(ann.get("summary") == "E2E boom 42", "summary (the one-line title): %s" % ann)
    check("Test failure number 42" in ann.get("description", ""), "description (the paragraph): %s" % ann)
    check("abcdef0123456789" not in ann.get("description", ""), "description not redacted: %s" % ann)
    check("title" not in ann, "a title annotation beside summary: %s" % ann)
    check(ann.get("remediation") == "Nothing to do: it is a test.", "remediation: %s" % ann)
    check(a["generatorURL"].endswith("/api/v1/incidents/" + labels["incident_id"]), "generatorURL %s" % a["generatorURL"])
    check(a["status"]["state"] == "active", "state %s" % a["status"])
    # The link works.
    inc = tl.http_json(fl.base + "/api/v1/incidents/" + labels["incident_id"])
    check(inc["rule"] == "e2e-boom", "incident API: %s" % inc)

    # Re-sent while firing: endsAt keeps moving forward.
    ends1 = a["endsAt"]
    wait_until(lambda: am.alerts(alertname="FaultlineE2eBoom")[0]["endsAt"] > ends1, 15, what="a re-send")

    # Resolution: the alert leaves the active list.
    work.append("RECOVERED 42")
    wait_until(lambda: not am.alerts(alertname="FaultlineE2eBoom"), 30, what="the alert to resolve")
    time.sleep(3)  # no re-send revives it
    check(not am.alerts(alertname="FaultlineE2eBoom"), "the resolved alert came back")
    check(fl.metric("faultline_webhook_deliveries_total", sink="am", result="success") >= 3, "deliveries not counted")
    check(fl.stop() == 0, "faultline exited non-zero")


if __name__ == "__main__":
    tl.main(test)
