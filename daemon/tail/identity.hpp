// The one place a stream's identity is made: its name, logical identity, instance and labels, from the configured
// SourceSpec and what the path (or device) says. Every source kind uses it. Stateless.
#pragma once

#include <string>
#include <string_view>

#include "faultline/tail.hpp"

namespace faultline::tail {

// The `source` label of a configured source: SourceSpec::source, or "file", "stdin", "kmsg" by kind.
std::string source_label(const SourceSpec& src);

// A file's stream. `path` is the name the stream goes by (the checkpoint's name for a file renamed while stopped),
// `layout` what that path says. `instance_key` receives what tells one instance of the stream from the next
// (pod uid + restart + container id).
StreamIdentity file_identity(const SourceSpec& src, std::string_view node_name, const std::string& path,
                             const PathIdentity& layout, std::string& instance_key);
StreamIdentity stdin_identity(const SourceSpec& src, std::string_view node_name);
// The kernel log of this node; `boot_id` is its instance (a reboot is a new one).
StreamIdentity kmsg_identity(const SourceSpec& src, std::string_view node_name, std::string boot_id);

}  // namespace faultline::tail
