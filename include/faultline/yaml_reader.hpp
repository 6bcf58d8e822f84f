// yaml_reader: the one way the core reads user YAML (the config file and rule files) into typed values. Parsing,
// positions, duplicate keys, unknown keys and the scalar dialect (booleans, integers, durations, lists, mappings)
// are decided here once; the rooms say only which keys exist and where the values go. Every problem becomes a
// positioned Diagnostic; nothing is thrown out of a Reader's own checks (yaml-cpp may still throw: the room's
// boundary catches). Internal to the core (rules, config). A Reader is single-threaded; the free functions are pure.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/types.hpp"

namespace faultline::yaml {

// Bounds on user YAML, fixed at build time. A rule or config file larger than kMaxFileBytes is refused before it is
// read (its size is taken with stat), so a hostile file costs no memory; a value (scalar or key) longer than
// kMaxScalarBytes is an error at its position, patterns included (Hyperscan refuses far shorter ones anyway).
inline constexpr std::size_t kMaxFileBytes = std::size_t{4} << 20;     // 4 MiB
inline constexpr std::size_t kMaxScalarBytes = std::size_t{64} << 10;  // 64 KiB

// The one place where yaml-cpp's 0-based marks become the 1-based positions people see (0:0 for a null mark).
Position position_of(std::string_view file, const YAML::Mark& mark);

// "nothing", "a scalar", "a list", "a mapping": for "expected X, got Y" messages.
std::string_view kind_name(const YAML::Node& node);

// The one boolean dialect: `true` or `false`, nothing else. YAML 1.1's yes/no/on/off (which yaml-cpp would take) are
// rejected with a message saying so: `on` silently meaning true is how a key named `on` or `no` bites.
std::optional<bool> parse_boolean(std::string_view text);

// A plain base-10 integer, optionally negative; no sign '+', no spaces, no fraction, no units.
std::optional<std::int64_t> parse_integer(std::string_view text);

// What an empty value (`key:` with nothing after it) means for a list or a mapping.
enum class Empty : std::uint8_t { allowed, rejected };
// Whether a duration of 0s is valid.
enum class Zero : std::uint8_t { allowed, rejected };

class Reader {
 public:
  Reader(std::string file, std::vector<Diagnostic>& diagnostics) : file_(std::move(file)), diags_(diagnostics) {}

  const std::string& file() const { return file_; }
  Position pos(const YAML::Node& node) const { return at(node.Mark()); }
  // A mark of the document being read, as a position in the file (load_all parses each document apart: its marks
  // count lines from the document's first line).
  Position at(const YAML::Mark& mark) const {
    Position p = position_of(file_, mark);
    if (p.line > 0) p.line += line_offset_;
    return p;
  }
  void error(const YAML::Node& node, std::string message);
  void error_at(const Position& pos, std::string message);
  void warning(const YAML::Node& node, std::string message);
  // Diagnostics so far: remember it before a step, then ask errors_since() whether the step found a problem.
  std::size_t mark() const { return diags_.size(); }
  bool errors_since(std::size_t mark) const;

  // Parses one document (`load`) or every document of a stream (`load_all`). A syntax error is a diagnostic at its
  // mark and gives nullopt. A key repeated in any mapping of the tree is an error at the repetition that names the
  // first one's position (yaml-cpp keeps the first silently; lookups see only it).
  // Text longer than kMaxFileBytes is refused at 1:1, a value longer than kMaxScalarBytes at its position.
  std::optional<YAML::Node> load(std::string_view text);
  // One document of a stream: its tree, its own text (what its marks' byte offsets index; the "---" that opens it
  // blanked), and the file's line it starts at. Pass it to enter() before reading the tree, so positions are the
  // file's.
  struct Document {
    YAML::Node root;
    std::string text;
    std::uint32_t first_line = 0;  // lines of the file before it
  };
  std::optional<std::vector<Document>> load_all(std::string_view text);
  void enter(const Document& doc) { line_offset_ = doc.first_line; }
  // The whole of file(): stat first; one that does not exist, cannot be opened or is not a regular file is an error
  // marked `unreadable` (commands exit 2), one larger than kMaxFileBytes an error at 1:1; both give nullopt.
  std::optional<std::string> read_file();

