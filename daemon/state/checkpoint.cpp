// The durable checkpoint: read positions and correlator state in one versioned JSON file, replaced atomically.
#include <sys/stat.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "faultline/checkpoint.hpp"
#include "faultline/durable_file.hpp"

namespace faultline {

namespace {

constexpr const char* kCheckpointFile = "checkpoint.json";

}  // namespace

std::string checkpoint_to_json(const Checkpoint& checkpoint) {
  nlohmann::json j;
  j["version"] = Checkpoint::kVersion;
  j["written"] = format_time(checkpoint.written);
  auto& files = j["files"] = nlohmann::json::array();
  for (const auto& f : checkpoint.positions.files) {
    files.push_back({{"path", f.path},
                     {"dev", f.dev},
                     {"inode", f.inode},
                     {"fingerprint", f.fingerprint.hash},
                     {"fingerprint_bytes", f.fingerprint.bytes},
                     {"offset", f.offset},
                     {"line", f.line},
                     {"size", f.size},
                     {"finished", f.finished}});
  }
  const auto& k = checkpoint.positions.kmsg;
  if (k.valid)
    j["kmsg"] = {{"boot_id", k.boot_id}, {"seq", k.seq}, {"offset", k.offset}, {"line", k.line}};
  j["correlator"] = checkpoint.correlator_state;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Checkpoint> checkpoint_from_json(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    int version = j.at("version").get<int>();
    if (version != Checkpoint::kVersion) {
      return Error{"unsupported checkpoint version " + std::to_string(version)};
    }
    Checkpoint c;
    if (auto t = parse_rfc3339(j.value("written", std::string()))) c.written = *t;
    for (const auto& f : j.at("files")) {
      FilePosition p;
      p.path = f.at("path").get<std::string>();
      p.dev = f.at("dev").get<std::uint64_t>();
      p.inode = f.at("inode").get<std::uint64_t>();
      p.fingerprint.hash = f.at("fingerprint").get<std::uint64_t>();
      p.fingerprint.bytes = f.at("fingerprint_bytes").get<std::uint32_t>();
      p.offset = f.at("offset").get<std::uint64_t>();
      p.line = f.at("line").get<std::uint64_t>();
      p.size = f.value("size", std::uint64_t{0});
      p.finished = f.value("finished", false);
      c.positions.files.push_back(std::move(p));
    }
    if (j.contains("kmsg")) {
      const auto& k = j["kmsg"];
      c.positions.kmsg.boot_id = k.at("boot_id").get<std::string>();
      c.positions.kmsg.seq = k.at("seq").get<std::uint64_t>();
      c.positions.kmsg.offset = k.at("offset").get<std::uint64_t>();
      c.positions.kmsg.line = k.at("line").get<std::uint64_t>();
      c.positions.kmsg.valid = true;
    }
    c.correlator_state = j.value("correlator", std::string());
    return c;
  } catch (const std::exception& e) {
    return Error{std::string("malformed checkpoint: ") + e.what()};
  }
}

Result<void> write_checkpoint(const std::string& state_dir, const Checkpoint& checkpoint) {
  return write_file_atomic(state_dir + "/" + kCheckpointFile, checkpoint_to_json(checkpoint));
}

Result<std::optional<Checkpoint>> read_checkpoint(const std::string& state_dir) {
  std::string path = state_dir + "/" + kCheckpointFile;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<Checkpoint>{};
  auto text = read_file(path);
  if (!text) return text.error();
  auto c = checkpoint_from_json(*text);
  if (!c) return Error{path + ": " + c.error().message};
  return std::optional<Checkpoint>(std::move(*c));
}

}  // namespace faultline
