#!/usr/bin/env python3
"""Per-kind recall and false alarms of the rule catalog on the real corpus, split by source.

Every file of tests/corpus/real/ (described by index.tsv) is scanned on its own with `faultline scan --json`. A file's
expected kind is its index row's expected_incident when that is a rule id (or NONE for a negative control), else the
kind its category names (older rows describe the failure in words). Files are grouped by source - a GitHub repository,
another site, or the device captures - and the sources are split into folds by a hash of their name, so that every
file of one source lands in the same fold. The table reports, per kind, recall on all files and on each fold scored on
its own, and false alarms: an incident that pages (not explained by a root cause, and not info: info never pages) of a
rule other than the file's expected kind; cascade rules and info count only on negative controls, where nothing may
fire at all.

    scripts/generalisation.py            print the table
    scripts/generalisation.py --write    regenerate it in rules/README.md (between the generalisation markers)
    scripts/generalisation.py --check    exit 1 when rules/README.md is out of date
    scripts/generalisation.py --files    also print the verdict per file

The binary is FAULTLINE_BIN, else --bin, else build/faultline of the source tree.
"""
import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

TOP = os.environ.get("FAULTLINE_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CORPUS = os.path.join(TOP, "tests", "corpus", "real")
README = os.path.join(TOP, "rules", "README.md")
BEGIN, END = "<!-- generalisation:begin -->\n", "<!-- generalisation:end -->"
UNCLASSIFIED = "unclassified-failure"  # the rule id of the detector of failures no rule knows
NOW = "2026-12-31T23:59:59Z"  # fixed reference time: results must not depend on the files' mtimes
FOLDS = 5

# Index rows written before expected_incident named a rule id describe the failure in words; their category names it.
CATEGORY_KIND = {
    "attention_backend_unsupported": "attention-backend-unsupported",
    "chat_template_error": "chat-template-error",
    "cuda_oom": "cuda-out-of-memory",
    "cutlass_gemm_init_failed": "cutlass-gemm-init-failed",
    "cutlass_moe_tma": "flashinfer-moe-tma-grouped-gemm",
    "cutlass_scaled_mm": "cutlass-scaled-mm-unsupported",
    "deepgemm_unsupported_arch": "deepgemm-unsupported-arch",
    "engine_core_fatal": "cuda-tma-descriptor-error",
    "engine_dead": "engine-dead",
    "engine_init_failed": "engine-init-failed",
    "fmha_unsupported_arch": "flashinfer-fmha-unsupported-arch",
    "fp8_arch_unsupported": "fp8-unsupported-arch",
    "illegal_memory_access": "cuda-illegal-memory-access",
    "kv_cache_lt_max_model_len": "kv-cache-below-max-model-len",
    "max_model_len": "max-model-len-exceeds-model",
    "moe_gemm_runtime_error": "moe-gemm-runtime-error",
    "nccl_error": "nccl-error",
    "nccl_watchdog_timeout": "nccl-watchdog-timeout",
    "no_cache_blocks": "kv-cache-no-blocks",
    "no_kernel_image": "cuda-no-kernel-image",
    "ray_worker_died": "ray-worker-died",
    "tma_descriptor_generic": "cuda-tma-descriptor-error",
    "torch_compile_failure": "torch-compile-failure",
    "triton_ptxas_arch": "triton-ptxas-unsupported-arch",
    "xid_error": "gpu-xid-error",
}
# What marks an excerpt whose decisive line is missing (a precursor, a traceback cut before the exception): the file
# name, the index's own capitals, or, for a root-cause kind, a row saying the decisive line is not in the excerpt
# (for a cascade kind that phrase is about the root cause, and the cascade's own line is there).
PARTIAL_NAMES = ("-partial", "-precursor")
PARTIAL_CAPS = ("PARTIAL", "PRECURSOR")
PARTIAL_WORDS = ("not in excerpt", "not in the excerpt", "not in this excerpt", "only in the issue title")
CASCADES = ("engine-dead", "engine-init-failed", "ray-worker-died", "scheduler-exception", "server-down", "worker-died")


def binary(arg):
    b = os.environ.get("FAULTLINE_BIN") or arg or os.path.join(TOP, "build", "faultline")
    if not os.access(b, os.X_OK):
        sys.exit(f"generalisation: no faultline binary at {b} (set FAULTLINE_BIN or --bin)")
    return b


def rule_ids(bin_, rules):
    p = subprocess.run([bin_, "rules", "list", rules], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in p.stdout.splitlines() if line.strip()}


def source_of(url):
    """A GitHub repository, another site's first path segment, or the device captures: one source."""
    url = url.strip()
    if not url.startswith("http"):
        return "device-capture" if url.startswith("device capture") else url.split()[0]
    rest = url.split("://", 1)[1]
    host, _, path = rest.partition("/")
    parts = [p for p in path.split("/") if p]
    if host.endswith("github.com") and len(parts) >= 2:
        return f"{parts[0]}/{parts[1]}"
    return host + ("/" + parts[0] if parts else "")


def fold_of(source, folds):
    return int(hashlib.sha1(source.encode()).hexdigest(), 16) % folds


def read_index(ids):
    rows = []
    with open(os.path.join(CORPUS, "index.tsv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            name = row["filename"].strip()
            if not name:
                continue
            exp = (row.get("expected_incident") or "").strip()
            cat = (row.get("category") or "").strip()
            if exp.startswith("NONE"):
                kind = "NONE"
            elif exp in ids:
                kind = exp
            elif exp.startswith("unclassified-failure"):
                kind = "unclassified"
            else:
                kind = CATEGORY_KIND.get(cat, "unclassified")
            text = " ".join(str(row.get(k) or "") for k in ("expected_incident", "notes"))
            partial = kind not in ("NONE", "unclassified") and (
                any(m in name for m in PARTIAL_NAMES) or any(m in text for m in PARTIAL_CAPS)
                or (kind not in CASCADES and any(m in text.lower() for m in PARTIAL_WORDS)))
            src = source_of(row.get("source_url") or "")
            rows.append({"file": name, "kind": kind, "partial": partial, "source": src,
                         "url": (row.get("source_url") or "").strip()})
    return rows


def scan(bin_, rules, paths, cache):
    """The latest revision of every incident of one `faultline scan` over PATHS, grouped by stream (file)."""
    p = subprocess.run([bin_, "scan", "--json", "--rules", rules, "--now", NOW, "--cache", cache, *paths],
                       capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):
        sys.exit(f"generalisation: scan failed ({p.returncode}): {p.stderr.strip()}")
    latest = {}
    for line in p.stdout.splitlines():
        if line.strip():
            inc = json.loads(line)
            latest[inc["id"]] = inc
    return latest


def evaluate(bin_, rules, rows, folds):
    """One scan over every file (each file is its own stream); a file with an incident explained by an incident of
    another file (the node-wide rules relate streams) is scanned again on its own, so files never explain each other."""
    paths = {os.path.join(CORPUS, r["file"]): r for r in rows}
    with tempfile.TemporaryDirectory() as cache:
        latest = scan(bin_, rules, list(paths), cache)
        by_stream = defaultdict(list)
        alone = set()
        for inc in latest.values():
            files = {e["stream"] for e in inc.get("evidence", []) if e.get("stream") in paths}
            if inc["stream"] in paths:
                files.add(inc["stream"])
            if len(files) != 1 or inc["stream"] not in paths:
                alone |= files  # a node-wide story: the lines of several files, or one file's kept by node
            for f in files:
                by_stream[f].append(inc)
        for stream, incs in by_stream.items():
            for inc in incs:
                cause = latest.get((inc.get("caused_by") or {}).get("id", ""))
                if inc.get("caused_by") and (cause is None or cause["stream"] != stream):
                    alone.add(stream)
        for stream in alone:
            by_stream[stream] = list(scan(bin_, rules, [stream], cache).values())
        for path, r in paths.items():
            incs = by_stream.get(path, [])
            r["raised"] = sorted({i["rule"] for i in incs})
            # A failure no kind covers is recognised by the detector of unknown failures (docs/fingerprints.md).
            r["hit"] = r["kind"] in r["raised"] or (r["kind"] == "unclassified" and UNCLASSIFIED in r["raised"])
            # A typed failure the kind missed that still pages as an unknown failure: caught by the fallback, not a
            # false alarm (beside its recognised kind it would be one: a second page for the same failure).
            r["fallback"] = not r["hit"] and UNCLASSIFIED in r["raised"] and r["kind"] not in ("NONE", "unclassified")
            # The root cause that an incident of the expected kind points at (a cascade's unclassified cause) is the
            # file's one page, not a second one.
            causes = {(i.get("caused_by") or {}).get("id") for i in incs if i["rule"] == r["kind"]} - {None}
            alarms = set()
            for i in incs:
                if i.get("caused_by") or i["rule"] == r["kind"] or i["id"] in causes:
                    continue
                if i.get("severity") == "info" and r["kind"] != "NONE":
                    continue  # does not page (a failure the server survives); on a negative control nothing may fire
                if i["rule"] == UNCLASSIFIED and (r["kind"] == "unclassified" or r["fallback"]):
                    continue
                cascade = (i.get("labels") or {}).get("category") == "cascade"
                if not cascade or r["kind"] == "NONE":
                    alarms.add(i["rule"])
            r["alarms"] = sorted(alarms)
            r["fold"] = fold_of(r["source"], folds)
    return rows


def pct(a, b):
    return "-" if b == 0 else f"{100.0 * a / b:.0f} %"


def table(rows, folds):
    kinds = sorted({r["kind"] for r in rows if r["kind"] not in ("NONE", "unclassified")})
    alarms = defaultdict(list)
    for r in rows:
        for rule in r["alarms"]:
            alarms[rule].append(r["file"])
    out = []
    head = ["kind", "files", "public reports", "recall, all files", "recall, complete excerpts"]
    head += [f"fold {i} (complete)" for i in range(folds)] + ["false alarms"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for k in kinds:
        mine = [r for r in rows if r["kind"] == k]
        full = [r for r in mine if not r["partial"]]
        urls = {r["url"] for r in mine if r["url"].startswith("http")}
        cells = [f"`{k}`", str(len(mine)), str(len(urls)),
                 f"{sum(r['hit'] for r in mine)}/{len(mine)} ({pct(sum(r['hit'] for r in mine), len(mine))})",
                 f"{sum(r['hit'] for r in full)}/{len(full)} ({pct(sum(r['hit'] for r in full), len(full))})"]
        for i in range(folds):
            f = [r for r in full if r["fold"] == i]
            cells.append("-" if not f else f"{sum(r['hit'] for r in f)}/{len(f)}")
        cells.append(str(len(alarms.get(k, []))))
        out.append("| " + " | ".join(cells) + " |")
    others = sorted(set(alarms) - set(kinds))
    for rule in others:
        out.append("| " + " | ".join([f"`{rule}` (no corpus file expects it)", "0", "0", "-", "-"]
                                     + ["-"] * folds + [str(len(alarms[rule]))]) + " |")
    neg = [r for r in rows if r["kind"] == "NONE"]
    unc = [r for r in rows if r["kind"] == "unclassified"]
    full = [r for r in rows if r["kind"] not in ("NONE", "unclassified") and not r["partial"]]
    out.append("")
    out.append(f"Negative controls (healthy start-ups, benign DEBUG/WARNING): {len(neg)} files, "
               f"{sum(bool(r['raised']) for r in neg)} raise anything. Failures no kind covers yet (unclassified): "
               f"{len(unc)} files, {sum(r['hit'] for r in unc)} raise their `{UNCLASSIFIED}` incident, "
               f"{sum(bool(r['alarms']) for r in unc)} a typed incident (a wrong cause). "
               f"Complete excerpts of the kinds above: {len(full)} files, {sum(r['hit'] for r in full)} recognised "
               f"({pct(sum(r['hit'] for r in full), len(full))}).")
    srcs = defaultdict(set)
    for r in rows:
        srcs[r["fold"]].add(r["source"])
    out.append("")
    out.append("Folds (by source; " + str(len({r['source'] for r in rows})) + " sources): " + "; ".join(
        f"fold {i}: {len(srcs[i])} sources, {sum(1 for r in rows if r['fold'] == i)} files" for i in range(folds))
        + ".")
    if alarms:
        out.append("")
        out.append("False alarms: " + "; ".join(f"`{k}` on {', '.join(sorted(v))}" for k, v in sorted(alarms.items()))
                   + ".")
    fallback = [r for r in rows if r.get("fallback")]
    if fallback:
        out.append("")
        out.append(f"Typed failures whose kind missed them but that still page as `{UNCLASSIFIED}`: " + ", ".join(
            f"`{r['file']}` ({r['kind']})" for r in fallback) + ".")
    missed = [r for r in full if not r["hit"]]
    if missed:
        out.append("")
        out.append("Missed complete excerpts: " + "; ".join(
            f"`{r['file']}` ({r['kind']}; raised {', '.join(r['raised']) or 'nothing'})" for r in missed) + ".")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--bin")
    ap.add_argument("--rules", default=os.path.join(TOP, "rules"))
    ap.add_argument("--folds", type=int, default=FOLDS)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--files", action="store_true")
    a = ap.parse_args()
    bin_ = binary(a.bin)
    rows = evaluate(bin_, a.rules, read_index(rule_ids(bin_, a.rules)), a.folds)
    text = table(rows, a.folds)
    if a.files:
        for r in rows:
            verdict = "ok" if (r["hit"] if r["kind"] != "NONE" else not r["raised"]) else "MISS"
            if r["kind"] == "unclassified":
                verdict = "alarm" if r["alarms"] else "-"
            print(f"{verdict:5} fold{r['fold']} {r['kind']:34} {'partial ' if r['partial'] else ''}{r['file']}: "
                  f"{', '.join(r['raised']) or 'nothing'}")
    if a.write or a.check:
        readme = open(README, encoding="utf-8").read()
        if BEGIN not in readme or END not in readme:
            sys.exit("generalisation: rules/README.md has no generalisation markers")
        head, rest = readme.split(BEGIN, 1)
        current, tail = rest.split(END, 1)
        if a.check:
            if current != text:
                print("generalisation: the table in rules/README.md is out of date; run scripts/generalisation.py --write")
                return 1
            print("generalisation: table up to date")
            return 0
        open(README, "w", encoding="utf-8").write(head + BEGIN + text + END + tail)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
