// cli: the one command-line parser of every command. A command declares its flags in a table — name, value, help,
// how the text becomes a typed value — bound to its own variables; parse() fills them or names the one problem, and
// the usage text is generated from the same table. `--flag V` and `--flag=V`; repeatable flags keep every value in
// order, others keep the last; `-` is a positional argument (standard input); `--` ends the flags; an unknown flag is
// an error, never a path. Plain values, no global state; a parser and its targets belong to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "faultline/rules.hpp"

namespace faultline::app {

using Args = std::vector<std::string>;

namespace cli {

// What parse() found: run the command, or show its usage (--help), or a problem with the arguments. A problem's
// position names the command ("faultline scan") and, in `column`, the 1-based number of the argument at fault.
struct Parsed {
  bool help = false;
  std::optional<Diagnostic> problem;
  bool ok() const { return !help && !problem; }
};

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

class Parser {
 public:
  // `command`: as typed after "faultline" ("scan", "rules list"). `summary`: a paragraph under the usage line.
  Parser(std::string command, std::string summary);

  // A switch (--json): true when given. It takes no value.
  Parser& flag(std::string name, bool& target, std::string help);
  // A flag with a text value (--cache DIR). A vector target makes it repeatable.
  Parser& option(std::string name, std::string metavar, std::string& target, std::string help);
  Parser& option(std::string name, std::string metavar, std::vector<std::string>& target, std::string help);
  // A flag with a typed value: `read` turns the text into a T (std::optional<T>(std::string_view)); when it cannot,
  // the problem is "<name>: expected <expected>, got '<text>'". The target is a T, a std::optional<T> or a
  // std::vector<T> (repeatable).
  template <class Target, class Read>
  Parser& option(std::string name, std::string metavar, Target& target, Read read, std::string expected,
                 std::string help) {
    Flag f;
    f.name = std::move(name);
    f.metavar = std::move(metavar);
    f.help = std::move(help);
    f.repeatable = is_vector<Target>::value;
    f.take = [&target, read = std::move(read), expected = std::move(expected)](
                 std::string_view text) -> std::optional<std::string> {
      auto value = read(text);
      if (!value) return "expected " + expected + ", got '" + std::string(text) + "'";
      if constexpr (is_vector<Target>::value) {
        target.push_back(std::move(*value));
      } else {
        target = std::move(*value);
      }
      return std::nullopt;
    };
    return add(std::move(f));
  }
  // Another spelling of the flag declared last ("-c" for --config, "-v" for --verbose).
  Parser& alias(std::string name);
  // The positional arguments ('-' among them), in order. Without this call, one is an error.
  Parser& positionals(std::string metavar, std::vector<std::string>& target);
  // A paragraph after the flags (exit status, defaults).
  Parser& footer(std::string text);

  Parsed parse(const Args& args) const;
  std::string usage() const;

  // parse() with the conventions of the command line: --help prints the usage to `out` (status 0); a problem is
  // printed to `err` with a pointer to --help (status 2). nullopt: the command runs.
  std::optional<int> handle(const Args& args, std::ostream& out, std::ostream& err) const;

 private:
  struct Flag {
    std::string name;
    std::vector<std::string> aliases;
    std::string metavar;  // empty: a switch
    std::string help;
    bool repeatable = false;
    std::function<std::optional<std::string>(std::string_view)> take;  // stores a value; or why it cannot
  };
  Parser& add(Flag flag);
  const Flag* find(std::string_view name) const;
  Diagnostic problem(std::size_t arg, std::string message) const;

  std::string command_;
  std::string summary_;
  std::string footer_;
  std::vector<Flag> flags_;
  std::string positional_metavar_;
  std::vector<std::string>* positionals_ = nullptr;
};

// --color=auto|always|never. auto: colour when `fd` is a terminal, unless NO_COLOR is set (https://no-color.org)
// or TERM is "dumb"; always and never win over both.
enum class ColourMode : std::uint8_t { automatic, always, never };
std::optional<ColourMode> parse_colour_mode(std::string_view text);
bool colour_enabled(ColourMode mode, int fd);

}  // namespace cli
}  // namespace faultline::app
