// The rule room's cache of parsed rule files: what reading a set of rule files gave (rules and diagnostics), kept in
// a directory so that a command that starts often (`scan`) does not parse the same YAML again — yaml-cpp is most of
// a warm start-up. An entry holds the texts it was read from and is used only for exactly those texts (compared
// byte for byte), by the very build that wrote it (the executable's GNU build id is part of its name and content),
// read with the same options. Writes are atomic (a temporary file renamed), so concurrent writers and readers are
// safe; an entry that cannot be read or decoded is a miss. Internal to daemon/rules.
#pragma once

#include <cstdint>
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
  std::string text;  // the file's bytes as read (empty when unreadable, and when the rules came from the cache)
};

// A rule file as the cache names an entry by it: its path, and the size and hash of its bytes. The bytes themselves
// are not held: a hit reads them again, through a small buffer, to compare them with the entry's copy (so a warm
// start fills no fresh memory with the catalog's text).
struct ParsedSource {
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t hash = 0;

  bool operator==(const ParsedSource&) const = default;
};

// The file at `path` as a source, read through a small buffer; nullopt when it cannot be read.
std::optional<ParsedSource> source_of_file(const std::string& path);
// The source that `text`, read from `path`, is: what source_of_file gives for a file holding exactly `text`.
ParsedSource source_of_text(const std::string& path, std::string_view text);

// The files' parsed rules if `dir` holds them for exactly these sources (each file's bytes compared with the entry's
// copy of them), read without tests and with or without the content hash; nullopt otherwise (no entry, another build,
// a damaged entry, a file that differs). The FileRules' texts are left empty: nothing reads them after a hit.
std::optional<std::vector<FileRules>> load_parsed(const std::string& dir, const std::vector<ParsedSource>& sources,
                                                  bool content_hash);
// Keeps `parsed` (one per path, in order, without tests, each with the text it was parsed from) for load_parsed().
// Failures are ignored: a cache.
void store_parsed(const std::string& dir, const std::vector<std::string>& paths, bool content_hash,
                  const std::vector<FileRules>& parsed);

// The codec itself, for tests: what an entry holds after its header.
std::string encode_file_rules(const std::vector<FileRules>& parsed);
std::optional<std::vector<FileRules>> decode_file_rules(std::string_view bytes);

}  // namespace faultline::rules_detail
