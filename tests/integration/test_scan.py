#!/usr/bin/env python3
"""`faultline scan`, `check` and `test` as a user runs them: the real binary on real files."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

SRC = tl.SOURCE_DIR
CORPUS = os.path.join(SRC, "tests", "corpus", "real")
tally = tl.Tally()
check = tally.check


def run(*args, stdin=None, timeout=120):
    return tl.run(*args, input=stdin, text=False, timeout=timeout)


def incidents(*args, stdin=None):
    return tl.scan_incidents(*args, input=stdin)


def paging(incs):
    """Incidents that page: those no root cause explains."""
    return [i["rule"] for i in incs if not i.get("caused_by")]


def corpus(name):
    return os.path.join(CORPUS, name)


# The seed excerpts verbatim, through stdin.
seed_fmha = (
    "RuntimeError: Error in function 'TllmGenFmhaRunner' at /usr/local/lib/python3.12/dist-packages/flashinfer/data/"
    "include/flashinfer/trtllm/fmha/fmhaRunner.cuh:37: Unsupported architecture\n"
    "Model init total -- 21.36s\n"
    "[TRT-LLM] [W] [quantize] Inline 'config.json.quantization_config' diverges from 'hf_quant_config.json'\n"
)
rc, incs, _ = incidents("-", stdin=seed_fmha.encode())
check(rc == 1, "seed 1 excerpt: exit status 1 (incidents found)")
check(paging(incs) == ["flashinfer-fmha-unsupported-arch"], "seed 1 excerpt raises the FMHA fingerprint")
check(bool(incs) and incs[0]["severity"] == "critical", "seed 1 excerpt is critical")
check(bool(incs) and incs[0]["fields"].get("phase") == "after model init", "seed 1 excerpt: phase after model init (line printed after the error)")

seed_moe = (
    "Error: Failed to initialize the TMA descriptor 715\n" * 3
    + "[TensorRT-LLM][ERROR] Assertion failed: Failed to initialize cutlass TMA WS grouped gemm. Error: Error Internal\n"
)
rc, incs, _ = incidents("-", stdin=seed_moe.encode())
check(paging(incs) == ["flashinfer-moe-tma-grouped-gemm"], "seed 2 excerpt raises the MoE TMA fingerprint")
check(all(i["caused_by"]["rule"] == "flashinfer-moe-tma-grouped-gemm" for i in incs if i.get("caused_by")),
      "seed 2: the generic TMA descriptor incident points at the MoE root cause")

rc, incs, _ = incidents("-", stdin=b"Error: Failed to initialize the TMA descriptor 715\n" * 5)
check(all(i["rule"] != "flashinfer-moe-tma-grouped-gemm" for i in incs), "a lone TMA descriptor error is not the MoE fingerprint")

# Real excerpts from public reports.
for name in ("fmha_unsupported_arch__mini-sglang-129.log", "fmha_unsupported_arch__hydralisk-dsv4-live-smoke.log",
             "fmha_unsupported_arch__hydralisk-sm120-repro.log", "fmha_unsupported_arch__trtllm-320.log"):
    rc, incs, _ = incidents(corpus(name))
    check("flashinfer-fmha-unsupported-arch" in [i["rule"] for i in incs], f"corpus {name}: FMHA fingerprint")
rc, incs, _ = incidents(corpus("cutlass_moe_tma__flashinfer-2077.log"))
moe = [i for i in incs if i["rule"] == "flashinfer-moe-tma-grouped-gemm"]
check(len(moe) == 1 and moe[0]["severity"] == "warning", "corpus flashinfer-2077: MoE TMA early warning (autotuner skipped the tactic)")
rc, incs, p = incidents(corpus("healthy_startup__johnpfeiffer-b300-gemma4.log"))
check(rc == 0 and incs == [], "healthy start-up raises nothing (exit 0)")
for name in ("deepgemm_unsupported_arch__deepgemm-236.log", "tma_descriptor_generic__sglang-4382.log"):
    rc, incs, _ = incidents(corpus(name))
    seeds = {"flashinfer-fmha-unsupported-arch", "flashinfer-moe-tma-grouped-gemm"}
    check(not seeds & {i["rule"] for i in incs}, f"corpus {name}: not a seed fingerprint")

# CRI- and docker-wrapped copies of the seed are recognised the same way.
cri = "".join(f"2026-11-29T10:08:0{n}.123456789Z stderr F {line}\n" for n, line in enumerate(seed_fmha.splitlines()))
rc, incs, _ = incidents("-", stdin=cri.encode())
check(paging(incs) == ["flashinfer-fmha-unsupported-arch"], "CRI-wrapped seed 1")
check(bool(incs) and incs[0]["first_seen"].startswith("2026-11-29T10:08:00"), "CRI wrapper time is the event time")
docker = "".join(json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-11-29T10:08:01.5Z"}) + "\n"
                 for line in seed_fmha.splitlines())
rc, incs, _ = incidents("-", stdin=docker.encode())
check(paging(incs) == ["flashinfer-fmha-unsupported-arch"], "docker-json-wrapped seed 1")

# Human output: title, where, evidence, remediation.
p = run("scan", corpus("fmha_unsupported_arch__mini-sglang-129.log"))
text = p.stdout.decode()
check(p.returncode == 1 and "FlashInfer FMHA has no kernel" in text and "remediation:" in text and "evidence:" in text,
      "human output shows title, evidence and remediation")

# --explain shows hits and state changes.
p = run("scan", "--explain", "-", stdin=seed_fmha.encode())
check(b"explain: line 1" in p.stdout and b"sequence complete" in p.stdout, "--explain traces hits and steps")

with tempfile.TemporaryDirectory() as tmp:
    # Several files: each is let go of once read to its end, so a failure no rule knows at the end of the first file
    # is reported when that file is done, before the second file's incidents (it was held until the whole scan ended,
    # with everything the pipeline kept for every file read).
    first, second = os.path.join(tmp, "a.log"), os.path.join(tmp, "b.log")
    with open(first, "w") as f:
        f.write("INFO 11-29 10:08:01 [serve.py:3] starting\nTraceback (most recent call last):\n"
                '  File "/app/serve.py", line 12, in <module>\n    main()\n'
                '  File "/app/serve.py", line 9, in main\n    raise ValueError("widget frobnication failed")\n'
                "ValueError: widget frobnication failed\n")
    with open(second, "w") as f:
        f.write(seed_fmha)
    for jobs in ("1", "2"):
        rc, incs, _ = incidents("-j", jobs, first, second)
        order = [(i["rule"], os.path.basename(i["stream"])) for i in incs]
        check(order == [("unclassified-failure", "a.log"), ("flashinfer-fmha-unsupported-arch", "b.log")],
              f"-j {jobs}: the first file's unclassified failure comes before the second file's incident ({order})")

    # Binary garbage and a 50 MB line without newline: counted, never a crash.
    junk = os.path.join(tmp, "junk.log")
    with open(junk, "wb") as f:
        f.write(os.urandom(2_000_000))
        f.write(b"\n" + b"A" * 50_000_000)
        f.write(b"\n" + seed_fmha.encode())
    rc, incs, p = incidents(junk)
    check(rc in (0, 1), f"binary and 50 MB line: no crash (exit {rc})")
    check(b"truncated" in p.stderr, "the over-long line is reported as truncated")
    check("flashinfer-fmha-unsupported-arch" in [i["rule"] for i in incs], "lines after the garbage still match")
    check(all(json.dumps(i).encode("utf-8") for i in incs), "JSON output stays valid UTF-8")

    # A broken rule file: every error with its position, exit status 2 for scan, 1 for check.
    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("id: Not_Kebab\ntitle: t\nseverity: sometimes\nevents:\n  a: 'x'\n  b: 'a*'\n"
                "sequence:\n  - event: a\n    within: later\n  - event: c\n")
    p = run("check", bad)
    err = p.stderr.decode()
    print(err)
    check(p.returncode == 1, "check exits non-zero on errors")
    check(f"{bad}:1:5: error:" in err, "error position for the id (1-based)")
    check(f"{bad}:3:11: error:" in err, "error position for the severity")
    check(f"{bad}:9:13: error:" in err, "error position for the duration")
    check(f"{bad}:10:5: error:" in err and "unknown event 'c'" in err, "unknown event named")
    p = run("scan", "--rules", bad, "-", stdin=b"x\n")
    check(p.returncode == 2, "scan with a broken rule file exits 2")
    hs_bad = os.path.join(tmp, "hs.yaml")
    with open(hs_bad, "w") as f:
        f.write("id: hs-bad\ntitle: t\nseverity: info\nevents:\n  a: 'a*'\n  b: 'fine'\nsequence: [a, b]\n")
    p = run("check", hs_bad)
    check(p.returncode == 1 and f"{hs_bad}:5:6: error: rule 'hs-bad', event 'a': Hyperscan cannot compile" in p.stderr.decode(),
          "a pattern Hyperscan rejects is named with rule, event and position")

p = run("check", os.path.join(SRC, "rules"))
check(p.returncode == 0 and p.stdout.startswith(b"ok:"), "the shipped catalog checks clean")
p = run("version")
check(p.returncode == 0 and p.stdout.startswith(b"faultline "), "version")

tally.finish()
