#!/usr/bin/env python3
"""Deterministic generator of realistic GPU inference-serving logs (faultline benchmarks).

One file of ~950 lines, most of it data: the line templates of three engines and of the injected failures, each
beside the few lines that fill it in; the generator is meant to be copied and run on its own.

The corpus mixes steady-state traffic of three engines the way a node-level tailer sees it:

  vLLM     (APIServer / EngineCore_DP0 prefixes, loggers.py throughput lines, uvicorn access lines,
            long `Received request ... prompt: ...` lines, benign WARNINGs, handled client-disconnect
            tracebacks, healthy start-ups),
  TRT-LLM  (`[MM/DD/YYYY-HH:MM:SS] [TRT-LLM] [I]` iteration logs, `[TensorRT-LLM][INFO]`, the wall of
            benign `[TensorRT-LLM][WARNING] ... is not specified, will use default value` lines),
  SGLang   (`[YYYY-MM-DD HH:MM:SS TP0] Decode batch. ...`, `Prefill batch. ...`, access lines),

plus tqdm progress lines (some with carriage-return updates on one physical line) and long JSON request
dumps from a gateway. Line lengths: mean ~130-150 bytes, ~1-2 % of lines between 1 and 8 KB.

Rare failures are injected with `--inject RATE` (probability per emitted line of starting one failure
sequence); `--manifest FILE` lists them as JSON. Wording follows tests/corpus/real/*.log.

Speed: every single-line template is pre-rendered into a pool of variants once; the hot loop only picks
a template (weighted, in batches), picks a variant, glues a per-second cached prefix and appends. About
1.5-3 s per million lines for --format raw on the 2-core bench machine (CRI/docker add per-line
timestamps).

Only the Python 3 standard library is used. Same arguments => byte-identical output.
"""
from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import random
import sys
import time

# --------------------------------------------------------------------------------------------------
# Prefix styles. Each style is a function of the current second (formatted once per second).
# --------------------------------------------------------------------------------------------------

API_PID = 1
EC_PID = 88

STYLES = [
    # name,            format (strftime-like with our own fields)
    ("none",           ""),
    ("api_info",       "(APIServer pid=%(api)d) INFO %(md)s %(hms)s "),
    ("api_warn",       "(APIServer pid=%(api)d) WARNING %(md)s %(hms)s "),
    ("api_error",      "(APIServer pid=%(api)d) ERROR %(md)s %(hms)s "),
    ("api_uvicorn",    "(APIServer pid=%(api)d) INFO:     "),
    ("api_bare",       "(APIServer pid=%(api)d) "),
    ("ec_info",        "(EngineCore_DP0 pid=%(ec)d) INFO %(md)s %(hms)s "),
    ("ec_warn",        "(EngineCore_DP0 pid=%(ec)d) WARNING %(md)s %(hms)s "),
    ("ec_error",       "(EngineCore_DP0 pid=%(ec)d) ERROR %(md)s %(hms)s "),
    ("ec_bare",        "(EngineCore_DP0 pid=%(ec)d) "),
    ("vllm_info",      "INFO %(md)s %(hms)s "),
    ("uvicorn",        "INFO:     "),
    ("trt_i",          "[%(mdy)s-%(hms)s] [TRT-LLM] [I] "),
    ("trt_w",          "[%(mdy)s-%(hms)s] [TRT-LLM] [W] "),
    ("trt_e",          "[%(mdy)s-%(hms)s] [TRT-LLM] [E] "),
    ("sgl_tp0",        "[%(ymd)s %(hms)s TP0] "),
    ("sgl_tp1",        "[%(ymd)s %(hms)s TP1] "),
    ("sgl",            "[%(ymd)s %(hms)s] "),
    ("dmesg",          "[%(ctime)s] "),
    ("torch_e",        "[rank0]:[E%(mdc)s %(hms)s.%(us)06d %(tid)d "),
]
STYLE_ID = {name: i for i, (name, _) in enumerate(STYLES)}
S = STYLE_ID  # short alias used by the template tables


def render_prefixes(t: dt.datetime) -> list[str]:
    f = {
        "api": API_PID, "ec": EC_PID,
        "md": t.strftime("%m-%d"), "hms": t.strftime("%H:%M:%S"),
        "mdy": t.strftime("%m/%d/%Y"), "ymd": t.strftime("%Y-%m-%d"),
        "ctime": t.strftime("%a %b %d %H:%M:%S %Y"), "mdc": t.strftime("%m%d"),
        "us": t.microsecond, "tid": 12,
    }
    return [fmt % f if fmt else "" for _, fmt in STYLES]


# --------------------------------------------------------------------------------------------------
# Vocabulary for pre-rendering
# --------------------------------------------------------------------------------------------------

WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from or "
         "one had by word but not what all were we when your can said there use an each which she do how "
         "their if will up other about out many then them these so some her would make like him into time "
         "has look two more write go see number no way could people my than first water been call who oil "
         "its now find long down day did get come made may part summarize translate explain code python "
         "function return error kernel latency throughput request model token batch cache memory GPU "
         "cluster deploy container service please write a short poem about autumn leaves and distributed "
         "systems consensus quorum leader election replicate log shard").split()

MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3",
          "google/gemma-4-31B-it", "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
          "nvidia/Llama-3.3-70B-Instruct-FP8", "Qwen/Qwen2.5-Coder-7B-Instruct"]
PATHS = ["/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions", "/v1/completions",
         "/v1/embeddings", "/v1/messages"]


def hexid(rng: random.Random, n: int) -> str:
    return "%0*x" % (n, rng.getrandbits(4 * n))


def ip(rng: random.Random) -> str:
    return "10.%d.%d.%d:%d" % (rng.randrange(0, 8), rng.randrange(0, 255), rng.randrange(2, 254),
                                rng.randrange(32768, 61000))


def sentence(rng: random.Random, nbytes: int) -> str:
    out, n = [], 0
    while n < nbytes:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def token_ids(rng: random.Random, nbytes: int) -> str:
    out, n = [], 0
    while n < nbytes:
        t = str(rng.randrange(0, 151000))
        out.append(t)
        n += len(t) + 2
    return ", ".join(out)


# --------------------------------------------------------------------------------------------------
# Single-line templates: (weight, style, stream, renderer(rng) -> body, pool size)
# --------------------------------------------------------------------------------------------------

