#!/usr/bin/env python3
"""Pad the seed pattern list with synthetic, rule-shaped fingerprint patterns (deterministic).

A real faultline rule catalog is many events, each a distinctive literal (an exception type, an error
string, a kernel or library name, a source file) joined by short bounded gaps, small classes and numbers.
Mostly they do not match healthy traffic; a few share a common log prefix. This generator produces
patterns of those shapes -- never a `.*` soup and never a leading/trailing `.*` -- so that the cost of
20 vs 100 vs 1000 rules can be measured on the same corpus.

  gen_patterns.py                       # (re)writes patterns/synth-100.txt and patterns/synth-1000.txt
  gen_patterns.py --count 500 --out F   # one custom list

Each output starts with the seed patterns (patterns/seed.txt, comments dropped) and is padded with
synthetic ones up to --count. Only the Python 3 standard library is used; same seed => same file.
"""
from __future__ import annotations

import argparse
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

EXCEPTIONS = ["RuntimeError", "ValueError", "AssertionError", "KeyError", "TypeError", "NotImplementedError",
              "ImportError", "ModuleNotFoundError", "OSError", "TimeoutError", "ConnectionError", "IndexError",
              "torch._dynamo.exc.BackendCompilerFailed", "triton.runtime.errors.OutOfResources",
              "torch.distributed.DistBackendError", "ray.exceptions.RayActorError", "pydantic_core.ValidationError",
              "c10::Error", "std::runtime_error", "tensorrt_llm::common::TllmException", "cutlass::Status",
              "zmq.error.ZMQError", "safetensors_rust.SafetensorError", "jinja2.exceptions.TemplateError",
              "huggingface_hub.errors.HfHubHTTPError", "tvm.error.InternalError", "asyncio.TimeoutError"]

COMPONENTS = ["FlashInfer", "FlashMLA", "DeepGEMM", "CUTLASS", "cuBLASLt", "cuDNN", "Triton", "NCCL", "NVSHMEM",
              "DeepEP", "Marlin", "Machete", "AllSpark", "FlashAttention", "xFormers", "TileLang", "CuTeDSL",
              "TensorRT", "EPLB", "LMCache", "NIXL", "Mooncake", "UCX", "Gloo", "CustomAllreduce", "QuickAllReduce",
              "PyNcclCommunicator", "SymmMemCommunicator", "MoE", "FusedMoE", "TRTLLM-Gen", "trtllm-gen", "cuda-python",
              "CUDAGraph", "torch.compile", "Inductor", "Dynamo", "MPI", "Ray", "ZMQ", "GDRCopy", "nvidia-smi",
              "DCGM", "NVLink", "NVSwitch", "fabricmanager", "IMEX", "MIG", "ModelOpt", "AutoTuner"]

KERNELS = ["fused_moe", "grouped_gemm", "scaled_mm", "paged_attention_v2", "rms_norm", "fused_add_rms_norm",
           "rotary_embedding", "silu_and_mul", "topk_softmax", "moe_align_block_size", "all_reduce",
           "reduce_scatter", "all_gather", "cutlass_scaled_mm_sm90", "cutlass_moe_mm", "fp8_blockwise_gemm",
           "nvfp4_gemm", "mxfp8_gemm", "bmm_fp8", "merge_attn_states", "reshape_and_cache_flash",
           "concat_and_cache_mla", "sparse_prefill_fwd", "trtllm_batch_decode_mla", "batch_prefill_with_kv_cache",
           "gptq_marlin_gemm", "awq_dequantize", "per_token_group_quant_fp8", "dynamic_scaled_fp8_quant",
           "selective_scan_fwd", "causal_conv1d_fwd", "mamba_chunk_scan", "deep_gemm_fp8_fp8_bf16_nt",
           "m_grouped_gemm_fp8_fp8_bf16_nt_masked", "ep_moe_dispatch", "ep_moe_combine", "sampling_from_probs",
           "top_k_top_p_sampling_from_logits", "fmha_v2_flash_attention", "xqa_dispatch"]

PHRASES = ["failed to initialize", "is not supported on this device", "unsupported architecture",
           "unsupported data type", "unsupported head size", "out of resources", "misaligned address",
           "device-side assert triggered", "unspecified launch failure", "invalid device function",
           "an illegal instruction was encountered", "uncorrectable ECC error encountered",
           "operation not permitted when stream is capturing", "invalid configuration argument",
           "too many resources requested for launch", "shared memory size exceeds", "workspace too small",
           "failed to allocate workspace", "no valid tactic found", "tactic profiling failed",
           "could not find a valid kernel", "requires compute capability", "exceeds the maximum supported",
           "plan failed", "run failed", "got an invalid shape", "expected contiguous tensor",
           "dtype mismatch", "alignment requirement not met", "timed out waiting for", "connection refused",
           "remote process exited or there was a network error", "peer access is not supported",
           "failed to register memory", "failed to open shared memory", "handle is invalid",
           "is not a valid tensor", "checksum mismatch", "version mismatch", "symbol not found",
           "undefined symbol", "cannot open shared object file", "PTX was compiled with an unsupported toolchain",
           "ptxas fatal", "JIT compilation failed", "cache corrupted", "failed to load cubin",
           "deadlock detected", "NaN detected in", "Inf detected in", "logits contain NaN"]

