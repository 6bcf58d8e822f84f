#!/usr/bin/env python3
"""Node-wide attribution is physics, and `scan` and `run` agree on it. A kernel log and a pod's log of one node, read
by `faultline run --node-name N` (live) and by `faultline scan --node-name N` (replay) with the shipped catalog: the
`caused_by` of every incident is the same in both. An Xid that an application fault raises (31, an MMU fault of
another process) explains nothing - a configuration error of another pod printed 30 s later still pages (the case of
the UX report); a hardware Xid (79, the GPU fell off the bus) explains the pod's NCCL error and its dead worker, but
not its configuration error."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

NODE = "gpu-node-3"
NOW = "2026-12-01T12:00:00Z"
MAX_MODEL_LEN = ("(APIServer pid=1) ERROR 12-01 10:00:31 [core.py:708] ValueError: User-specified max_model_len "
                 "(262144) is greater than the derived max_model_len (max_position_embeddings=131072 or "
                 "model_max_length=None in model's config.json). To allow overriding this maximum, set the env var "
                 "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")

CASES = {
    # The report's case: Xid 31 of another process, a configuration error of this pod.
    "xid31": {
        "kern.log": [
            "2026-12-01T10:00:00+00:00 gpu-node-3 kernel: NVRM: Xid (PCI:0000:70:00): 31, pid=684430, name=python3, "
            "channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 UNRECOGNIZED_CLIENT faulted @ "
            "0x1827f9_000b4bc0. Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE",
        ],
        "other-pod.log": [
            "(APIServer pid=1) INFO 12-01 10:00:30 [api_server.py:1] vLLM API server version 0.19.0",
            MAX_MODEL_LEN,
        ],
        "expect": {"gpu-xid-error": None, "max-model-len-exceeds-model": None},
    },
    # A hardware Xid: the pod's NCCL error and dead worker are its consequences; the configuration error is not.
    "xid79": {
        "kern.log": [
            "2026-12-01T10:00:00+00:00 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
            "name=<unknown>, GPU has fallen off the bus.",
        ],
        "other-pod.log": [
            "(Worker_TP1 pid=412) ERROR 12-01 10:00:02 [multiproc_executor.py:750] RuntimeError: NCCL error: remote "
            "process exited or there was a network error (run with NCCL_DEBUG=INFO for details)",
            "(EngineCore pid=411) ERROR 12-01 10:00:03 [multiproc_executor.py:284] Worker proc VllmWorker-1 died "
            "unexpectedly, shutting down executor.",
            MAX_MODEL_LEN,
        ],
        "expect": {"gpu-xid-error": None, "nccl-error": "gpu-xid-error", "worker-died": "nccl-error",
                   "max-model-len-exceeds-model": None},
    },
}


def causes(incidents):
    """rule → the rule of its root cause (None: it pages on its own), from the latest revision of each incident."""
    latest = {}
    for inc in incidents:
        latest[inc["id"]] = inc
    out = {}
    for inc in latest.values():
        out[inc["rule"]] = (inc.get("caused_by") or {}).get("rule")
    return out


def write(path, lines, mode="w"):
    with open(path, mode) as fh:
        fh.write("\n".join(lines) + "\n")


def write_case(work, name, case):
    d = os.path.join(work.path, name)
    os.makedirs(d)
    paths = []
    for f in ("kern.log", "other-pod.log"):
        p = os.path.join(d, f)
        write(p, case[f])
        paths.append(p)
    return paths


def test(work):
    for name, case in CASES.items():
        paths = write_case(work, name, case)
        rc, scanned, p = tl.scan_incidents("--node-name", NODE, "--now", NOW, *paths)
        check(rc in (0, 1), "%s: scan exit status %s: %s" % (name, rc, p.stderr.decode()[-2000:]))
        scan_causes = causes(scanned)
        check(scan_causes == case["expect"], "%s: scan caused_by %s, expected %s" % (name, scan_causes, case["expect"]))

        args = []
        for path in paths:
            args += ["--source", path]
        d = tl.Daemon(work, args + ["--start-at", "beginning", "--node-name", NODE], name="run-" + name,
                      rules=os.path.join(tl.SOURCE_DIR, "rules"), state=os.path.join(work.path, "state-" + name)).start()
        want = set(case["expect"])
        tl.wait_until(lambda: set(causes(d.incidents())) >= want, 30, what="%s: incidents of %s" % (name, sorted(want)),
                      alive=d)
        d.settle()
        d.stop_ok()
        run_causes = causes(d.incidents())
        check(run_causes == scan_causes, "%s: run caused_by %s, scan %s" % (name, run_causes, scan_causes))


if __name__ == "__main__":
    tl.main(test)
