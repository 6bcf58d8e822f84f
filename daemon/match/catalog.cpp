#include "faultline/catalog.hpp"

#include <algorithm>
#include <chrono>

namespace faultline {

void apply_rule_overrides(RuleSet& rules, const std::vector<RuleOverride>& overrides,
                          std::vector<Diagnostic>& diagnostics) {
  for (const auto& o : overrides) {
    auto it = std::find_if(rules.rules.begin(), rules.rules.end(), [&](const Rule& r) { return r.id == o.rule; });
    if (it == rules.rules.end()) {
      diagnostics.push_back(Diagnostic{Diagnostic::Kind::warning, o.pos,
                                       "override for rule '" + o.rule + "', which is not loaded"});
      continue;
    }
    if (o.enabled && !*o.enabled) {
      rules.rules.erase(it);
      rules.build_index();
      continue;
    }
    if (o.severity) it->severity = *o.severity;
    for (const auto& [k, v] : o.labels) set_field(it->labels, k, v);
    // The override is part of the rule's definition: state machines of a changed rule start over on reload.
    if (o.severity || !o.labels.empty()) {
      it->content_hash += "+o";
      if (o.severity) it->content_hash += std::string(to_string(*o.severity));
      for (const auto& [k, v] : o.labels) it->content_hash += "," + k + "=" + v;
    }
  }
}

std::size_t Catalog::errors() const {
  return static_cast<std::size_t>(std::count_if(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.kind == Diagnostic::Kind::error;
  }));
}

Catalog load_and_compile(const std::vector<std::string>& paths, const std::vector<RuleOverride>& overrides,
                         const std::string& cache_dir, CatalogPolicy policy) {
  const auto started = std::chrono::steady_clock::now();
  Catalog out;
  const LoadOptions load{policy.tests, policy.content_hash, cache_dir};
  LoadResult loaded = paths.empty() ? load_rules({default_rules_dir()}, load) : load_rules(paths, load);
  out.diagnostics = std::move(loaded.diagnostics);
  const bool load_failed = out.errors() > 0;
  // With nothing loaded there is nothing more to report; a broken set is not compiled when the policy says stop.
  const bool go_on = !load_failed || (policy.on_load_error == OnLoadError::compile_the_rest && !loaded.rules.rules.empty());
  if (go_on) apply_rule_overrides(loaded.rules, overrides, out.diagnostics);
  if (go_on && policy.compile) {
    CompileResult compiled = compile_rules(std::move(loaded.rules), CompileOptions{cache_dir, policy.story_anchors});
    out.diagnostics.insert(out.diagnostics.end(), compiled.diagnostics.begin(), compiled.diagnostics.end());
    if (out.errors() == 0) out.compiled = std::move(compiled.rules);
  } else {
    out.loaded = std::move(loaded.rules);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace faultline
