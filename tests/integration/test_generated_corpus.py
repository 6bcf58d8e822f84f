#!/usr/bin/env python3
"""Precision and recall on the benchmark generator's logs: a large benign serving log raises nothing; every injected
failure kind is recognised by its rule (whether it pages or is explained by a root cause)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

GEN = os.path.join(tl.SOURCE_DIR, "bench", "gen_corpus.py")
EXPECTED = {
    "fmha_unsupported_arch": "flashinfer-fmha-unsupported-arch",
    "cutlass_moe_tma": "flashinfer-moe-tma-grouped-gemm",
    "cuda_oom": "cuda-out-of-memory",
    "illegal_memory_access": "cuda-illegal-memory-access",
    "nccl_watchdog_timeout": "nccl-watchdog-timeout",
    "engine_dead": "engine-dead",
    "no_kernel_image": "cuda-no-kernel-image",
    "xid_error": "gpu-xid-error",
    "kv_cache_lt_max_model_len": "kv-cache-below-max-model-len",
}
tally = tl.Tally()
check = tally.check


def scan(path):
    rc, incs, _ = tl.scan_incidents(path, timeout=600)
    return rc, incs


with tempfile.TemporaryDirectory() as tmp:
    for fmt in ("raw", "cri", "docker"):
        benign = os.path.join(tmp, f"benign.{fmt}")
        subprocess.run([sys.executable, GEN, "--lines", "200000", "--inject", "0", "--seed", "3", "--format", fmt,
                        "--out", benign], check=True)
        rc, incs = scan(benign)
        check(rc == 0 and not incs, f"200k benign lines ({fmt}): no incident " + str(sorted({i['rule'] for i in incs})))

    for fmt in ("raw", "cri"):
        log = os.path.join(tmp, f"inj.{fmt}")
        manifest = os.path.join(tmp, f"inj.{fmt}.json")
        subprocess.run([sys.executable, GEN, "--lines", "300000", "--inject", "1e-4", "--seed", "11", "--format", fmt,
                        "--out", log, "--manifest", manifest], check=True)
        kinds = {m["kind"] for m in json.load(open(manifest))}
        rc, incs = scan(log)
        found = {i["rule"] for i in incs}
        check(kinds == set(EXPECTED), f"{fmt}: the generator injected every kind")
        for kind in sorted(kinds):
            check(EXPECTED[kind] in found, f"{fmt}: injected {kind} is recognised as {EXPECTED[kind]}")

tally.finish()