def t_uvicorn_api(rng):
    r = rng.random()
    if r < 0.85:
        return '%s - "POST %s HTTP/1.1" 200 OK' % (ip(rng), rng.choice(PATHS))
    if r < 0.95:
        return '127.0.0.1:%d - "GET /metrics HTTP/1.1" 200 OK' % rng.randrange(32768, 61000)
    if r < 0.99:
        return '127.0.0.1:%d - "GET /health HTTP/1.1" 200 OK' % rng.randrange(32768, 61000)
    return '%s - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request' % ip(rng)


def t_vllm_added(rng):
    return "[async_llm.py:%d] Added request chatcmpl-%s." % (rng.choice((261, 284, 339)), hexid(rng, 32))


def t_vllm_throughput(rng):
    return ("[loggers.py:123] Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: "
            "%.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit "
            "rate: %.1f%%" % (rng.uniform(0, 9000), rng.uniform(0, 4000), rng.randrange(0, 64),
                              rng.randrange(0, 8), rng.uniform(0, 95), rng.uniform(0, 80)))


def t_vllm_received(rng):
    # The long line of vLLM serving with --enable-log-requests: 600 B .. 8 KB.
    size = int(rng.choice((600, 900, 1400, 2000, 3000, 4500, 6500, 7800)) * rng.uniform(0.8, 1.0))
    prompt = sentence(rng, size // 2)
    ids = token_ids(rng, size // 2)
    return ("[logger.py:43] Received request chatcmpl-%s: prompt: '<|im_start|>user\\n%s<|im_end|>\\n"
            "<|im_start|>assistant\\n', params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
            "repetition_penalty=1.0, temperature=%.1f, top_p=0.95, top_k=-1, min_p=0.0, seed=None, stop=[], "
            "stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens=%d, "
            "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
            "spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
            "extra_args=None), prompt_token_ids: [%s], prompt_embeds shape: None, lora_request: None."
            % (hexid(rng, 32), prompt, rng.choice((0.0, 0.6, 0.7, 1.0)), rng.randrange(16, 4096), ids))


def t_vllm_finished(rng):
    if rng.random() < 0.7:
        return "[async_llm.py:%d] Finished request chatcmpl-%s." % (rng.choice((417, 452)), hexid(rng, 32))
    return "[async_llm.py:%d] Aborted request chatcmpl-%s." % (rng.choice((417, 452)), hexid(rng, 32))


def t_vllm_warn(rng):
    return rng.choice((
        "[protocol.py:73] The following fields were present in the request but ignored: {'%s'}"
        % rng.choice(("stream_options_hint", "metadata", "store", "parallel_tool_calls", "user_id")),
        "[serving_chat.py:%d] Tool call parsing failed for request chatcmpl-%s; returning content as text."
        % (rng.randrange(200, 1400), hexid(rng, 32)),
        "[scheduler.py:%d] Sequence group chatcmpl-%s is preempted by PreemptionMode.RECOMPUTE mode because "
        "there is not enough KV cache space. This can affect the end-to-end performance. Increase "
        "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
        "total_num_cumulative_preemption=%d" % (rng.randrange(1100, 1800), hexid(rng, 32), rng.randrange(1, 500)),
        "[jit_monitor.py:135] Triton kernel JIT compilation during inference: _%s_kernel. This causes a latency "
        "spike; consider extending warmup to cover this shape/config."
        % rng.choice(("compute_prefill_metadata", "combine_topk_swa_indices", "prepare_dflash_inputs")),
    ))


def t_ec_info(rng):
    return rng.choice((
        "[kv_cache_manager.py:%d] Prefix cache hit rate: %.2f%%" % (rng.randrange(100, 400), rng.uniform(0, 90)),
        "[gpu_model_runner.py:%d] Graph capturing finished in %d secs, took %.2f GiB"
        % (rng.randrange(2000, 7000), rng.randrange(5, 40), rng.uniform(0.2, 2.0)),
        "[core.py:%d] Waiting for new requests..." % rng.randrange(300, 900),
    ))


def t_trt_iter(rng):
    ctx = rng.randrange(0, 3)
    gen = rng.randrange(0, 64)
    return ("iter = %d, global_rank = 0, rank = 0, currank_total_requests = %d/%d, host_step_time = %.6fms, "
            "prev_device_step_time = %.6fms, timestamp = 2026-11-29 10:%02d:%02d, num_scheduled_requests: %d, "
            "states = {'num_ctx_requests': %d, 'num_ctx_tokens': %d, 'num_generation_tokens': %d}"
            % (rng.randrange(1, 10 ** 6), ctx + gen, ctx + gen, rng.uniform(5, 60), rng.uniform(5, 60),
               rng.randrange(60), rng.randrange(60), ctx + gen, ctx, ctx * rng.randrange(64, 4096), gen))


def t_trtcpp_info(rng):
    return rng.choice((
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated %.2f GiB for max tokens in paged KV cache (%d)."
        % (rng.uniform(1, 70), rng.randrange(10000, 700000)),
        "[TensorRT-LLM][INFO] Number of tokens per block: 32.",
        "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: %d [window size=%d], tokens per block=32, "
        "primary blocks=%d, secondary blocks=0, max sequence length=%d"
        % (rng.randrange(100, 9000), rng.randrange(8192, 262144), rng.randrange(100, 9000), rng.randrange(8192, 262144)),
    ))


TRT_DEFAULT_WARNINGS = (
    "max_beam_width is not specified, will use default value of 1",
    "iter_stats_max_iterations is not specified, will use default value of 1000",
    "request_stats_max_iterations is not specified, will use default value of 0",
    "max_tokens_in_paged_kv_cache is not specified, will use default value",
    "kv_cache_free_gpu_mem_fraction is not specified, will use default value of 0.9 or max_tokens_in_paged_kv_cache",
    "max_attention_window_size is not specified, will use default value (i.e. max_sequence_length)",
    "sink_token_length is not specified, will use default value",
    "enable_chunked_context is not specified, will be set to false.",
    "cancellation_check_period_ms is not specified, will be set to 100 (ms)",
    "exclude_input_in_output is not specified, will be set to false",
)


def t_trtcpp_warn(rng):
    return "[TensorRT-LLM][WARNING] " + rng.choice(TRT_DEFAULT_WARNINGS)


def t_trt_warn(rng):
    return rng.choice((
        "Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and %d, respectively). "
        "The smaller value will be used." % rng.randrange(4096, 300000),
        "Logger level already set from environment. Discard new verbosity: error",
        "Using default gpus_per_node: 8",
    ))


def t_sgl_decode(rng):
    running = rng.randrange(1, 256)
    return ("Decode batch. #running-req: %d, #token: %d, token usage: %.2f, cuda graph: %s, gen throughput "
            "(token/s): %.2f, #queue-req: %d, " % (running, running * rng.randrange(200, 4000), rng.uniform(0, 0.95),
                                                  rng.choice(("True", "True", "False")), rng.uniform(20, 6000),
                                                  rng.randrange(0, 40)))


def t_sgl_prefill(rng):
    return ("Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, #running-req: %d, "
            "#queue-req: %d, " % (rng.randrange(1, 16), rng.randrange(16, 16384), rng.randrange(0, 16384),
                                  rng.uniform(0, 0.95), rng.randrange(0, 256), rng.randrange(0, 40)))


def t_sgl_access(rng):
    return 'INFO:     %s - "POST %s HTTP/1.1" 200 OK' % (ip(rng), rng.choice(PATHS[:4]))


def t_sgl_receive(rng):
    size = rng.choice((800, 1500, 3000, 5000))
    return ("Receive: obj=GenerateReqInput(text='%s', input_ids=None, sampling_params={'temperature': 0.7, "
            "'max_new_tokens': %d}, rid='%s', return_logprob=False, stream=True, log_metrics=True)"
            % (sentence(rng, size), rng.randrange(16, 4096), hexid(rng, 32)))


def t_sgl_misc(rng):
    return rng.choice((
        "Cache flushed successfully!",
        "Abort request rid='%s'" % hexid(rng, 32),
        "Received output for rid='%s' but the state was deleted in TokenizerManager." % hexid(rng, 32),
    ))


def t_json_dump(rng):
    n_msgs = rng.randrange(2, 12)
    msgs = []
    for _ in range(n_msgs):
        msgs.append({"role": rng.choice(("user", "assistant", "system", "tool")),
                     "content": sentence(rng, rng.randrange(80, 700))})
    rec = {"level": "info", "ts": "2026-11-29T10:%02d:%02d.%03dZ" % (rng.randrange(60), rng.randrange(60),
                                                                     rng.randrange(1000)),
           "logger": "gateway.access", "msg": "request body",
           "request_id": "%s-%s-%s" % (hexid(rng, 8), hexid(rng, 4), hexid(rng, 12)),
           "upstream": "vllm-%d.inference.svc:8000" % rng.randrange(0, 8),
           "body": {"model": rng.choice(MODELS), "stream": rng.random() < 0.6, "max_tokens": rng.randrange(16, 4096),
                    "temperature": rng.choice((0, 0.2, 0.7, 1.0)), "messages": msgs}}
    return json.dumps(rec, separators=(",", ":"))


BAR = "\u2588"


def t_tqdm(rng):
    r = rng.random()
    total = rng.choice((51, 67, 399, 801, 4, 8, 163))
    done = rng.randrange(0, total + 1)
    pct = 100 * done // total
    width = 10
    fill = BAR * (pct * width // 100) + " " * (width - pct * width // 100)
    if r < 0.4:
        return "Loading weights: %3d%%|%s| %d/%d [00:%02d<00:%02d, %.2fit/s]" % (
            pct, fill, done, total, rng.randrange(60), rng.randrange(60), rng.uniform(1, 900))
    if r < 0.7:
        return "Capturing CUDA graphs (decode, FULL): %3d%%|%s| %d/%d [00:%02d<00:%02d,  %.2fit/s]" % (
            pct, fill, done, total, rng.randrange(60), rng.randrange(60), rng.uniform(1, 9))
    if r < 0.9:
        return "Loading safetensors checkpoint shards: %3d%% Completed | %d/%d [00:%02d<00:%02d, %.2fs/it]" % (
            pct, done, total, rng.randrange(60), rng.randrange(60), rng.uniform(1, 20))
    # carriage-return progress: several updates on one physical line (non-tty tqdm output)
    parts = []
    for k in range(rng.randrange(3, 20)):
        p = min(100, k * 7)
        parts.append("[AutoTuner]: Tuning fused_moe: %3d%%|%s| %d/%d [00:%02d<00:00, %.2fprofile/s]"
                     % (p, BAR * (p // 10) + " " * (10 - p // 10), k, 21, k, rng.uniform(1, 9)))
    return "\r".join(parts)


# (weight, style, stream, renderer, pool size)
SINGLE_TEMPLATES = [
    (16.0, "api_uvicorn", "stdout", t_uvicorn_api, 2048),
    (9.0,  "api_info",    "stdout", t_vllm_added, 1024),
    (6.5,  "api_info",    "stdout", t_vllm_finished, 1024),
    (0.6,  "api_info",    "stdout", t_vllm_throughput, 512),
    (0.3,  "api_info",    "stdout", t_vllm_received, 384),
    (0.5,  "api_warn",    "stdout", t_vllm_warn, 256),
    (0.6,  "ec_info",     "stdout", t_ec_info, 256),
    (2.0,  "uvicorn",     "stdout", t_uvicorn_api, 1024),
    (1.0,  "vllm_info",   "stdout", t_vllm_added, 512),
    (5.0,  "trt_i",       "stdout", t_trt_iter, 2048),
    (0.8,  "none",        "stdout", t_trtcpp_info, 256),
    (0.6,  "none",        "stdout", t_trtcpp_warn, 64),
    (0.3,  "trt_w",       "stdout", t_trt_warn, 64),
    (3.0,  "uvicorn",     "stdout", t_uvicorn_api, 1024),
    (12.0, "sgl_tp0",     "stdout", t_sgl_decode, 2048),
    (4.0,  "sgl_tp0",     "stdout", t_sgl_prefill, 1024),
    (5.0,  "sgl",         "stdout", t_sgl_access, 1024),
    (0.1,  "sgl",         "stdout", t_sgl_receive, 256),
    (0.8,  "sgl",         "stdout", t_sgl_misc, 256),
    (0.1,  "none",        "stdout", t_json_dump, 256),
    (0.9,  "none",        "stderr", t_tqdm, 512),
]

# --------------------------------------------------------------------------------------------------
# Multi-line benign events: functions (rng, P) -> list[(line, stream)]; P = prefixes of this second
# --------------------------------------------------------------------------------------------------

PY = "/usr/local/lib/python3.12/dist-packages"


def ev_vllm_disconnect(rng, P):
    pre = P[S["api_error"]] + "[serving_chat.py:1229] "
    lines = ["Error in chat completion stream generator.", "Traceback (most recent call last):",
             '  File "%s/vllm/entrypoints/openai/serving_chat.py", line 612, in chat_completion_stream_generator' % PY,
             "    async for res in result_generator:",
             '  File "%s/vllm/v1/engine/async_llm.py", line 389, in generate' % PY,
             "    out = q.get_nowait() or await q.get()",
             "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
             '  File "%s/vllm/v1/engine/output_processor.py", line 57, in get' % PY,
             "    raise output",
             "asyncio.exceptions.CancelledError"]
    out = [(pre + ln, "stdout") for ln in lines]
    out.append((P[S["api_info"]] + "[async_llm.py:452] Aborted request chatcmpl-%s." % hexid(rng, 32), "stdout"))
    return out


def ev_starlette_disconnect(rng, P):
    lines = ["Traceback (most recent call last):",
             '  File "%s/starlette/responses.py", line 259, in wrap' % PY,
             "    await func()",
             '  File "%s/starlette/responses.py", line 248, in stream_response' % PY,
             '    await send({"type": "http.response.body", "body": chunk, "more_body": True})',
             '  File "%s/uvicorn/protocols/http/httptools_impl.py", line 544, in send' % PY,
             "    raise ClientDisconnected",
             "uvicorn.protocols.utils.ClientDisconnected",
             "",
             "During handling of the above exception, another exception occurred:",
             "",
             "Traceback (most recent call last):",
             '  File "%s/sglang/srt/entrypoints/http_server.py", line 451, in stream_results' % PY,
             "    async for out in _global_state.tokenizer_manager.generate_request(obj, request):",
             "ConnectionResetError: [Errno 104] Connection reset by peer"]
    out = [(P[S["sgl"]] + "Client disconnected during streaming; aborting request rid='%s'" % hexid(rng, 32),
            "stdout")]
    out += [(ln, "stderr") for ln in lines]
    return out


def ev_vllm_startup(rng, P):
    api, ec = P[S["api_info"]], P[S["ec_info"]]
    ecw = P[S["ec_warn"]]
    model = rng.choice(MODELS)
    args = {"model_tag": model, "host": "0.0.0.0", "port": 8000, "tensor_parallel_size": rng.choice((1, 2, 4, 8)),
            "max_model_len": rng.choice((8192, 16384, 32768, 131072)), "gpu_memory_utilization": 0.92,
            "enable_prefix_caching": True, "served_model_name": [model.split("/")[1].lower()]}
    out = [
        api + "[api_server.py:1896] vLLM API server version 0.11.2",
        api + "[utils.py:233] non-default args: %r" % (args,),
        api + "[model.py:623] Resolved architecture: %sForCausalLM" % rng.choice(("Llama", "Qwen3", "Mistral")),
        api + "[model.py:1788] Using max model len %d" % args["max_model_len"],
        api + "[scheduler.py:252] Chunked prefill is enabled with max_num_batched_tokens=8192.",
        ec + "[core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: model='%s', speculative_config=None, "
             "tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=False, "
             "dtype=torch.bfloat16, max_seq_len=%d, download_dir=None, load_format=auto, tensor_parallel_size=%d, "
             "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
             "kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=%s, enable_prefix_caching=True, "
             "chunked_prefill_enabled=True, pooler_config=None, compilation_config={'level': 3, 'use_cudagraph': True}"
             % (model, model, args["max_model_len"], args["tensor_parallel_size"], model),
        ec + "[parallel_state.py:1208] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0",
        ec + "[gpu_model_runner.py:2602] Starting to load model %s..." % model,
        ec + "[cuda.py:366] Using Flash Attention backend on V1 engine.",
        ecw + "[fa_utils.py:245] FA4 on Blackwell does not support head_size=256 due to TMEM capacity limits, "
              "defaulting to FA version 2.",
        "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]",
        "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:05<00:00,  1.31s/it]",
        ec + "[default_loader.py:267] Loading weights took 5.42 seconds",
        ec + "[gpu_model_runner.py:2653] Model loading took %.4f GiB and 6.183731 seconds" % rng.uniform(8, 70),
        ec + "[backends.py:548] Using cache directory: /root/.cache/vllm/torch_compile_cache/%s/rank_0_0/backbone "
             "for vLLM's torch.compile" % hexid(rng, 10),
        ec + "[monitor.py:34] torch.compile takes 21.44 s in total",
        ec + "[gpu_worker.py:298] Available KV cache memory: %.2f GiB" % rng.uniform(5, 60),
        ec + "[kv_cache_utils.py:1087] GPU KV cache size: %s tokens" % format(rng.randrange(50000, 900000), ","),
        ec + "[kv_cache_utils.py:1091] Maximum concurrency for %s tokens per request: %.2fx"
             % (format(args["max_model_len"], ","), rng.uniform(1, 60)),
        ecw + "[kernel_warmup.py:258] No FlashInfer autotune cache entries found.Falling back to default tactics.",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%%|%s| 67/67 [00:07<00:00,  9.02it/s]" % (BAR * 10),
        ec + "[gpu_model_runner.py:3480] Graph capturing finished in 9 secs, took 0.53 GiB",
        ec + "[core.py:210] init engine (profile, create kv cache, warmup model) took 48.31 seconds",
        api + "[api_server.py:1634] Supported_tasks: ['generate']",
        P[S["api_warn"]] + "[model.py:1546] Default vLLM sampling parameters have been overridden by the model's "
                           "`generation_config.json`: `{'temperature': 0.6, 'top_p': 0.95}`. If this is not intended, "
                           "please relaunch vLLM instance with `--generation-config vllm`.",
        api + "[api_server.py:1912] Starting vLLM API server 0 on http://0.0.0.0:8000",
        P[S["api_uvicorn"]] + "Started server process [%d]" % API_PID,
        P[S["api_uvicorn"]] + "Waiting for application startup.",
        P[S["api_uvicorn"]] + "Application startup complete.",
    ]
    return [(ln, "stdout") for ln in out]


def ev_trt_startup(rng, P):
    i, w = P[S["trt_i"]], P[S["trt_w"]]
    out = [i + "Starting TensorRT-LLM init.", "[TensorRT-LLM][INFO] Set logger level to INFO",
           i + "TensorRT-LLM inited.", "[TensorRT-LLM] TensorRT-LLM version: 1.2.0rc2",
           i + "Using LLM with PyTorch backend", w + "Using default gpus_per_node: 8",
           "Loading safetensors weights in parallel: 100%%|%s| 4/4 [00:00<00:00, 81.92it/s]" % (BAR * 10),
           "Loading weights: 100%%|%s| 801/801 [00:12<00:00, 64.11it/s]" % (BAR * 10),
           "Model init total -- %.2fs" % rng.uniform(3, 60),
           i + "max_seq_len is not specified, using inferred value 131072", i + "Using Sampler: TorchSampler"]
    out += ["[TensorRT-LLM][WARNING] " + x for x in TRT_DEFAULT_WARNINGS]
    out += ["[TensorRT-LLM][INFO] [MemUsageChange] Allocated %.2f GiB for max tokens in paged KV cache (%d)."
            % (rng.uniform(1, 70), rng.randrange(10000, 700000)),
            'INFO:     Started server process [%d]' % rng.randrange(100, 90000),
            "INFO:     Application startup complete.",
            "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"]
    return [(ln, "stdout") for ln in out]


def ev_sgl_startup(rng, P):
    p0, p1, p = P[S["sgl_tp0"]], P[S["sgl_tp1"]], P[S["sgl"]]
    out = [p + "server_args=ServerArgs(model_path='%s', tokenizer_mode='auto', tp_size=2, mem_fraction_static=0.88, "
               "chunked_prefill_size=8192, max_running_requests=None, attention_backend='flashinfer', "
               "enable_torch_compile=False, cuda_graph_max_bs=160, random_seed=%d, log_level='info')"
           % (rng.choice(MODELS), rng.randrange(10 ** 9)),
           p0 + "sglang is using nccl==2.27.3", p1 + "sglang is using nccl==2.27.3",
           p0 + "Load weight begin. avail mem=%.2f GB" % rng.uniform(60, 180),
           p0 + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB."
           % (rng.uniform(20, 60), rng.uniform(8, 70)),
           p0 + "KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
           % (rng.randrange(100000, 900000), rng.uniform(5, 30), rng.uniform(5, 30)),
           p0 + "Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB" % rng.uniform(5, 20),
           p0 + "Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
           % (rng.uniform(5, 40), rng.uniform(0.2, 2), rng.uniform(5, 20)),
           p + "INFO:     Started server process [%d]" % rng.randrange(100, 90000),
           p + "INFO:     Application startup complete.",
           p + "The server is fired up and ready to roll!"]
    return [(ln, "stdout") for ln in out]


# (weight, fn). Weights share the scale of SINGLE_TEMPLATES.
MULTI_EVENTS = [
    (0.05, ev_vllm_disconnect),
    (0.03, ev_starlette_disconnect),
    (0.0006, ev_vllm_startup),
    (0.0006, ev_trt_startup),
    (0.0006, ev_sgl_startup),
]

# --------------------------------------------------------------------------------------------------
# Injected failures: fn(rng, P) -> (list[(line, stream)], key index)
# --------------------------------------------------------------------------------------------------


def tb_frames(pre, frames):
    out = [pre + "Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out.append(pre + '  File "%s/%s", line %d, in %s' % (PY, path, line, fn))
        out.append(pre + "    " + code)
    return out


ENGINE_STEP_FRAMES = [
    ("vllm/v1/engine/core.py", 701, "run_engine_core", "engine_core.run_busy_loop()"),
    ("vllm/v1/engine/core.py", 728, "run_busy_loop", "self._process_engine_step()"),
    ("vllm/v1/engine/core.py", 754, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
    ("vllm/v1/engine/core.py", 284, "step", "model_output = self.execute_model_with_error_logging("),
    ("vllm/v1/executor/abstract.py", 87, "execute_model", "output = self.collective_rpc(\"execute_model\","),
    ("vllm/v1/worker/gpu_worker.py", 447, "execute_model", "output = self.model_runner.execute_model(scheduler_output,"),
    ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    ("vllm/v1/worker/gpu_model_runner.py", 2251, "execute_model", "model_output = self.model("),
]

ENGINE_INIT_FRAMES = [
    ("vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
    ("vllm/v1/engine/core.py", 498, "__init__", "super().__init__(vllm_config, executor_class, log_stats,"),
    ("vllm/v1/engine/core.py", 92, "__init__", "self._initialize_kv_caches(vllm_config)"),
    ("vllm/v1/engine/core.py", 199, "_initialize_kv_caches", "kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs,"),
    ("vllm/v1/core/kv_cache_utils.py", 1243, "get_kv_cache_configs", "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,"),
    ("vllm/v1/core/kv_cache_utils.py", 716, "check_enough_kv_cache_memory", "raise ValueError("),
]

TORCH_HINTS = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
               "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]


def api_init_failed(P):
    return [(P[S["api_bare"]] + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
             "stdout")]


def f_fmha(rng, P):
    i, w = P[S["trt_i"]], P[S["trt_w"]]
    lines = [i + "Starting TensorRT-LLM init.", "[TensorRT-LLM][INFO] Set logger level to INFO",
             i + "TensorRT-LLM inited.", "[TensorRT-LLM] TensorRT-LLM version: 1.2.0rc2",
             i + "Using LLM with PyTorch backend",
             w + "Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and %d, respectively). "
                 "The smaller value will be used." % rng.randrange(4096, 300000),
             "Loading weights: 100%%|%s| 801/801 [00:19<00:00, 41.20it/s]" % (BAR * 10),
             "Model init total -- %.2fs" % rng.uniform(15, 40),
             i + "max_seq_len is not specified, using inferred value 131072",
             "Traceback (most recent call last):",
             '  File "%s/tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", line 388, in create_py_executor' % PY,
             "    kv_cache_creator.estimate_max_tokens(py_executor)",
             '  File "%s/tensorrt_llm/_torch/attention_backend/flashinfer.py", line 614, in forward' % PY,
             "    trtllm_batch_decode_with_kv_cache(",
             '  File "%s/flashinfer/decode.py", line 2117, in trtllm_batch_decode_with_kv_cache' % PY,
             "    run_func(",
             "RuntimeError: Error in function 'TllmGenFmhaRunner' at %s/flashinfer/data/include/flashinfer/trtllm/"
             "fmha/fmhaRunner.cuh:37: Unsupported architecture" % PY]
    return [(ln, "stdout" if k < 9 else "stderr") for k, ln in enumerate(lines)], len(lines) - 1


def tma_block(rng):
    return ["TMA Desc Addr:   0x7ffc%08x" % rng.getrandbits(32), "format         9", "dim            3",
            "gmem_address   0x7f%010x" % rng.getrandbits(40),
            "globalDim      (%d,%d,1,1,1)" % (rng.choice((7168, 2048, 4096)), rng.choice((256, 128, 512))),
            "globalStrides  (1,%d,0,0,0)" % rng.choice((7168, 2048, 4096)), "boxDim         (128,128,1,1,1)",
            "elementStrides (1,1,1,1,1)", "interleave     0", "swizzle        3", "l2Promotion    2", "oobFill        0",
            "Error: Failed to initialize the TMA descriptor 715"]


CUTLASS_ASSERT = ("[TensorRT-LLM][ERROR] Assertion failed: Failed to initialize cutlass TMA WS grouped gemm. Error: "
                  "Error Internal (/workspace/flashinfer/csrc/nv_internal/tensorrt_llm/cutlass_instantiations/120/"
                  "gemm_grouped/120/cutlass_kernel_file_gemm_grouped_sm120_M256_BS_group0.generated.cu:60)")


def f_cutlass_moe_tma(rng, P):
    lines = []
    for _ in range(rng.randrange(2, 5)):
        lines += tma_block(rng)
    if rng.random() < 0.5:
        lines.append(CUTLASS_ASSERT)
        key = len(lines) - 1
        lines += ["1       0x7c6d%08x tensorrt_llm::common::throwRuntimeError(char const*, int, std::__cxx11::"
                  "basic_string<char, std::char_traits<char>, std::allocator<char> > const&) + 97" % rng.getrandbits(32),
                  "2       0x7c6d%08x /root/.cache/flashinfer/0.5.2/120a/cached_ops/fused_moe_120/fused_moe_120.so"
                  "(+0x9080ad) [0x7c6dd11ca0ad]" % rng.getrandbits(32)]
    else:  # autotuner skips the tactic: WARNING form (degraded performance, not a crash)
        pre = "(Worker_PP0 pid=%d) " % rng.randrange(1000, 60000)
        lines.append(pre + "2026-11-29 10:08:01,319 - WARNING - autotuner.py:485 - flashinfer.jit: [Autotuner]: "
                     "Skipping tactic <flashinfer.fused_moe.core.get_cutlass_fused_moe_module.<locals>.MoERunner "
                     "object at 0x7c70%08x> %d, due to failure while profiling: %s"
                     % (rng.getrandbits(32), rng.randrange(0, 40), CUTLASS_ASSERT))
        key = len(lines) - 1
    return [(ln, "stderr") for ln in lines], key


def f_cuda_oom(rng, P):
    pre = P[S["ec_error"]] + "[core.py:710] "
    lines = [pre + "EngineCore encountered a fatal error."] + tb_frames(pre, ENGINE_STEP_FRAMES)
    total = rng.choice((79.15, 93.10, 139.81, 178.35))
    free = rng.uniform(0.05, 2.0)
    alloc = rng.choice((0.5, 1.0, 2.0, 3.5, 7.0))
    lines.append(pre + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total "
                 "capacity of %.2f GiB of which %.2f GiB is free. Including non-PyTorch memory, this process has "
                 "%.2f GiB memory in use. Of the allocated memory %.2f GiB is allocated by PyTorch, and %.2f GiB is "
                 "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                 "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                 % (alloc, total, free, total - free - 0.3, total - free - 2.0, 1.53))
    return [(ln, "stdout") for ln in lines], len(lines) - 1


def f_illegal_memory(rng, P):
    pre = P[S["ec_error"]] + "[core.py:710] "
    lines = [pre + "EngineCore encountered a fatal error."] + tb_frames(pre, ENGINE_STEP_FRAMES)
    lines.append(pre + "RuntimeError: CUDA error: an illegal memory access was encountered")
    key = len(lines) - 1
    lines += [pre + h for h in TORCH_HINTS]
    return [(ln, "stdout") for ln in lines], key


def f_nccl_watchdog(rng, P):
    seq = rng.choice((1, 2, rng.randrange(1000, 20000000)))
    op = rng.choice(("ALLREDUCE", "ALLREDUCE", "ALLGATHER", "_REDUCE_SCATTER_BASE", "GATHER"))
    numel = 1 if seq < 3 else rng.randrange(1, 4000000)
    ran = 600000 + rng.randrange(1, 120)
    pre = P[S["torch_e"]]
    work = ("WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, NumelOut=%d, Timeout(ms)=600000) ran for %d milliseconds "
            "before timing out." % (seq, op, numel, numel, ran))
    pg = "[PG ID 0 PG GUID 0(default_pg) Rank 0]"
    lines = [pre + "ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: " + work,
             pre + "ProcessGroupNCCL.cpp:1785] %s Exception (either an error or timeout) detected by watchdog at "
                   "work: %d, last enqueued NCCL work: %d, last completed NCCL work: %d." % (pg, seq, seq, seq - 1),
             pre + "ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have failed or timed out. Due to the "
                   "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
             pre + "ProcessGroupNCCL.cpp:636] [Rank 0] To avoid data inconsistency, we are taking the entire process down.",
             pre + "ProcessGroupNCCL.cpp:1595] %s Process group watchdog thread terminated with exception: [Rank 0] "
                   "Watchdog caught collective operation timeout: %s" % (pg, work),
             "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 "
             "(most recent call first):",
             "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3a%08x in %s/torch/lib/libc10.so)"
             % (rng.getrandbits(32), PY),
             "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
             "std::ratio<1l, 1000l> > >) + 0x23d (0x7f3a%08x in %s/torch/lib/libtorch_cuda.so)" % (rng.getrandbits(32), PY),
             "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1a0 (0x7f3a%08x in %s/torch/lib/libtorch_cuda.so)"
             % (rng.getrandbits(32), PY),
             "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x7f3a%08x in %s/torch/lib/libtorch_cuda.so)"
             % (rng.getrandbits(32), PY)]
    return [(ln, "stderr") for ln in lines], 0


def f_engine_dead(rng, P):
    pre = P[S["api_error"]] + "[async_llm.py:704] "
    lines = [pre + "AsyncLLM output_handler failed."]
    lines += tb_frames(pre, [
        ("vllm/v1/engine/async_llm.py", 660, "output_handler", "outputs = await engine_core.get_output_async()"),
        ("vllm/v1/engine/core_client.py", 1061, "get_output_async", "raise self._format_exception(outputs) from None")])
    lines.append(pre + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                       "(above) for the root cause.")
    key = len(lines) - 1
    for _ in range(rng.randrange(2, 9)):
        lines.append(P[S["api_uvicorn"]] + '%s - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error' % ip(rng))
    lines += [P[S["api_uvicorn"]] + "Shutting down", P[S["api_uvicorn"]] + "Waiting for application shutdown.",
              P[S["api_uvicorn"]] + "Application shutdown complete.",
              P[S["api_uvicorn"]] + "Finished server process [%d]" % API_PID]
    return [(ln, "stdout") for ln in lines], key


def f_no_kernel_image(rng, P):
    pre = P[S["ec_error"]] + "[core.py:708] "
    lines = [pre + "EngineCore failed to start."] + tb_frames(pre, ENGINE_INIT_FRAMES[:3] + [
        ("vllm/v1/worker/gpu_model_runner.py", 2711, "profile_run", "hidden_states = self._dummy_run(self.max_num_tokens)"),
        ("torch/nn/modules/module.py", 1773, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)")])
    lines.append(pre + "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    key = len(lines) - 1
    lines += [pre + h for h in TORCH_HINTS]
    lines = [(ln, "stdout") for ln in lines]
    lines += api_init_failed(P)
    return lines, key


def f_xid(rng, P):
    bus = "%04x:%02x:00" % (0, rng.choice((0x3b, 0x5d, 0x86, 0xaf, 0x18, 0xdb)))
    d = P[S["dmesg"]]
    lines = [d + "NVRM: Xid (PCI:%s): 79, pid=%d, name=python3, GPU has fallen off the bus." % (bus, rng.randrange(100, 99999)),
             d + "NVRM: GPU %s.0: GPU has fallen off the bus." % bus,
             d + "NVRM: A GPU crash dump has been created. If possible, please run",
             d + "NVRM: nvidia-bug-report.sh as root to collect this data before",
             d + "NVRM: the NVIDIA kernel module is unloaded."]
    return [(ln, "stdout") for ln in lines], 0


def f_kv_cache(rng, P):
    pre = P[S["ec_error"]] + "[core.py:708] "
    mml = rng.choice((131072, 163840, 262144, 1048576))
    need = rng.choice((16.0, 24.0, 32.5, 60.0))
    avail = rng.uniform(2, need * 0.8)
    lines = [pre + "EngineCore failed to start."] + tb_frames(pre, ENGINE_INIT_FRAMES)
    lines.append(pre + "ValueError: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV "
                       "cache is needed, which is larger than the available KV cache memory (%.2f GiB). Based on the "
                       "available memory, the estimated maximum model length is %d. Try increasing "
                       "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
                 % (mml, need, avail, int(mml * avail / need) // 16 * 16))
    key = len(lines) - 1
    lines = [(ln, "stdout") for ln in lines] + api_init_failed(P)
    return lines, key


FAILURES = {
    "fmha_unsupported_arch": f_fmha,
    "cutlass_moe_tma": f_cutlass_moe_tma,
    "cuda_oom": f_cuda_oom,
    "illegal_memory_access": f_illegal_memory,
    "nccl_watchdog_timeout": f_nccl_watchdog,
    "engine_dead": f_engine_dead,
    "no_kernel_image": f_no_kernel_image,
    "xid_error": f_xid,
    "kv_cache_lt_max_model_len": f_kv_cache,
}

# --------------------------------------------------------------------------------------------------
# Output formats
# --------------------------------------------------------------------------------------------------

_DOCKER_ESC = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def docker_escape(s: str) -> str:
    """JSON string body as Docker's json-file driver writes it (HTML-safe escapes, UTF-8 kept)."""
    e = json.dumps(s, ensure_ascii=False)[1:-1]
    if "<" in e or ">" in e or "&" in e:
        e = e.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return e


def split_utf8(s: str, limit: int) -> list[str]:
    """Split s into pieces of at most `limit` UTF-8 bytes, never inside a character."""
    b = s.encode("utf-8")
    if len(b) <= limit:
        return [s]
    out, i = [], 0
    while i < len(b):
        j = min(i + limit, len(b))
        while j < len(b) and (b[j] & 0xC0) == 0x80:
            j -= 1
        out.append(b[i:j].decode("utf-8"))
        i = j
    return out


# --------------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------------


def generate(args) -> dict:
    rng = random.Random(args.seed)
    start = dt.datetime.fromisoformat(args.start)
    epoch0 = int(start.replace(tzinfo=dt.timezone.utc).timestamp())

    # Pools
    pools = []
    weights = []
    kinds = []  # ("s", style, stream, pool, pool_docker) or ("m", fn)
    for w, style, stream, fn, n in SINGLE_TEMPLATES:
        prng = random.Random(rng.getrandbits(64))
        pool = [fn(prng) for _ in range(n)]
        kinds.append(("s", STYLE_ID[style], stream, pool,
                      [docker_escape(x) for x in pool] if args.format == "docker" else None))
        weights.append(w)
    for w, fn in MULTI_EVENTS:
        kinds.append(("m", fn))
        weights.append(w)
    cum = []
    acc = 0.0
    for w in weights:
        acc += w
        cum.append(acc)

    kinds_enabled = list(FAILURES) if args.kinds == "all" else args.kinds.split(",")
    for k in kinds_enabled:
        if k not in FAILURES:
            sys.exit("gen_corpus: unknown failure kind %r (known: %s)" % (k, ", ".join(FAILURES)))

    # Inter-arrival deltas (ns), exponential with mean args.mean_gap_ms, cycled.
    drng = random.Random(rng.getrandbits(64))
    deltas = [int(drng.expovariate(1.0 / (args.mean_gap_ms * 1e6))) for _ in range(8192)]
    mask = 8191

    fmt = args.format
    split_at = args.split_at
    out = open(args.out, "w", encoding="utf-8", newline="") if args.out != "-" else sys.stdout
    buf: list[str] = []
    manifest = []

    t_ns = 0
    cur_sec = -1
    P: list[str] = []
    ts_sec = ""
    records = 0   # logical lines emitted
    phys = 0      # physical lines written
    bytes_total = 0
    long_lines = 0
    max_len = 0
    di = 0

    inject = args.inject
    lines_target = args.lines
    frng = random.Random(rng.getrandbits(64))
    kind_queue: list[str] = []
    rnd = rng.random
    choices = rng.choices
    idx_range = range(len(kinds))

    def phys_lines(text: str, stream: str, ns: int) -> list[str]:
        """Render one logical line in the output format (slow path, also used for long lines)."""
        if fmt == "raw":
            return [text]
        frac = ("%09d" % (ns % 1_000_000_000)).rstrip("0")
        ts = ts_sec + ("." + frac if frac else "") + "Z"
        pieces = split_utf8(text, split_at) if len(text) > split_at // 4 else [text]
        res = []
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            if fmt == "cri":
                res.append("%s %s %s %s" % (ts, stream, "F" if last else "P", piece))
            else:
                res.append('{"log":"%s%s","stream":"%s","time":"%s"}'
                           % (docker_escape(piece), "\\n" if last else "", stream, ts))
        return res

    while records < lines_target:
        batch = choices(idx_range, cum_weights=cum, k=4096)
        for ki in batch:
            if records >= lines_target:
                break
            # clock
            t_ns += deltas[di & mask]
            di += 1
            sec = t_ns // 1_000_000_000
            if sec != cur_sec:
                cur_sec = sec
                tt = start + dt.timedelta(seconds=sec, microseconds=(t_ns // 1000) % 1_000_000)
                P = render_prefixes(tt)
                ts_sec = dt.datetime.fromtimestamp(epoch0 + sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")

            if inject and rnd() < inject:
                if not kind_queue:  # every kind once per cycle, in a seeded random order
                    kind_queue = list(kinds_enabled)
                    frng.shuffle(kind_queue)
                kind = kind_queue.pop()
                seq, key = FAILURES[kind](frng, P)
                first = phys + 1
                key_phys = key_rec = 0
                for j, (text, stream) in enumerate(seq):
                    pl = phys_lines(text, stream, t_ns + j * 1000)
                    if j == key:
                        key_phys, key_rec = phys + 1, records + 1
                    buf.extend(pl)
                    phys += len(pl)
                    records += 1
                    n = len(text)
                    bytes_total += n + 1
                    max_len = max(max_len, n)
                manifest.append({"kind": kind, "line": key_phys, "record": key_rec, "first_line": first,
                                 "last_line": phys, "key_text": seq[key][0][:200]})
                continue

            k = kinds[ki]
            if k[0] == "s":
                pool = k[3]
                j = int(rnd() * len(pool))
                body = pool[j]
                text_len = len(P[k[1]]) + len(body)
                bytes_total += text_len + 1
                if text_len > 1024:
                    long_lines += 1
                    if text_len > max_len:
                        max_len = text_len
                if fmt == "raw":
                    buf.append(P[k[1]] + body)
                    phys += 1
                elif text_len <= split_at // 4:  # ASCII-or-not, 4x margin keeps the byte limit
                    frac = ("%09d" % (t_ns % 1_000_000_000)).rstrip("0")
                    ts = ts_sec + ("." + frac if frac else "") + "Z"
                    if fmt == "cri":
                        buf.append(ts + " " + k[2] + " F " + P[k[1]] + body)
                    else:
                        buf.append('{"log":"' + P[k[1]] + k[4][j] + '\\n","stream":"' + k[2] + '","time":"' + ts + '"}')
                    phys += 1
                else:
                    pl = phys_lines(P[k[1]] + body, k[2], t_ns)
                    buf.extend(pl)
                    phys += len(pl)
                records += 1
            else:
                seq = k[1](frng, P)
                for j, (text, stream) in enumerate(seq):
                    pl = phys_lines(text, stream, t_ns + j * 1000)
                    buf.extend(pl)
                    phys += len(pl)
                    records += 1
                    bytes_total += len(text) + 1
            if len(buf) >= 65536:
                buf.append("")
                out.write("\n".join(buf))
                buf.clear()
    if buf:
        buf.append("")
        out.write("\n".join(buf))
    if out is not sys.stdout:
        out.close()
    return {"records": records, "physical_lines": phys, "text_bytes": bytes_total,
            "mean_text_len": bytes_total / max(records, 1) - 1, "lines_over_1k": long_lines, "max_len": max_len,
            "injected": manifest}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000, help="logical lines to emit (default 1M)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=("raw", "cri", "docker"), default="raw")
    ap.add_argument("--inject", type=float, default=2e-5,
                    help="probability per line of starting an injected failure sequence (default 2e-5; 0 = none)")
    ap.add_argument("--kinds", default="all", help="comma list of failure kinds to inject (default all): "
                    + ", ".join(FAILURES))
    ap.add_argument("--out", default="-", help="output file (default stdout)")
    ap.add_argument("--manifest", help="write the injected failures as a JSON list to this file")
    ap.add_argument("--start", default="2026-11-29T10:08:00", help="clock start (UTC, ISO 8601)")
    ap.add_argument("--mean-gap-ms", type=float, default=5.0, help="mean time between lines (default 5 ms)")
    ap.add_argument("--split-at", type=int, default=4096,
                    help="cri/docker: split logical lines longer than this many bytes into P/partial records "
                         "(runtime default is 16384; the lower default makes the split occur in the corpus)")
    ap.add_argument("--stats", action="store_true", help="print corpus statistics as JSON to stderr")
    args = ap.parse_args()
    t0 = time.perf_counter()
    st = generate(args)
    dt_s = time.perf_counter() - t0
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as f:
            json.dump(st["injected"], f, indent=1)
            f.write("\n")
    summary = {k: v for k, v in st.items() if k != "injected"}
    summary["injected"] = len(st["injected"])
    summary["seconds"] = round(dt_s, 2)
    if args.stats:
        print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
