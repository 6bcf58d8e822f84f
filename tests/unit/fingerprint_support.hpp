// Helpers shared by the fingerprint room's unit tests: line views, prefixed copies, and one failure as two versions
// print it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fingerprinttest {

inline std::vector<std::string_view> views(const std::vector<std::string>& lines) {
  return std::vector<std::string_view>(lines.begin(), lines.end());
}

inline std::vector<std::string> with_prefix(const std::string& prefix, const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) out.push_back(prefix + l);
  return out;
}

// One failure as vLLM 0.6 prints it (Python 3.10, dist-packages) and as 0.11 does (3.12, a venv, other lines).
inline const std::vector<std::string> kOld = {
    "Traceback (most recent call last):",
    "  File \"/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py\", line 1234, in execute_model",
    "    output = self.model(input_ids, positions)",
    "  File \"/usr/local/lib/python3.10/dist-packages/vllm/attention/backends/flash_attn.py\", line 580, in forward",
    "    out = torch.ops.vllm.attn(q, k, v)",
    "RuntimeError: shape mismatch: value tensor of shape [16, 8, 128] cannot be broadcast to indexing result of "
    "shape [16, 4, 128] at pid 88 (2.00 GiB reserved, 0x7f3c5f628350)",
};
inline const std::vector<std::string> kNew = {
    "Traceback (most recent call last):",
    "  File \"/opt/venv/lib/python3.12/site-packages/vllm/worker/model_runner.py\", line 1502, in execute_model",
    "    output = self.model(",
    "             ^^^^^^^^^^^",
    "  File \"/opt/venv/lib/python3.12/site-packages/vllm/attention/backends/flash_attn.py\", line 702, in forward",
    "    out = torch.ops.vllm.attn(q, k, v)",
    "RuntimeError: shape mismatch: value tensor of shape [32, 8, 64] cannot be broadcast to indexing result of "
    "shape [32, 2, 64] at pid 4711 (3.50 GiB reserved, 0x55b11321eaf0)",
};

}  // namespace fingerprinttest
