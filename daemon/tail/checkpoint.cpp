// The durable checkpoint: read positions and correlator state in one versioned JSON file, replaced atomically.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "faultline/tail.hpp"

namespace faultline {

namespace {

constexpr const char* kCheckpointFile = "checkpoint.json";

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
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
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<Checkpoint> checkpoint_from_json(std::string_view text, std::string* error) {
  try {
    auto j = nlohmann::json::parse(text);
    int version = j.at("version").get<int>();
    if (version != Checkpoint::kVersion) {
      if (error) *error = "unsupported checkpoint version " + std::to_string(version);
      return std::nullopt;
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
    if (error) *error = std::string("malformed checkpoint: ") + e.what();
    return std::nullopt;
  }
}

bool write_file_atomic(const std::string& path, std::string_view data, std::string* error) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    if (error) *error = errno_text("cannot create", tmp);
    return false;
  }
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (error) *error = errno_text("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    if (error) *error = errno_text("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = errno_text("cannot rename to", path);
    ::unlink(tmp.c_str());
    return false;
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

bool write_checkpoint(const std::string& state_dir, const Checkpoint& checkpoint, std::string* error) {
  return write_file_atomic(state_dir + "/" + kCheckpointFile, checkpoint_to_json(checkpoint), error);
}

std::optional<Checkpoint> read_checkpoint(const std::string& state_dir, std::string* error) {
  std::string path = state_dir + "/" + kCheckpointFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno != ENOENT && error) *error = errno_text("cannot read", path);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string why;
  auto c = checkpoint_from_json(ss.str(), &why);
  if (!c && error) *error = path + ": " + why;
  return c;
}

}  // namespace faultline
