#include "cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <ostream>

namespace faultline::app::cli {

namespace {

constexpr std::size_t kWidth = 118;  // usage lines wrap before this column

bool looks_like_flag(std::string_view arg) { return arg.size() > 1 && arg[0] == '-'; }

}  // namespace

Parser::Parser(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

Parser& Parser::add(Flag flag) {
  assert(flag.name.size() > 2 && flag.name.compare(0, 2, "--") == 0);
  assert(!find(flag.name));
  flags_.push_back(std::move(flag));
  return *this;
}

Parser& Parser::flag(std::string name, bool& target, std::string help) {
  Flag f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.take = [&target](std::string_view) -> std::optional<std::string> {
    target = true;
    return std::nullopt;
  };
  return add(std::move(f));
}

Parser& Parser::option(std::string name, std::string metavar, std::string& target, std::string help) {
  return option(
      std::move(name), std::move(metavar), target, [](std::string_view t) { return std::optional<std::string>(t); },
      "", std::move(help));
}

Parser& Parser::option(std::string name, std::string metavar, std::vector<std::string>& target, std::string help) {
  return option(
      std::move(name), std::move(metavar), target, [](std::string_view t) { return std::optional<std::string>(t); },
      "", std::move(help));
}

Parser& Parser::alias(std::string name) {
  assert(!flags_.empty() && looks_like_flag(name) && !find(name));
  flags_.back().aliases.push_back(std::move(name));
  return *this;
}

Parser& Parser::positionals(std::string metavar, std::vector<std::string>& target) {
  positional_metavar_ = std::move(metavar);
  positionals_ = &target;
  return *this;
}

Parser& Parser::footer(std::string text) {
  footer_ = std::move(text);
  return *this;
}

const Parser::Flag* Parser::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (f.name == name || std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
  }
  return nullptr;
}

Diagnostic Parser::problem(std::size_t arg, std::string message) const {
  Position pos;
  pos.file = "faultline " + command_;
  pos.column = static_cast<std::uint32_t>(arg + 1);
  return Diagnostic{Diagnostic::Kind::error, std::move(pos), std::move(message)};
}

Parsed Parser::parse(const Args& args) const {
  Parsed out;
  bool flags_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || !looks_like_flag(arg)) {
      if (!positionals_) {
        out.problem = problem(i, "unexpected argument '" + arg + "'");
        return out;
      }
      positionals_->push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      return out;
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (arg.compare(0, 2, "--") == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        name = std::string_view(arg).substr(0, eq);
        inline_value = std::string_view(arg).substr(eq + 1);
      }
    }
    const Flag* flag = find(name);
    if (!flag) {
      out.problem = problem(i, "unknown flag '" + std::string(name) + "'");
      return out;
    }
    std::string_view value;
    if (flag->metavar.empty()) {
      if (inline_value) {
        out.problem = problem(i, flag->name + " takes no value");
        return out;
      }
    } else if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      out.problem = problem(i, flag->name + " needs a value (" + flag->metavar + ")");
      return out;
    }
    if (auto why = flag->take(value)) {
      out.problem = problem(i, flag->name + ": " + *why);
      return out;
    }
  }
  return out;
}

std::string Parser::usage() const {
  // The synopsis, wrapped under its first word.
  const std::string head = "usage: faultline " + command_;
  std::vector<std::string> words;
  for (const auto& f : flags_) {
    std::string w = "[" + f.name + (f.metavar.empty() ? "" : " " + f.metavar) + "]";
    if (f.repeatable) w += "...";
    words.push_back(std::move(w));
  }
  if (positionals_) words.push_back("[" + positional_metavar_ + "]...");
  std::string out = head;
  std::size_t column = head.size();
  for (const auto& w : words) {
    if (column + 1 + w.size() > kWidth) {
      out += "\n" + std::string(head.size(), ' ');
      column = head.size();
    }
    out += " " + w;
    column += 1 + w.size();
  }
  out += "\n\n";
  if (!summary_.empty()) out += summary_ + "\n";
  // One line per flag, help aligned.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& f : flags_) {
    std::string left;
    for (const auto& a : f.aliases) left += a + ", ";
    left += f.name;
    if (!f.metavar.empty()) left += " " + f.metavar;
    rows.emplace_back(std::move(left), f.help);
  }
  rows.emplace_back("-h, --help", "this text");
  std::size_t width = 0;
  for (const auto& [left, help] : rows) width = std::max(width, left.size());
  for (const auto& [left, help] : rows) out += "  " + left + std::string(width - left.size() + 2, ' ') + help + "\n";
  if (!footer_.empty()) out += footer_ + "\n";
  return out;
}

std::optional<int> Parser::handle(const Args& args, std::ostream& out, std::ostream& err) const {
  Parsed parsed = parse(args);
  if (parsed.help) {
    out << usage();
    return 0;
  }
  if (parsed.problem) {
    err << parsed.problem->pos.file << ": " << parsed.problem->message << " ('faultline " << command_
        << " --help' lists the flags)\n";
    return 2;
  }
  return std::nullopt;
}

std::optional<ColourMode> parse_colour_mode(std::string_view text) {
  if (text == "auto") return ColourMode::automatic;
  if (text == "always") return ColourMode::always;
  if (text == "never") return ColourMode::never;
  return std::nullopt;
}

bool colour_enabled(ColourMode mode, int fd) {
  if (mode != ColourMode::automatic) return mode == ColourMode::always;
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(fd) != 0;
}

}  // namespace faultline::app::cli
