// Glob expansion over directories (what to watch, whether a watch could announce what is missing), and matching a
// found path back to its glob.
#include "glob.hpp"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>

#include "faultline/tail.hpp"
#include "text.hpp"

namespace faultline {

namespace {

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// The pattern's components, as expand_glob walks them (no empty ones, no ".").
std::vector<std::string> components(const std::string& pattern) {
  std::vector<std::string> comps;
  for (auto part : tail::split(pattern, '/'))
    if (!part.empty() && part != ".") comps.emplace_back(part);
  return comps;
}

void expand_into(const std::string& base, const std::vector<std::string>& comps, std::size_t i,
                 std::vector<std::string>& out, std::vector<std::string>* dirs, bool& complete) {
  const bool last = i + 1 == comps.size();
  const std::string& comp = comps[i];
  auto join = [&](std::string_view name) {
    if (base.empty()) return std::string(name);
    if (base == "/") return "/" + std::string(name);
    return base + "/" + std::string(name);
  };
  const std::string dir = base.empty() ? "." : base;
  if (!has_glob(comp)) {
    std::string next = join(comp);
    if (last) {
      if (dirs) dirs->push_back(dir);
      struct stat st;
      if (::lstat(next.c_str(), &st) == 0) out.push_back(next);
      return;
    }
    struct stat st;
    if (::stat(next.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      expand_into(next, comps, i + 1, out, dirs, complete);
    else
      complete = false;
    return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    complete = false;
    return;
  }
  if (dirs) dirs->push_back(dir);
  std::vector<std::string> names;
  while (auto* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (::fnmatch(comp.c_str(), e->d_name, FNM_PERIOD) == 0) names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string next = join(name);
    if (last) {
      out.push_back(next);
    } else {
      struct stat st;
      if (::stat(next.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) expand_into(next, comps, i + 1, out, dirs, complete);
    }
  }
}

}  // namespace

std::vector<std::string> expand_glob(const std::string& pattern, std::vector<std::string>* dirs, bool* complete) {
  std::vector<std::string> out;
  bool whole = true;
  if (pattern.empty()) return out;
  std::vector<std::string> comps = components(pattern);
  if (comps.empty()) return out;
  std::string base = pattern.front() == '/' ? "/" : "";
  expand_into(base, comps, 0, out, dirs, whole);
  if (complete && !whole) *complete = false;
  return out;
}

bool tail::glob_matches(const std::string& pattern, const std::string& path) {
  if (pattern.empty()) return false;
  std::string normal = pattern.front() == '/' ? "/" : "";
  for (const auto& comp : components(pattern)) {
    if (!normal.empty() && normal.back() != '/') normal += '/';
    normal += comp;
  }
  return ::fnmatch(normal.c_str(), path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0;
}

}  // namespace faultline
