// rules: the typed model of a fingerprint and the loader that reads it from YAML with positions.
// Loading is staged (read YAML → decode into types → validate) and errors are data: every problem found is returned
// with its 1-based file:line:column, none is thrown out of the loader. Knows nothing of Hyperscan, files being
// tailed or HTTP. Values are immutable once loaded; free functions are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/types.hpp"

namespace faultline {

// Whether any diagnostic says an input could not be read.
bool any_unreadable(const std::vector<Diagnostic>& diagnostics);

// A named transform a rule asks for on one field of an event (`normalise:`: a field the event captures or sets),
// applied where the hit's fields are made (after captures and `set`), before the hit reaches the correlator.
enum class FieldTransform {
  // A GPU architecture written any way a stack prints it - "(12, 0)", "12.0", "120", "sm_120a", "SM120",
  // "compute_90a", "capability: 90", "compute capability is 89" - becomes "sm_120" / "sm_90" / "sm_89"; the field
  // <name>_gpu is set to the same with the GPU family where it is known ("sm_90 (Hopper)"). A value that names no
  // architecture is kept as captured.
  sm_arch,
};

// The transform a rule file names ("sm_arch"), or nullopt.
std::optional<FieldTransform> parse_field_transform(std::string_view name);
std::string_view to_string(FieldTransform t);

// "sm_NN" for a capability written any of the ways FieldTransform::sm_arch lists, or nullopt.
std::optional<std::string> normalise_sm_arch(std::string_view text);
// The GPU family of an "sm_NN" architecture ("Hopper", "Blackwell datacenter"), or "" when not known.
std::string_view gpu_family(std::string_view sm_arch);
// Applies the event's transforms to the fields of one hit (the fields it names that are present).
void apply_field_transforms(const std::vector<std::pair<std::string, FieldTransform>>& transforms, Fields& fields);

// One named event of a rule: a regex in the syntax Hyperscan and RE2 share.
struct EventPattern {
  std::string name;
  std::string regex;
  bool caseless = false;
  std::vector<Level> levels;          // empty: any level
  Fields set;                         // static fields this event sets when it hits
  std::vector<std::string> captures;  // names of (?P<name>...) groups, in order
  std::vector<std::pair<std::string, FieldTransform>> normalise;  // field (captured or set) -> transform
  Position pos;                       // of the regex value

  bool operator==(const EventPattern&) const = default;
};

// One step of a rule's sequence. Steps complete in order; an optional step is evidence and never blocks.
struct Step {
  std::vector<std::string> events;      // the step's event, or any of several
  std::uint32_t count = 1;              // at least this many hits...
  std::optional<Duration> within;       // ...within this window (from the previous step, or among the hits)
  bool optional = false;
  std::optional<Severity> severity;     // raise the incident at this severity once this step is reached
  std::vector<std::string> after;       // hits count only once these events were seen in the story
  std::optional<Duration> absent_for;   // absence: completes when none of `events` hits for this long
  Position pos;

  bool operator==(const Step&) const = default;
};

// How far out of order two lines may arrive and still count as in order (stdout and stderr interleave).
struct Tolerance {
  std::uint32_t lines = 0;
  Duration time{0};

  bool operator==(const Tolerance&) const = default;
};

// Which state machine a hit belongs to. Default: the stream.
struct KeySpec {
  bool stream = true;                // the stream's logical identity
  bool node = false;                 // the node label (kernel log and pods on one host)
  std::vector<std::string> fields;   // captured fields, e.g. pid or rank

  bool operator==(const KeySpec&) const = default;
};

struct Lifetime {
  Duration quiet = std::chrono::minutes(30);  // resolved after this long without a new hit
  std::vector<std::string> resolve_on;        // or when one of these events hits

  bool operator==(const Lifetime&) const = default;
};

// Root-cause attribution: a cascade rule reports a consequence (engine dead, worker died). When a root-cause
// incident shares its stream or pod within `window`, the cascade incident points at it (caused_by) and does not page.
struct Cascade {
  bool enabled = false;
  Duration window = std::chrono::minutes(2);  // how far back a root cause may lie
  Duration hold = std::chrono::seconds(10);   // how long to wait for a root cause printed after the consequence

  bool operator==(const Cascade&) const = default;
};

// What a root cause may explain (`attribution:`); empty parts do not restrict. A GPU fault on a node, for instance,
// explains the device faults, NCCL errors and dead engines of the node's pods, never their configuration errors,
// and only for hardware Xids and the GPU it names.
struct AttributionSpec {
  std::vector<std::string> explains;  // rule ids or categories (labels.category) it may explain; empty: any
  // field → values: it explains others only while each field is one of its values (a field not captured does not
  // restrict: the form of the message that names no Xid).
  std::vector<std::pair<std::string, std::vector<std::string>>> when;
  std::vector<std::string> gpu;  // its fields that name the GPU (PCI bus id, UUID): another GPU is not explained

  bool operator==(const AttributionSpec&) const = default;
};

struct ExpectedIncident {
  std::string rule;                      // defaults to the rule that owns the test
  std::optional<Severity> severity;
  std::optional<std::string> status;     // "firing" | "resolved"
  Fields fields;                         // each must be present with this value
  std::optional<std::uint32_t> count;
  std::optional<std::uint32_t> min_evidence;
  std::optional<std::string> caused_by;  // rule id of the root cause; "" means none
  Position pos;

  bool operator==(const ExpectedIncident&) const = default;
};

struct TestLine {
  std::string text;
  Duration after{0};  // virtual time that passes before this line is read

