// The durable checkpoint: read positions and correlator state in one versioned JSON file, replaced atomically.
#include <sys/stat.h>

#include <cerrno>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "faultline/checkpoint.hpp"
#include "faultline/durable_file.hpp"
#include "faultline/json_integer.hpp"

namespace faultline {

namespace {

constexpr const char* kCheckpointFile = "checkpoint.json";

// An unsigned integer field: anything else (1e300, -1, "7") is an error, never converted (a float out of range
// would be undefined behaviour).
template <class T>
T unsigned_field(const nlohmann::json& j, const char* what) {
  static_assert(std::is_unsigned_v<T>);
  if (auto v = json_integer<T>(j)) return *v;
  throw std::runtime_error(std::string(what) + " is not an integer in range: " + j.dump());
}

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
  if (!checkpoint.fingerprints.empty()) j["fingerprints"] = checkpoint.fingerprints;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Checkpoint> checkpoint_from_json(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    const auto& v = j.at("version");
    // An integer, compared as one: a value such as 1e300 is not converted (that would be undefined behaviour).
    if (!v.is_number_integer()) return Error{"checkpoint version is not an integer: " + v.dump()};
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() != static_cast<std::uint64_t>(Checkpoint::kVersion)
                               : v.get<std::int64_t>() != Checkpoint::kVersion) {
      return Error{"unsupported checkpoint version " + v.dump()};
    }
    Checkpoint c;
    if (auto t = parse_rfc3339(j.value("written", std::string()))) c.written = *t;
    for (const auto& f : j.at("files")) {
      FilePosition p;
      p.path = f.at("path").get<std::string>();
      p.dev = unsigned_field<std::uint64_t>(f.at("dev"), "dev");
      p.inode = unsigned_field<std::uint64_t>(f.at("inode"), "inode");
      p.fingerprint.hash = unsigned_field<std::uint64_t>(f.at("fingerprint"), "fingerprint");
      p.fingerprint.bytes = unsigned_field<std::uint32_t>(f.at("fingerprint_bytes"), "fingerprint_bytes");
      p.offset = unsigned_field<std::uint64_t>(f.at("offset"), "offset");
      p.line = unsigned_field<std::uint64_t>(f.at("line"), "line");
      p.size = f.contains("size") ? unsigned_field<std::uint64_t>(f.at("size"), "size") : 0;
      p.finished = f.value("finished", false);
      c.positions.files.push_back(std::move(p));
    }
    if (j.contains("kmsg")) {
      const auto& k = j["kmsg"];
      c.positions.kmsg.boot_id = k.at("boot_id").get<std::string>();
      c.positions.kmsg.seq = unsigned_field<std::uint64_t>(k.at("seq"), "seq");
      c.positions.kmsg.offset = unsigned_field<std::uint64_t>(k.at("offset"), "offset");
      c.positions.kmsg.line = unsigned_field<std::uint64_t>(k.at("line"), "line");
      c.positions.kmsg.valid = true;
    }
    c.correlator_state = j.value("correlator", std::string());
    c.fingerprints = j.value("fingerprints", std::string());
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
