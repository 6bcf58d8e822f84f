"""docker json-file logs (/var/lib/docker/containers/<id>/<id>-json.log): detected, unwrapped, named docker/<id12>."""
import json
import os

import harness
from harness import check


def test(work):
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    cid = "3f" * 32
    cdir = os.path.join(work.path, "var", "lib", "docker", "containers", cid)
    os.makedirs(cdir)
    log = os.path.join(cdir, cid + "-json.log")
    d = harness.Daemon(work, ["--source", os.path.join(work.path, "var/lib/docker/containers/*/*-json.log")]).start()
    with open(log, "w") as f:
        for n in range(1, 101):
            rec = {"log": "LINE %d from docker \"quoted\"\n" % n, "stream": "stderr" if n % 2 else "stdout",
                   "time": "2026-11-30T10:00:00.%09dZ" % n}
            f.write(json.dumps(rec) + "\n")
    harness.wait_until(lambda: len(d.incidents()) >= 100, 20, what="100 docker lines")
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    incs = d.incidents()
    harness.assert_exactly_once(incs, range(1, 101))
    check({i["stream"] for i in incs} == {"docker/" + cid[:12]}, "streams: %s" % {i["stream"] for i in incs})
    text = incs[0]["evidence"][-1]["text"]
    check(text == 'LINE 1 from docker "quoted"', "docker line not unwrapped: %r" % text)


if __name__ == "__main__":
    harness.main(test)
