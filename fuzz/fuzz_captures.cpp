// RE2's captures through relaxed counted repetitions (CompileOptions::relax_repetitions) against the expression
// itself. The first line of the input is a pattern, the rest are log lines; the pattern is compiled as one rule's
// event both ways and the lines scanned: every hit and every captured field must be the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/match.hpp"
#include "faultline/rules.hpp"

using namespace faultline;

namespace {

std::vector<std::string> hits(const std::shared_ptr<const CompiledRules>& rules, const RecordBatch& batch) {
  Scanner scanner(rules);
  std::vector<Hit> found;
  scanner.scan(batch, found);
  std::vector<std::string> out;
  for (const auto& h : found) {
    std::string t = std::to_string(h.record);
    for (const auto& [k, v] : h.fields) t += "\x1f" + k + "=" + v;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto nl = in.find('\n');
  if (nl == std::string_view::npos || nl == 0 || nl > 160) return 0;  // long patterns: Hyperscan's compile, not this
  const std::string_view pattern = in.substr(0, nl);
  std::string yaml = "id: f\ntitle: t\nseverity: info\nevents:\n  e: '";
  for (const char c : pattern) {
    if (c == '\r' || c == '\0') return 0;
    yaml += c;
    if (c == '\'') yaml += '\'';
  }
  yaml += "'\n";
  auto loaded = load_rules_from_string(yaml, "fuzz.yaml");
  if (!loaded.ok() || loaded.rules.rules.size() != 1) return 0;
  CompileOptions exact_options;
  exact_options.relax_repetitions = false;
  exact_options.story_anchors = false;
  CompileOptions relaxed_options = exact_options;
  relaxed_options.relax_repetitions = true;
  auto exact = compile_rules(loaded.rules, exact_options);
  auto relaxed = compile_rules(std::move(loaded.rules), relaxed_options);
  if (!exact.rules || !relaxed.rules) {
    if (static_cast<bool>(exact.rules) != static_cast<bool>(relaxed.rules)) __builtin_trap();
    return 0;
  }
  RecordBatch batch;
  std::string_view rest = in.substr(nl + 1);
  std::uint64_t line = 0;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    RecordMeta m;
    m.line = ++line;
    batch.append(m, rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  if (hits(exact.rules, batch) != hits(relaxed.rules, batch)) __builtin_trap();
  return 0;
}
