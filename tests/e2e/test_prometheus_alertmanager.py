#!/usr/bin/env python3
"""Prometheus scrapes faultline, evaluates the shipped alert rules (deploy/prometheus/alerts.yaml, with their `for:`
durations shortened so the test takes seconds) and sends to Alertmanager: a webhook sink that cannot deliver makes
FaultlineWebhookFailing fire, and the alert is visible in Alertmanager's API with faultline's labels. The scrape
also passes `promtool check metrics`."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def test(work):
    promtool = tl.need_tool("promtool")
    tl.need_tool("prometheus")
    with open(os.path.join(tl.SOURCE_DIR, "deploy", "prometheus", "alerts.yaml")) as f:
        rules = re.sub(r"(\n\s+for:) \d+[smh]", r"\1 1s", f.read())
    rules_file = work.file("alerts.yaml", rules)
    subprocess.run([promtool, "check", "rules", rules_file], check=True, stdout=subprocess.DEVNULL)

    dead = tl.free_port()
    fl = tl.boom_daemon(work, tl.sinks_yaml([{
        "name": "pager", "url": "http://127.0.0.1:%d/" % dead, "format": "json",
        "timeout": "1s", "backoff_initial": "100ms", "backoff_max": "300ms"}]))
    work.append("BOOM 1")
    wait_until(lambda: (fl.metric("faultline_webhook_deliveries_total", sink="pager", result="network_error") or 0) > 2,
               20, what="failing deliveries")

    # The exposition passes promtool's linter.
    status, _, body = tl.http_get(fl.base + "/metrics")
    lint = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    check(lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(),
          "promtool check metrics: %s %s" % (lint.stdout.decode(), lint.stderr.decode()))

    am = tl.Alertmanager(work).start()
    prom = tl.Prometheus(work, fl.port, am.port, [rules_file]).start()

    def target_up():
        t = tl.http_json(prom.base + "/api/v1/targets")["data"]["activeTargets"]
        return t and t[0]["health"] == "up"
    wait_until(target_up, 30, what="Prometheus to scrape faultline")

    def firing_in_prometheus():
        alerts = tl.http_json(prom.base + "/api/v1/alerts")["data"]["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "FaultlineWebhookFailing" and a["state"] == "firing"]
    wait_until(firing_in_prometheus, 60, what="FaultlineWebhookFailing firing in Prometheus")

    alerts = wait_until(lambda: am.alerts(alertname="FaultlineWebhookFailing"), 60,
                        what="FaultlineWebhookFailing in Alertmanager")
    labels = alerts[0]["labels"]
    check(labels.get("sink") == "pager", "sink label: %s" % labels)
    check(labels.get("severity") == "critical", "severity label: %s" % labels)
    check(labels.get("job") == "faultline", "job label: %s" % labels)
    ann = alerts[0]["annotations"]
    check("pager" in ann.get("summary", "") and "\n" not in ann["summary"], "summary (one line): %s" % ann)
    check(len(ann.get("description", "")) > len(ann["summary"]) // 2, "description (the paragraph): %s" % ann)

    # Nothing else is wrong with this faultline: none of the other health alerts fire.
    # (FaultlineNotScraped may blink before the first scrape; with `for` shortened to 1s that is not a finding.)
    others = [a["labels"]["alertname"] for a in tl.http_json(prom.base + "/api/v1/alerts")["data"]["alerts"]
              if a["state"] == "firing"
              and a["labels"]["alertname"] not in ("FaultlineWebhookFailing", "FaultlineNotScraped")]
    check(not others, "unexpected alerts: %s" % others)

    # faultline down: FaultlineDown fires.
    fl.stop()
    wait_until(lambda: am.alerts(alertname="FaultlineDown"), 60, what="FaultlineDown in Alertmanager")


if __name__ == "__main__":
    tl.main(test)