  bool operator==(const TestLine&) const = default;
};

// A rule test: `faultline test` scans these lines (or a fixture file) with a virtual clock and compares incidents.
struct RuleTest {
  std::string name;
  std::vector<TestLine> lines;
  std::string file;                // fixture, relative to the rule file
  std::string format = "auto";     // container format of the lines
  std::optional<Time> start;       // virtual clock at the first line (default 2026-01-01T00:00:00Z)
  Duration advance{0};             // virtual time that passes after the last line
  std::vector<ExpectedIncident> expect;  // empty: the rule must raise nothing
  Position pos;

  bool operator==(const RuleTest&) const = default;
};

struct Rule {
  std::string id;
  std::string title;
  Severity severity = Severity::warning;
  std::string summary;       // a template (see expand_template), like title and remediation
  std::string remediation;
  std::vector<std::string> references;
  Fields labels;             // static labels added to every incident
  std::vector<EventPattern> events;
  std::vector<Step> sequence;          // one step per event when omitted and the rule has a single event
  std::vector<std::string> reset_on;   // events that clear partial progress
  Tolerance tolerance;
  KeySpec key;
  Lifetime lifetime;
  Cascade cascade;
  AttributionSpec attribution;
  int priority = 0;                    // among root causes, the higher explains the lower
  std::uint32_t context_lines = 4;     // lines before each decisive line kept as evidence
  std::vector<RuleTest> tests;
  Position pos;                        // of the rule's mapping
  std::string content_hash;            // of the rule's definition (hex), shown by /api/v1/rules; empty when
                                       // loaded without (LoadOptions::content_hash)

  // The fields this rule's incidents can carry: every named capture, every `set` key of its events and the fields
  // their `normalise:` transforms add (`<field>_gpu`); sorted, unique. A template placeholder must name one of them.
  std::vector<std::string> field_names() const;

  const EventPattern* find_event(std::string_view name) const;
  int event_index(std::string_view name) const;  // -1 when unknown
  // Builds the by-name index the two lookups above use (the loader does, once per rule). A lookup checks the event
  // the index names and scans `events` when it is not there, so a rule changed after indexing stays correct.
  void index_events();

  bool operator==(const Rule&) const = default;  // every field, the index of events too

 private:
  std::vector<std::pair<std::string, std::uint32_t>> events_by_name_;  // sorted by name
};

struct RuleSet {
  std::vector<Rule> rules;
  const Rule* find(std::string_view id) const;
  // Builds the by-id index `find` uses and each rule's event index: the loader, apply_rule_overrides and
  // compile_rules do, once per set. Like Rule's, a lookup the index cannot answer scans, so a stale index is slow,
  // never wrong.
  void build_index();

 private:
  std::vector<std::pair<std::string, std::uint32_t>> rules_by_id_;  // sorted by id
};

struct LoadResult {
  RuleSet rules;
  std::vector<Diagnostic> diagnostics;
  bool ok() const;  // no errors (warnings allowed)
};

// Loads rule files: each path is a .yaml/.yml file or a directory searched recursively. A file holds one rule
// (a mapping) or several (a sequence of mappings, or a mapping with a `rules:` list). Every problem is reported.
// Limits (build constants): a file of more than 4 MiB is refused before it is read, a value of more than 64 KiB at
// its position. Paths that hold no rule at all are an `unreadable` error naming them.
LoadResult load_rules(const std::vector<std::string>& paths);
// What a load reads. Without tests (a command that only runs the rules: `scan`), the `tests:` block of a rule file
// that holds one rule is not parsed at all (it is most of the catalog's text), and every rule has no tests; what the
// rules say, their positions and their content hashes are the same.
struct LoadOptions {
  bool tests = true;
  // false: Rule::content_hash is left empty. It is what checkpoints and rule reloads compare; a one-off reader that
  // does neither (scan) need not pay for it (a YAML dump of every rule, about half the start-up).
  bool content_hash = true;
  // Where parsed rule files are kept (empty: nowhere): with `tests` false, files read before with the same bytes are
  // not parsed again (rules/parsed_cache.hpp).
  std::string cache_dir;
};
LoadResult load_rules(const std::vector<std::string>& paths, const LoadOptions& options);
LoadResult load_rules_from_string(std::string_view yaml, std::string_view file_name);

// Where the shipped catalog is: the source tree's rules/ when run from a build, else the install prefix.
std::string default_rules_dir();

// A rule's texts (title, summary, remediation) are templates over the incident's fields:
//   {name}         the field's value; nothing when the field is absent or empty
//   {name|words}   the field's value, else `words` (say in words what is unknown: never a bare "?")
//   [[ ... ]]      an optional segment: left out whole when a placeholder inside it that has no default names an
//                  absent field; segments nest. Put the clause's punctuation and spaces inside the segment.
// A `{` that does not open `{name}` or `{name|...}` (name: letters, digits, '_') is text, as is a `]]` outside a
// segment. Field values are inserted as they are, never read as template text.
std::string expand_template(std::string_view text, const Fields& fields);

struct TemplatePlaceholder {
  std::string name;
  std::optional<std::string> fallback;  // the words after '|', when given
  std::size_t offset = 0;               // of its '{' in the template
};
struct TemplateProblem {
  std::size_t offset = 0;  // in the template
  std::string message;
};
struct TemplateSyntax {
  std::vector<TemplatePlaceholder> placeholders;
  std::vector<TemplateProblem> problems;  // a `[[` never closed
};
// The placeholders of a template as expand_template reads them, for validation and `rules show`.
TemplateSyntax parse_template(std::string_view text);

}  // namespace faultline
