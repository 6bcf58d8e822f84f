// The rule room's YAML reading: a RuleReader turns one rule mapping into the typed model (rule_reader.cpp), reads
// its tests (loader.cpp) and checks the names inside it (validate.cpp). The scalar dialect, positions and key checks
// are the core's shared yaml::Reader; this adds the rule vocabulary. Internal to daemon/rules; single-threaded.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/yaml_reader.hpp"
#include "faultline/rules.hpp"

namespace faultline::rules_detail {

// [a-z0-9]+(-[a-z0-9]+)*: rule ids are label values and API keys.
bool is_kebab(std::string_view s);
// [a-z0-9_]+
bool is_event_name(std::string_view s);
// Names of the (?P<name>...) groups of a regex, in order.
std::vector<std::string> capture_names(std::string_view regex);

class RuleReader : public yaml::Reader {
 public:
  using yaml::Reader::Reader;

  // The text the nodes were parsed from, so that a problem inside a scalar (a template placeholder) is shown at its
  // own line and column. Must outlive the reader's use; without it such problems are shown at the scalar.
  void set_source(std::string_view text) { source_ = text; }
  // false: rules are read without their content hash (LoadOptions::content_hash).
  void set_content_hash(bool on) { content_hash_ = on; }

  // Every duration of a rule may be zero ("after: 0s").
  bool duration(const YAML::Node& node, Duration& out, std::string_view what) {
    return yaml::Reader::duration(node, out, what, yaml::Zero::allowed);
  }
  // In a rule an empty list or mapping is a mistake, not "none".
  bool string_list(const YAML::Node& node, std::vector<std::string>& out, std::string_view what) {
    return strings(node, out, what, yaml::Empty::rejected);
  }
  bool string_map(const YAML::Node& node, Fields& out, std::string_view what) {
    return fields(node, out, what, yaml::Empty::rejected);
  }
  std::optional<Severity> severity(const YAML::Node& node, std::string_view what);

  // One rule, or nullopt when it has an error (each one is a diagnostic).
  std::optional<Rule> rule(const YAML::Node& node);

 private:
  void events(const YAML::Node& node, Rule& rule);
  void step(const YAML::Node& node, Rule& rule);
  void key(const YAML::Node& node, Rule& rule);
  void extent(const YAML::Node& node, Rule& rule);  // tolerance, lifetime, cascade, attribution
  void test(const YAML::Node& node, Rule& rule);
  void expected(const YAML::Node& node, RuleTest& test);
  // Names inside the rule that refer to nothing, a sequence without a required step.
  void validate(const YAML::Node& node, const Rule& rule);
  // Placeholders in the texts that name no field of the rule, bare-punctuation defaults, unclosed segments.
  void validate_template(const YAML::Node& value, std::string_view text, const std::vector<std::string>& fields,
                         std::string_view what, const Rule& rule);
  // Where the piece of template `text` at `offset` (of `length` bytes) is in the source, else the scalar's position.
  Position position_in(const YAML::Node& value, std::string_view text, std::size_t offset, std::size_t length) const;

  std::string_view source_;
  bool content_hash_ = true;
};

// The rule's definition without its tests, hashed (tests do not change behaviour).
std::string content_hash(const YAML::Node& rule);

}  // namespace faultline::rules_detail
