// What a log file's path says about its stream: Kubernetes pod logs, /var/log/containers symlinks, docker.
#include <algorithm>

#include "faultline/tail.hpp"
#include "text.hpp"

namespace faultline {

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool all_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

}  // namespace

PathIdentity parse_log_path(std::string_view path) {
  PathIdentity id;
  auto parts = tail::split(path, '/');
  std::size_t n = parts.size();
  if (n < 3) return id;
  std::string_view file = parts[n - 1];
  // /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log
  if (n >= 4 && parts[n - 4] == "pods" && file.size() > 4 && file.ends_with(".log") &&
      all_digits(file.substr(0, file.size() - 4))) {
    auto pod_parts = tail::split(parts[n - 3], '_');
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
      auto fields = tail::split(stem, '_');
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

}  // namespace faultline
