"""Kernel log: /dev/kmsg records (pri,seq,usec,flags;message) are parsed, so a GPU Xid error raises an incident with
the node label; the checkpoint keeps the last sequence number, so a restart does not report it again. (The test
feeds the records from a regular file in /dev/kmsg format; the daemon reads the device the same way.)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

XID_RULE = r"""
id: gpu-xid
title: "GPU Xid {xid}"
severity: critical
events:
  xid:
    regex: 'NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+),'
key: [stream, "field:xid"]
"""


def uptime_usec():
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * 1e6)


def test(work):
    work.write_rule("xid.yaml", XID_RULE)
    kmsg = os.path.join(work.path, "kmsg")
    now = uptime_usec()  # records of the last seconds (older ones would be resolved at once by their quiet time)
    with open(kmsg, "w") as f:
        f.write("6,1001,%d,-;nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver\n" % (now - 2000000))
        f.write("4,1002,%d,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n" % (now - 1000000))
        f.write(" SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n")
    cfg = os.path.join(work.path, "faultline.yaml")
    with open(cfg, "w") as f:
        f.write("node_name: gpu-node-3\nsources:\n  - type: kmsg\n    path: %s\n    start_at: beginning\n" % kmsg)
    d = tl.Daemon(work, ["--config", cfg]).start()
    d.wait_incidents(1, what="the Xid incident")
    d.stop_ok()
    inc = d.incidents()[0]
    check(inc["rule"] == "gpu-xid" and inc["fields"]["xid"] == "79", "incident: %s" % inc)
    labels = dict(inc["stream_labels"].items())
    check(labels.get("node") == "gpu-node-3" and labels.get("source") == "kmsg", "labels: %s" % labels)
    check(inc["stream"] == "kmsg", "stream %s" % inc["stream"])
    text = inc["evidence"][-1]["text"]
    check("kernel: NVRM: Xid" in text, "evidence text %r" % text)

    with open(kmsg, "a") as f:
        f.write("3,1003,%d,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, DBE\n" % uptime_usec())
    d2 = tl.Daemon(work, ["--config", cfg]).start()
    d2.wait_incidents(2, what="the second Xid")
    d2.stop_ok()
    xids = [i["fields"]["xid"] for i in d2.incidents() if i["revision"] == 1]
    check(xids == ["79", "48"], "Xid incidents over both runs: %s" % xids)


if __name__ == "__main__":
    tl.main(test)