CUDA_ERRORS = ["misaligned address", "unspecified launch failure", "device-side assert triggered",
               "an illegal instruction was encountered", "uncorrectable ECC error encountered",
               "invalid device ordinal", "initialization error", "operation not supported",
               "the launch timed out and was terminated", "invalid argument", "invalid resource handle",
               "CUDA driver version is insufficient for CUDA runtime version", "system has unsupported display driver / cuda driver combination",
               "unknown error", "peer access is not supported between these two devices", "operation not permitted when stream is capturing",
               "an illegal memory access was encountered during graph replay", "too many resources requested for launch",
               "invalid device function", "device kernel image is invalid", "forward compatibility was attempted on non supported HW",
               "the provided PTX was compiled with an unsupported toolchain", "mapping of buffer object failed",
               "CUDA-capable device(s) is/are busy or unavailable", "all CUDA-capable devices are busy or unavailable"]

STATUS = {"CUBLAS_STATUS": ["EXECUTION_FAILED", "NOT_SUPPORTED", "INTERNAL_ERROR", "ALLOC_FAILED", "INVALID_VALUE",
                            "ARCH_MISMATCH", "NOT_INITIALIZED"],
          "CUDNN_STATUS": ["NOT_SUPPORTED", "EXECUTION_FAILED", "INTERNAL_ERROR", "BAD_PARAM", "ARCH_MISMATCH",
                           "MAPPING_ERROR", "NOT_INITIALIZED"],
          "CUSPARSE_STATUS": ["EXECUTION_FAILED", "INTERNAL_ERROR", "ALLOC_FAILED"],
          "NVML_ERROR": ["GPU_IS_LOST", "NOT_SUPPORTED", "DRIVER_NOT_LOADED", "TIMEOUT", "UNKNOWN"],
          "CUDA_ERROR": ["ILLEGAL_ADDRESS", "LAUNCH_FAILED", "ECC_UNCORRECTABLE", "NOT_PERMITTED",
                         "STREAM_CAPTURE_INVALIDATED", "NO_BINARY_FOR_GPU", "UNSUPPORTED_PTX_VERSION"]}

NCCL_PHRASES = ["Call to ibv_reg_mr failed", "NET/IB : Got completion with error", "Cuda failure 'out of memory'",
                "socketStartConnect: Connect to", "Error : ring", "proxy: Connection closed by remote peer",
                "transport/p2p.cc", "unhandled system error", "remote process exited or there was a network error",
                "invalid usage", "internal error - please report this issue to the NCCL developers",
                "Timeout waiting for connection", "NVLS multicast support is not available",
                "Cuda failure 'invalid device ordinal'", "misc/socket.cc", "init.cc:"]

XIDS = [13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 92, 94, 95, 109, 119, 120, 121, 136, 140, 143, 154]

FILES = ["fmhaRunner", "gemm_grouped", "moe_kernels", "cutlass_heuristic", "allReduceFusionKernels",
         "decoderXQARunner", "kvCacheManager", "mlaKernels", "fp8_gemm", "tmaDescriptor", "TmaDescriptor",
         "copy_traits_sm90_tma", "collective_builder", "sm90_gemm_tma_warpspecialized", "phase1", "flash_api",
         "batch_prefill", "batch_decode", "cudaUtils", "ipcUtils", "mpiUtils", "customAllReduceKernels",
         "ncclUtils", "torchUtils", "quantization", "sampling", "topk", "norm", "rope", "activation"]

COMMON_PREFIXES = [r"\[TensorRT-LLM\]\[ERROR\] ", r"\[TensorRT-LLM\]\[WARNING\] ", r"\[TRT-LLM\] \[E\] ",
                   r"ERROR \d\d-\d\d \d\d:\d\d:\d\d ", r"WARNING \d\d-\d\d \d\d:\d\d:\d\d ", r"Traceback \(most recent call last\)",
                   r"\(EngineCore_DP\d+ pid=\d+\) ERROR ", r"\[rank\d+\]:\[E"]

UNITS = ["ms", "s", "seconds", "minutes"]
META = set("\\^$.|?*+()[]{}")


def lit(s: str) -> str:
    """Escape a literal for Hyperscan (PCRE syntax)."""
    return "".join("\\" + c if c in META else c for c in s)


