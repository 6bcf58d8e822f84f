"""Kubernetes pod logs: a pod log appearing in a watched directory is found (inotify) and read from its start;
CRI lines with P/F partials are joined; the stream is named namespace/pod/container with its labels; a new restart
file (1.log) is a new instance with restart label 1; /var/log/containers symlinks are followed and not read twice;
faultline's own pod is never tailed; a deleted pod's stream ends, and a pod of the same name made again is read as
a new stream."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

TS = "2026-11-30T10:00:%02d.%09dZ"


def cri(n, stream="stdout"):
    return "%s %s F LINE %d msg\n" % (TS % (n % 60, n), stream, n)


def cri_partial(n):
    return "%s stdout P LINE %d part-one \n%s stdout F  part-two\n" % (TS % (n % 60, 1), n, TS % (n % 60, 2))


def labels(inc):
    return dict(inc["stream_labels"].items())


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    pods = os.path.join(work.path, "var", "log", "pods")
    containers = os.path.join(work.path, "var", "log", "containers")
    os.makedirs(pods)
    os.makedirs(containers)
    d = tl.Daemon(work, ["--source", pods + "/*/*/*.log", "--source", containers + "/*.log",
                              "--node-name", "gpu-node-7"]).start()
    time.sleep(0.3)

    # A new pod appears.
    cdir = os.path.join(pods, "ns1_vllm-0_0f1e2d3c-aaaa-bbbb-cccc-000000000001", "vllm")
    os.makedirs(cdir)
    with open(os.path.join(cdir, "0.log"), "w") as f:
        for n in range(1, 41):
            f.write(cri_partial(n) if n % 10 == 0 else cri(n, "stderr" if n % 3 == 0 else "stdout"))
    # faultline's own pod: never tailed.
    sdir = os.path.join(pods, "monitoring_faultline-x7k2p_0f1e2d3c-aaaa-bbbb-cccc-000000000009", "faultline")
    os.makedirs(sdir)
    with open(os.path.join(sdir, "0.log"), "w") as f:
        f.write(cri(9999))
    d.wait_incidents(40, what="40 lines of the new pod")
    incs = d.incidents()
    check({i["stream"] for i in incs} == {"ns1/vllm-0/vllm"}, "stream names: %s" % {i["stream"] for i in incs})
    l = labels(incs[0])
    for k, v in (("namespace", "ns1"), ("pod", "vllm-0"), ("container", "vllm"), ("restart", "0"),
                 ("node", "gpu-node-7")):
        check(l.get(k) == v, "label %s=%r, expected %r (labels %s)" % (k, l.get(k), v, l))
    joined = [i for i in incs if i["fields"]["n"] == "10"][0]
    check("part-one  part-two" in joined["evidence"][-1]["text"] or "part-one part-two" in joined["evidence"][-1]["text"],
          "P/F partials not joined: %r" % joined["evidence"][-1]["text"])

    # The container restarts: 1.log, a new instance.
    with open(os.path.join(cdir, "1.log"), "w") as f:
        for n in range(41, 61):
            f.write(cri(n))
    d.wait_incidents(60, what="lines of restart 1")
    restarted = [i for i in d.incidents() if int(i["fields"]["n"]) > 40]
    check(all(labels(i).get("restart") == "1" for i in restarted),
          "restart label after the restart: %s" % {labels(i).get("restart") for i in restarted})

    # A pod seen through its /var/log/containers symlink (and the pods glob): read once.
    c2 = os.path.join(pods, "ns2_sglang-1_0f1e2d3c-aaaa-bbbb-cccc-000000000002", "main")
    os.makedirs(c2)
    target = os.path.join(c2, "0.log")
    with open(target, "w") as f:
        for n in range(61, 81):
            f.write(cri(n))
    os.symlink(target, os.path.join(containers, "sglang-1_ns2_main-" + "ab" * 32 + ".log"))
    d.wait_incidents(80, what="lines of the second pod")

    # The first pod is deleted (its directory goes): its stream ends once its last file is read, and its state is let
    # go. The same pod made again (a StatefulSet's: same name, a new uid) is a stream of its own, read from its start.
    read = lambda: d.metric("faultline_lines_read_total")  # noqa: E731
    read_before = tl.wait_quiet(read, quiet=1.5, what="the lines read to be counted")
    shutil.rmtree(os.path.dirname(cdir))
    tl.wait_until(lambda: (d.metric("faultline_streams_ended_total") or 0) >= 1, what="the deleted pod's stream to end",
                  alive=d)
    again = os.path.join(pods, "ns1_vllm-0_0f1e2d3c-aaaa-bbbb-cccc-000000000003", "vllm")
    os.makedirs(again)
    with open(os.path.join(again, "0.log"), "w") as f:
        for n in range(81, 91):
            f.write(cri(n))
    # The ended stream's lines stay counted: the counter goes on from where it was.
    tl.wait_until(lambda: read() == read_before + 10, what="%d lines read (%s)" % (read_before + 10, read()), alive=d)
    stats = d.finish_exactly_once(range(1, 91), 20, what="lines of the pods")
    incs = d.incidents()
    second = {i["stream"] for i in incs if 60 < int(i["fields"]["n"]) <= 80}
    check(second == {"ns2/sglang-1/main"}, "second pod stream: %s" % second)
    remade = {i["stream"] for i in incs if int(i["fields"]["n"]) > 80}
    check(remade == {"ns1/vllm-0/vllm"}, "the pod made again: %s" % remade)
    check(stats["streams_ended"] == 1, "streams ended: %s" % stats["streams_ended"])


if __name__ == "__main__":
    tl.main(test)
