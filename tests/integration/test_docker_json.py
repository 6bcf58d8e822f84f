"""docker json-file logs (/var/lib/docker/containers/<id>/<id>-json.log): detected, unwrapped, named docker/<id12>."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    cid = "3f" * 32
    cdir = os.path.join(work.path, "var", "lib", "docker", "containers", cid)
    os.makedirs(cdir)
    log = os.path.join(cdir, cid + "-json.log")
    d = tl.Daemon(work, ["--source", os.path.join(work.path, "var/lib/docker/containers/*/*-json.log")]).start()
    with open(log, "w") as f:
        for n in range(1, 101):
            rec = {"log": "LINE %d from docker \"quoted\"\n" % n, "stream": "stderr" if n % 2 else "stdout",
                   "time": "2026-11-30T10:00:00.%09dZ" % n}
            f.write(json.dumps(rec) + "\n")
    d.wait_incidents(100, what="100 docker lines")
    d.stop_ok()
    incs = d.incidents()
    tl.assert_exactly_once(incs, range(1, 101))
    check({i["stream"] for i in incs} == {"docker/" + cid[:12]}, "streams: %s" % {i["stream"] for i in incs})
    text = incs[0]["evidence"][-1]["text"]
    check(text == 'LINE 1 from docker "quoted"', "docker line not unwrapped: %r" % text)


if __name__ == "__main__":
    tl.main(test)
