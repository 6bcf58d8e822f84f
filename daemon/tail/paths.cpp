// Path layouts (Kubernetes, docker), glob expansion, /dev/kmsg records, the open-files limit.
#include <dirent.h>
#include <fnmatch.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "faultline/tail.hpp"

namespace faultline {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool all_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

}  // namespace

std::string_view to_string(StartAt start) { return start == StartAt::beginning ? "beginning" : "end"; }

std::optional<StartAt> parse_start_at(std::string_view text) {
  if (text == "beginning") return StartAt::beginning;
  if (text == "end") return StartAt::end;
  return std::nullopt;
}

std::string_view to_string(FileStart start) {
  switch (start) {
    case FileStart::first: return "first";
    case FileStart::resumed: return "resumed";
    case FileStart::rotated: return "rotated";
    case FileStart::new_instance: return "new_instance";
    case FileStart::truncated: return "truncated";
  }
  return "?";
}

PathIdentity parse_log_path(std::string_view path) {
  PathIdentity id;
  auto parts = split(path, '/');
  std::size_t n = parts.size();
  if (n < 3) return id;
  std::string_view file = parts[n - 1];
  // /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log
  if (n >= 4 && parts[n - 4] == "pods" && file.size() > 4 && file.ends_with(".log") &&
      all_digits(file.substr(0, file.size() - 4))) {
    auto pod_parts = split(parts[n - 3], '_');
    if (pod_parts.size() == 3 && !pod_parts[0].empty() && !pod_parts[1].empty() && !parts[n - 2].empty()) {
      id.kubernetes = true;
      id.namespace_ = pod_parts[0];
      id.pod = pod_parts[1];
      id.uid = pod_parts[2];
      id.container = parts[n - 2];
      id.restart = file.substr(0, file.size() - 4);
      id.format_hint = ContainerFormat::cri;
      return id;
    }
  }
  if (parts[n - 2] == "containers") {
    // /var/log/containers/<pod>_<ns>_<container>-<id>.log
    if (file.ends_with(".log") && !file.ends_with("-json.log")) {
      auto stem = file.substr(0, file.size() - 4);
      auto fields = split(stem, '_');
      if (fields.size() == 3) {
        auto dash = fields[2].rfind('-');
        if (dash != std::string_view::npos && all_hex(fields[2].substr(dash + 1))) {
          id.kubernetes = true;
          id.pod = fields[0];
          id.namespace_ = fields[1];
          id.container = fields[2].substr(0, dash);
          id.container_id = fields[2].substr(dash + 1);
          id.format_hint = ContainerFormat::cri;
          return id;
        }
      }
    }
  }
  // /var/lib/docker/containers/<id>/<id>-json.log
  if (n >= 3 && parts[n - 3] == "containers" && all_hex(parts[n - 2]) &&
      file == std::string(parts[n - 2]) + "-json.log") {
    id.docker = true;
    id.container_id = parts[n - 2];
    id.format_hint = ContainerFormat::docker;
  }
  return id;
}

namespace {

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
  std::vector<std::string> comps;
  for (auto part : split(pattern, '/'))
    if (!part.empty() && part != ".") comps.emplace_back(part);
  if (comps.empty()) return out;
  std::string base = pattern.front() == '/' ? "/" : "";
  expand_into(base, comps, 0, out, dirs, whole);
  if (complete && !whole) *complete = false;
  return out;
}

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  auto semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  auto head = split(record.substr(0, semi), ',');
  if (head.size() < 3) return std::nullopt;
  KmsgRecord r;
  std::uint64_t pri = 0;
  auto parse_u64 = [](std::string_view s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  if (!parse_u64(head[0], pri) || !parse_u64(head[1], r.seq) || !parse_u64(head[2], r.usec)) return std::nullopt;
  r.facility = static_cast<int>(pri >> 3);
  r.priority = static_cast<int>(pri & 7);
  auto msg = record.substr(semi + 1);
  auto nl = msg.find('\n');  // continuation lines (" KEY=value") follow the first newline
  if (nl != std::string_view::npos) msg = msg.substr(0, nl);
  r.message = std::string(msg);
  return r;
}

std::string format_kmsg_line(const KmsgRecord& record, Time boot_time) {
  static constexpr std::string_view kLevels[] = {"CRITICAL", "CRITICAL", "CRITICAL", "ERROR",
                                                 "WARNING",  "INFO",     "INFO",     "DEBUG"};
  Time t = boot_time + std::chrono::microseconds(record.usec);
  std::string line = format_time(t);
  line += ' ';
  line += kLevels[record.priority & 7];
  line += " kernel: ";
  line += record.message;
  return line;
}

std::uint64_t raise_open_files_limit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace faultline