def gap(rng: random.Random) -> str:
    return rng.choice([r"[^\n]{0,%d}" % rng.choice((20, 40, 60, 80, 120)),
                       ".{0,%d}" % rng.choice((20, 40, 60, 80)),
                       r"[^\n]{%d,%d}" % (1, rng.choice((40, 80, 200))),
                       " ", ": ", r"[ :]{1,3}"])


def shape(rng: random.Random) -> str:
    k = rng.randrange(14)
    if k == 0:
        return lit("%s: %s %s" % (rng.choice(EXCEPTIONS), rng.choice(COMPONENTS), rng.choice(PHRASES)))
    if k == 1:
        return lit(rng.choice(COMPONENTS)) + gap(rng) + lit(rng.choice(PHRASES))
    if k == 2:
        return (lit(rng.choice(KERNELS)) + gap(rng) + "(failed|error|Error)" + r"[^\n]{0,40}"
                + rng.choice(("(code|status)", "(error code|status code)", "returned")) + r" -?\d+")
    if k == 3:
        return (r"Assertion failed: " + lit(rng.choice(PHRASES)) + r"[^\n]{0,80}\(" + r"[^\s()]{1,200}/"
                + lit(rng.choice(FILES)) + r"\.(cu|cuh|cpp|h):\d+\)")
    if k == 4:
        return "CUDA error: " + lit(rng.choice(CUDA_ERRORS))
    if k == 5:
        fam = rng.choice(list(STATUS))
        vals = rng.sample(STATUS[fam], rng.randrange(1, min(4, len(STATUS[fam])) + 1))
        return lit(rng.choice(COMPONENTS + KERNELS)) + gap(rng) + fam + "_(" + "|".join(vals) + ")"
    if k == 6:
        return r"NCCL WARN " + gap(rng) + lit(rng.choice(NCCL_PHRASES))
    if k == 7:
        return ("(?i)" + lit(rng.choice(COMPONENTS)) + r" [a-z ]{0,30}(timed out|timeout) after \d+(\.\d+)? ?("
                + "|".join(rng.sample(UNITS, 2)) + ")")
    if k == 8:
        return r"NVRM: Xid \(PCI:[0-9a-fA-F:.]{7,16}\): %d\b" % rng.choice(XIDS) + rng.choice(("", ", pid=\\d+"))
    if k == 9:
        return (lit(rng.choice(FILES)) + r"\.(cu|cuh|cpp):\d+" + gap(rng) + lit(rng.choice(PHRASES)))
    if k == 10:
        return rng.choice(COMMON_PREFIXES) + gap(rng) + lit(rng.choice(COMPONENTS)) + " " + lit(rng.choice(PHRASES))
    if k == 11:
        return (lit(rng.choice(COMPONENTS)) + r" (version|v)\d+\.\d+(\.\d+)? (is|was) (not supported|deprecated|"
                "incompatible)" + rng.choice(("", " with " + lit(rng.choice(COMPONENTS)))))
    if k == 12:
        return (lit(rng.choice(EXCEPTIONS)) + ": " + lit(rng.choice(KERNELS)) + r"\(\) " + lit(rng.choice(PHRASES))
                + r"[^\n]{0,60}(sm_?\d{2,3}a?|SM\d{2,3})")
    return (lit(rng.choice(KERNELS)) + r" (requires|needs) (at least )?\d+ bytes of shared memory[^\n]{0,40}"
            r"(limit|maximum|max) (is )?\d+")


def read_seed(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]


def build(count: int, seed: int, seed_path: str) -> list[str]:
    pats = read_seed(seed_path)
    have = set(pats)
    rng = random.Random(seed)
    while len(pats) < count:
        p = shape(rng)
        if p not in have:
            have.add(p)
            pats.append(p)
    return pats[:count]


def write(path: str, pats: list[str], count: int, seed: int, n_seed: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("# generated by bench/gen_patterns.py --count %d --seed %d: %d seed patterns (patterns/seed.txt)\n"
                "# then synthetic rule-shaped fingerprints. Do not edit; regenerate.\n" % (count, seed, n_seed))
        for p in pats:
            f.write(p + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, help="total patterns (seed included); default: write the standard sets")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seed-file", default=os.path.join(HERE, "patterns", "seed.txt"))
    ap.add_argument("--out", help="output file (with --count)")
    args = ap.parse_args()
    n_seed = len(read_seed(args.seed_file))
    if args.count:
        pats = build(args.count, args.seed, args.seed_file)
        if args.out:
            write(args.out, pats, args.count, args.seed, n_seed)
        else:
            print("\n".join(pats))
        return
    for n in (100, 1000):
        write(os.path.join(HERE, "patterns", "synth-%d.txt" % n), build(n, args.seed, args.seed_file), n, args.seed,
              n_seed)


if __name__ == "__main__":
    main()
