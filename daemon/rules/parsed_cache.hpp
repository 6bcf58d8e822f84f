// The rule room's cache of parsed rule files: what reading a set of rule files gave (rules and diagnostics), kept in
// a directory so that a command that starts often (`scan`) does not parse the same YAML again — yaml-cpp is most of
// a warm start-up. An entry holds the texts it was read from and is used only for exactly those texts (compared
// byte for byte), by the very build that wrote it (the executable's GNU build id is part of its name and content),
// read with the same options. Writes are atomic (a temporary file renamed), so concurrent writers and readers are
// safe; an entry that cannot be read or decoded is a miss. Internal to daemon/rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/rules.hpp"

namespace faultline::rules_detail {

// One file's rules and the problems found in it, read apart from the other files (see load_rules).
struct FileRules {
  RuleSet rules;
  std::vector<Diagnostic> diagnostics;
  std::string text;  // the file's bytes as read (empty when unreadable)
};

struct ParsedSource {
  std::string path;
  std::string text;
};

// The files' parsed rules if `dir` holds them for exactly these sources, read without tests and with or without the
// content hash; nullopt otherwise (no entry, another build, a damaged entry). On a hit each source's text is moved
// into its FileRules (the sources' texts are then empty); on a miss the sources are left as they were.
std::optional<std::vector<FileRules>> load_parsed(const std::string& dir, std::vector<ParsedSource>& sources,
                                                  bool content_hash);
// Keeps `parsed` (one per source, in order, without tests) for load_parsed(). Failures are ignored: a cache.
void store_parsed(const std::string& dir, const std::vector<ParsedSource>& sources, bool content_hash,
                  const std::vector<FileRules>& parsed);

// The codec itself, for tests: what an entry holds after its header.
std::string encode_file_rules(const std::vector<FileRules>& parsed);
std::optional<std::vector<FileRules>> decode_file_rules(std::string_view bytes);

}  // namespace faultline::rules_detail
