// The pre-flight (service.hpp): what Service::start() would refuse, found without its side effects.
#include <algorithm>

#include "delivery.hpp"
#include "faultline/catalog.hpp"
#include "faultline/service.hpp"
#include "state_dir.hpp"

namespace faultline {

using service_detail::Delivery;
using service_detail::StateDir;

bool Preflight::ok() const { return error_count(diagnostics) == 0; }

std::vector<Diagnostic> rule_reference_problems(const Config& config, const RuleSet& loaded,
                                                std::vector<Diagnostic>& diagnostics) {
  // The catalog warns, at the override, about one that names no loaded rule; every other override applied, and a
  // disabled one removed a rule that was there.
  auto warned = [&](const RuleOverride& o) {
    return std::any_of(diagnostics.begin(), diagnostics.end(), [&](const Diagnostic& d) {
      return d.kind == Diagnostic::Kind::warning && d.pos.file == o.pos.file && d.pos.line == o.pos.line &&
             d.pos.column == o.pos.column;
    });
  };
  std::vector<std::string> disabled;
  for (const auto& o : config.rules.overrides)
    if (o.enabled && !*o.enabled && !warned(o)) disabled.push_back(o.rule);
  auto problems = check_rule_references(config, loaded, disabled);
  // Each becomes one error (with its suggestion) instead of the catalog's warning.
  std::erase_if(diagnostics, [&](const Diagnostic& d) {
    return d.kind == Diagnostic::Kind::warning && std::any_of(problems.begin(), problems.end(), [&](const Diagnostic& p) {
             return p.pos.file == d.pos.file && p.pos.line == d.pos.line && p.pos.column == d.pos.column;
           });
  });
  return problems;
}

Preflight preflight(const Config& given) {
  Preflight out;
  Config config = given;
  const bool stdin_only = std::all_of(config.sources.begin(), config.sources.end(),
                                      [](const SourceSpec& s) { return s.kind == SourceKind::stdin_stream; });
  auto error_at = [&](const Position& pos, std::string message) {
    out.diagnostics.push_back(Diagnostic{Diagnostic::Kind::error, pos, std::move(message)});
  };
  // Where a value came from: its place in the file, else the flag that set it.
  auto from = [&](const Position& in_file, const char* flag) {
    return in_file.line != 0 ? in_file : Position{std::string("faultline run ") + flag, 0, 0};
  };

  // The rules: compiled, but the compiled-rules cache is neither read nor written (it lives in the state dir).
  config.rules.cache_dir.clear();
  RuleLoad loaded = load_rule_set(config);
  if (loaded.rules) {
    out.rules = loaded.rules->rule_set().rules.size();
    auto problems = rule_reference_problems(config, loaded.rules->rule_set(), loaded.diagnostics);
    for (auto& p : problems) loaded.diagnostics.push_back(std::move(p));
  }
  for (auto& d : loaded.diagnostics) out.diagnostics.push_back(std::move(d));
  if (!loaded.rules && error_count(out.diagnostics) == 0) error_at(Position{}, "the rules do not compile");

  // The listen address (a file's is checked as it is decoded; a flag's here).
  if (auto problem = listen_address_problem(config.listen)) {
    if (config.positions.listen.line == 0) error_at(from(config.positions.listen, "--listen"), "listen: " + *problem);
    config.listen.clear();  // reported once
  }

  // The state dir: creatable and writable, looked at without making it. Standard input alone runs without one.
  std::string state_dir = config.state_dir;
  if (auto usable = StateDir::check(config.state_dir); !usable) {
    if (stdin_only) {
      out.diagnostics.push_back(Diagnostic{Diagnostic::Kind::warning, from(config.positions.state_dir, "--state-dir"),
                                           "state_dir: " + usable.error().message + "; standard input runs without "
                                                                                   "checkpoints"});
      state_dir.clear();
    } else {
      error_at(from(config.positions.state_dir, "--state-dir"), "state_dir: " + usable.error().message);
    }
  }

  // The server's and the sinks' options, as the outputs' start-up step checks them.
  for (auto& problem : Delivery::problems(config, state_dir)) error_at(Position{config.file, 0, 0}, problem);
  return out;
}

}  // namespace faultline
