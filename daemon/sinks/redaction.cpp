// Redaction: secrets masked (RE2, linear time) and evidence capped, once, before an incident is stored, served or sent.
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <optional>

#include "faultline/sinks.hpp"
#include "sinks_internal.hpp"

namespace faultline {

namespace sinks_detail {

std::string cut_utf8(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

}  // namespace sinks_detail

using sinks_detail::cut_utf8;

struct Redactor::Impl {
  std::vector<std::unique_ptr<RE2>> patterns;
  // Every pattern at once, asked first: most texts hold no secret and are then read once, not once per pattern (an
  // incident's revision has its every evidence line redacted). Absent where the set did not compile.
  std::optional<RE2::Set> any;
  RedactionOptions options;
};

namespace {
const char* const kDefaultRedactions[] = {
    R"((?i)\bbearer\s+([A-Za-z0-9\-._~+/]{6,}=*))",
    R"(\b(sk-[A-Za-z0-9_\-]{16,}))",
    R"(\b(hf_[A-Za-z0-9]{16,}))",
    R"(\b(gh[pousr]_[A-Za-z0-9]{20,}))",
    R"(\b(AKIA[0-9A-Z]{16})\b)",
    R"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@)",
    R"((?i)\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|client[_-]?secret|password|passwd)["']?\s*[:=]\s*["']?([^\s"',;&}]+))",
};
}  // namespace

Redactor::Redactor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Redactor::~Redactor() = default;

std::unique_ptr<Redactor> Redactor::create(const RedactionOptions& options, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  RE2::Options ro;
  ro.set_log_errors(false);
  auto add = [&](const std::string& p) -> bool {
    auto re = std::make_unique<RE2>(p, ro);
    if (!re->ok()) {
      if (error) *error = "redaction pattern '" + excerpt(p) + "': " + excerpt(re->error());
      return false;
    }
    impl->patterns.push_back(std::move(re));
    return true;
  };
  if (options.defaults)
    for (const char* p : kDefaultRedactions)
      if (!add(p)) return nullptr;
  for (const auto& p : options.patterns)
    if (!add(p)) return nullptr;
  impl->any.emplace(ro, RE2::UNANCHORED);
  bool added = true;
  for (const auto& re : impl->patterns) added = added && impl->any->Add(re->pattern(), nullptr) >= 0;
  if (!added || !impl->any->Compile()) impl->any.reset();
  return std::unique_ptr<Redactor>(new Redactor(std::move(impl)));
}

std::string Redactor::redact(std::string_view text) const {
  // No pattern matches the text: none can match what no replacement changed. (A set whose DFA ran out of memory
  // answers no with an error: each pattern is asked then.)
  if (impl_->any) {
    RE2::Set::ErrorInfo error{RE2::Set::kNoError};
    if (!impl_->any->Match(re2::StringPiece(text.data(), text.size()), nullptr, &error) &&
        error.kind == RE2::Set::kNoError)
      return std::string(text);
  }
  std::string current(text);
  for (const auto& re : impl_->patterns) {
    int ngroups = std::min(re->NumberOfCapturingGroups() + 1, 2);
    re2::StringPiece input(current);
    re2::StringPiece groups[2];
    std::string out;
    std::size_t pos = 0;
    bool changed = false;
    while (pos <= current.size() &&
           re->Match(input, pos, current.size(), RE2::UNANCHORED, groups, ngroups)) {
      re2::StringPiece whole = groups[0];
      re2::StringPiece secret = (ngroups == 2 && groups[1].data() != nullptr) ? groups[1] : groups[0];
      std::size_t wb = static_cast<std::size_t>(whole.data() - current.data());
      std::size_t we = wb + whole.size();
      std::size_t sb = static_cast<std::size_t>(secret.data() - current.data());
      std::size_t se = sb + secret.size();
      out.append(current, pos, sb - pos);
      if (secret.size() > 0) {
        out += "[REDACTED]";
        changed = true;
      }
      out.append(current, se, we - se);
      if (whole.empty()) {
        if (we < current.size()) out += current[we];
        pos = we + 1;
      } else {
        pos = we;
      }
    }
    if (!changed) continue;
    if (pos < current.size()) out.append(current, pos, std::string::npos);
    current = std::move(out);
  }
  return current;
}

void Redactor::apply(Incident& incident) const {
  const auto& o = impl_->options;
  if (incident.evidence.size() > o.max_evidence_lines) {
    // Keep the first lines (how it started) and the last ones (the decisive end), drop the middle.
    std::size_t head = o.max_evidence_lines / 2;
    std::size_t tail = o.max_evidence_lines - head;
    std::vector<EvidenceLine> kept(incident.evidence.begin(), incident.evidence.begin() + head);
    kept.insert(kept.end(), incident.evidence.end() - tail, incident.evidence.end());
    incident.evidence = std::move(kept);
  }
  for (auto& line : incident.evidence) {
    line.text = redact(line.text);
    if (line.text.size() > o.max_line_bytes) {
      line.text = cut_utf8(line.text, o.max_line_bytes);
      line.truncated = true;
    }
  }
  incident.title = redact(incident.title);
  incident.summary = redact(incident.summary);
  incident.remediation = redact(incident.remediation);
  for (auto& [k, v] : incident.fields) v = redact(v);
}
}  // namespace faultline