  // --- Mappings -------------------------------------------------------------------------------------------------
  // `where` names the mapping in messages ("tail", "sinks[0]", "rule").
  using Visit = std::function<void(const YAML::Node& value)>;
  struct Field {
    std::string_view key;
    Visit visit;
  };
  // Visits each key of a mapping in document order; a key not in `fields` is an error at the key naming the known
  // ones, a non-scalar key likewise. An empty value (null) is an empty mapping. Returns whether `node` was a mapping.
  bool mapping(const YAML::Node& node, std::string_view where, const std::vector<Field>& fields);
  // The unknown-key check of mapping() alone, for readers that look keys up by name.
  void check_keys(const YAML::Node& node, std::initializer_list<std::string_view> known, std::string_view where);

  // --- Values, read now -----------------------------------------------------------------------------------------
  // Each reports a problem at the value as "<what>: …" and returns false, leaving `out` unchanged.
  bool scalar(const YAML::Node& node, std::string_view what);
  bool string(const YAML::Node& node, std::string& out, std::string_view what);
  bool boolean(const YAML::Node& node, bool& out, std::string_view what);
  // A whole number in [min, max]; the bounds default to what `Int` holds (at most INT64_MAX).
  template <typename Int>
  bool integer(const YAML::Node& node, Int& out, std::string_view what, std::int64_t min = lowest<Int>(),
               std::int64_t max = highest<Int>()) {
    std::int64_t v = 0;
    if (!integer_in(node, v, what, min, max)) return false;
    out = static_cast<Int>(v);
    return true;
  }
  bool duration(const YAML::Node& node, Duration& out, std::string_view what, Zero zero = Zero::rejected);
  // A list of strings; a single string is a list of one. Replaces `out`.
  bool strings(const YAML::Node& node, std::vector<std::string>& out, std::string_view what,
               Empty empty = Empty::allowed);
  // A mapping of names to strings, set into `out` in order.
  bool fields(const YAML::Node& node, Fields& out, std::string_view what, Empty empty = Empty::allowed);
  // One of a fixed set of words; `choices` lists them for the message ("text or json").
  template <typename E, typename Parse>
  bool enumeration(const YAML::Node& node, E& out, std::string_view what, Parse parse, std::string_view choices) {
    if (!scalar(node, what)) return false;
    if (auto v = parse(node.Scalar())) {
      out = *v;
      return true;
    }
    error(node, std::string(what) + ": expected " + std::string(choices) + ", got '" + excerpt(node.Scalar()) + "'");
    return false;
  }

  // --- Values, read when a mapping() visits them ----------------------------------------------------------------
  Visit string(std::string& out, std::string what);
  Visit boolean(bool& out, std::string what);
  Visit optional_boolean(std::optional<bool>& out, std::string what);
  template <typename Int>
  Visit integer(Int& out, std::string what, std::int64_t min) {
    return [this, &out, what = std::move(what), min](const YAML::Node& n) { integer(n, out, what, min); };
  }
  Visit duration(Duration& out, std::string what, Zero zero = Zero::rejected);
  Visit strings(std::vector<std::string>& out, std::string what);
  Visit fields(Fields& out, std::string what);
  template <typename E, typename Parse>
  Visit enumeration(E& out, std::string what, Parse parse, std::string_view choices) {
    return [this, &out, what = std::move(what), parse, choices](const YAML::Node& n) {
      enumeration(n, out, what, parse, choices);
    };
  }

 private:
  template <typename Int>
  static constexpr std::int64_t lowest() {
    return static_cast<std::int64_t>(std::numeric_limits<Int>::min());
  }
  template <typename Int>
  static constexpr std::int64_t highest() {
    constexpr auto max = std::numeric_limits<Int>::max();
    return max > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? std::numeric_limits<std::int64_t>::max()
                                                                                   : static_cast<std::int64_t>(max);
  }
  bool integer_in(const YAML::Node& node, std::int64_t& out, std::string_view what, std::int64_t min,
                  std::int64_t max);
  bool within_file_limit(std::size_t size);
  void check_tree(const YAML::Node& node, int depth);  // repeated keys and over-long values

  std::string file_;
  std::uint32_t line_offset_ = 0;  // of the document being read (load_all, enter)
  std::vector<Diagnostic>& diags_;
};

}  // namespace faultline::yaml
