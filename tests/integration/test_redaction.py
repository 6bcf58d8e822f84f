"""Secrets in a matched line never leave the daemon in clear: not on the JSON-lines output (the file or standard
output), not in the API, not on the page. The output is redacted with the same patterns as everything else."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

SECRETS = ["hunter2", "abc.def.ghi", "sk-abcdefghijklmnopqrstuvwx"]
LINE = ("LINE {n} ERROR torch.OutOfMemoryError: CUDA out of memory. password=hunter2 "
        "Authorization: Bearer abc.def.ghi sk-abcdefghijklmnopqrstuvwx")


def leaks(text):
    return [s for s in SECRETS if s in text]


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow_from_start(work, LINE.format(n=1))
    d.feed(LINE.format(n=2), expect=2)

    def api_has_both():
        incidents = d.get("/api/v1/incidents")[2]
        return incidents.count(b"[REDACTED]") >= 2 and b"line 2" in incidents
    tl.wait_until(api_has_both, 20, what="both incidents in the API, redacted", alive=d)
    api = d.get("/api/v1/incidents")[2].decode("utf-8", "replace")
    page = d.get("/")[2].decode("utf-8", "replace")
    d.stop_ok()
    with open(d.output, encoding="utf-8") as f:
        output = f.read()

    check(output.count("\n") >= 2, "two revisions on the output:\n%s" % output)
    check(not leaks(output), "secrets %s in clear on the output:\n%s" % (leaks(output), output[:2000]))
    check("password=[REDACTED]" in output and "Bearer [REDACTED]" in output,
          "the output shows where secrets were masked:\n%s" % output[:2000])
    check(not leaks(api), "secrets %s in clear in the API" % leaks(api))
    check(not leaks(page), "secrets %s in clear on the page" % leaks(page))
    # The output and the API say the same about the evidence.
    evidence_out = [i["evidence"][-1]["text"] for i in tl.read_incidents(d.output)]
    check(all("[REDACTED]" in t for t in evidence_out), "every output revision redacted: %s" % evidence_out)


if __name__ == "__main__":
    tl.main(test)
