// Helpers shared by the sinks' unit tests: a temporary directory, a complete incident, a file's text.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "faultline/incident.hpp"

namespace sinkstest {

using namespace faultline;
namespace fs = std::filesystem;

struct TempDir {
  explicit TempDir(const std::string& what = "sinks") {
    std::string tmpl = "/tmp/faultline-" + what + "-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

// A critical FMHA incident with every field set (summary, remediation, references, labels, one evidence line).
inline Incident make_incident(std::string id = "0123456789abcdef", std::uint32_t revision = 1,
                       Severity severity = Severity::critical) {
  Incident inc;
  inc.id = std::move(id);
  inc.revision = revision;
  inc.rule = "flashinfer-fmha-unsupported-arch";
  inc.title = "FlashInfer FMHA kernel does not support this GPU";
  inc.severity = severity;
  inc.stream = "ml/vllm-0/vllm";
  inc.stream_labels = {{"namespace", "ml"}, {"pod", "vllm-0"}, {"container", "vllm"}, {"node", "gpu-7"}};
  inc.first_seen = *parse_rfc3339("2026-03-01T10:00:00Z");
  inc.last_seen = *parse_rfc3339("2026-03-01T10:00:05Z");
  inc.summary = "FMHA has no kernel for sm_120";
  inc.remediation = "Use a build with sm_120 kernels";
  inc.references = {"https://example.com/runbook", "https://example.com/other"};
  inc.labels = {{"team", "inference"}, {"bad-label", "x"}};
  EvidenceLine e;
  e.stream = inc.stream;
  e.line = 10;
  e.text = "RuntimeError: FMHA unsupported architecture";
  e.event = "unsupported";
  inc.evidence.push_back(e);
  return inc;
}

inline std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sinkstest
