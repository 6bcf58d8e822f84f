// The shipped catalog, compiled once per fuzzing process, for the targets that drive the pipeline or its state.
#pragma once

#include <cstdlib>
#include <memory>

#include "faultline/match.hpp"
#include "faultline/rules.hpp"

namespace faultline::fuzz {

inline std::shared_ptr<const faultline::CompiledRules> catalog() {
  static const std::shared_ptr<const faultline::CompiledRules> compiled = [] {
    auto loaded = faultline::load_rules({FAULTLINE_RULES_DIR});
    if (!loaded.ok()) std::abort();
    auto result = faultline::compile_rules(std::move(loaded.rules));
    if (!result.rules) std::abort();
    return result.rules;
  }();
  return compiled;
}

}  // namespace faultline::fuzz
