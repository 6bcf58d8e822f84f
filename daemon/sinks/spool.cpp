// The per-sink spool: one file per pending delivery, durable before the first attempt (write_file_atomic: temporary
// name, fsync, rename, fsync the directory), removed after a 2xx. Bounded in bytes and age; what is shed is reported to the
// caller, who counts it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "faultline/durable_file.hpp"
#include "faultline/sinks.hpp"

namespace faultline {
namespace {

constexpr int kSpoolVersion = 1;

Result<void> mkdirs(const std::string& dir) {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    std::string path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) return Error::from_errno("cannot create", path);
  }
  return {};
}

std::string file_name(std::uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.json", static_cast<unsigned long long>(seq));
  return buf;
}

// Parses a spool file; fills `entry` (except path/bytes/seq) and `body`.
bool parse_record_json(const std::string& text, SpoolEntry& entry, std::string* body);

// A field of the wrong type (a string revision, ...) makes the file corrupt, not the daemon end (it threw).
bool parse_record(const std::string& text, SpoolEntry& entry, std::string* body) {
  try {
    return parse_record_json(text, entry, body);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

bool parse_record_json(const std::string& text, SpoolEntry& entry, std::string* body) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  if (j.value("format", "") != "faultline-spool" || j.value("version", 0) != kSpoolVersion) return false;
  if (!j.contains("body") || !j["body"].is_string()) return false;
  entry.delivery_id = j.value("delivery_id", "");
  entry.incident_id = j.value("incident_id", "");
  entry.revision = j.value("revision", 0u);
  entry.created_ms = j.value("created_ms", std::int64_t{0});
  if (entry.delivery_id.empty()) return false;
  if (body) *body = j["body"].get<std::string>();
  return true;
}

}  // namespace

Spool::Spool(std::string dir, std::uint64_t max_bytes, Duration max_age)
    : dir_(std::move(dir)), max_bytes_(max_bytes), max_age_(max_age) {}

Result<void> Spool::open(SpoolDrops* drops) {
  if (auto made = mkdirs(dir_); !made) return made.error();
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return Error::from_errno("cannot open spool", dir_);
  entries_.clear();
  ids_.clear();
  bytes_ = 0;
  std::vector<std::string> names;
  while (auto* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string path = dir_ + "/" + name;
    if (name.find(".tmp") != std::string::npos) {
      ::unlink(path.c_str());  // a write that never completed: it was never acknowledged to anyone
      continue;
    }
    if (name.size() != 25 || name.compare(20, 5, ".json") != 0) continue;  // not ours
    SpoolEntry entry;
    entry.seq = std::strtoull(name.substr(0, 20).c_str(), nullptr, 10);
    entry.path = path;
    auto text = read_file(path);
    if (!text.ok() || !parse_record(*text, entry, nullptr) || ids_.count(entry.delivery_id)) {
      ::unlink(path.c_str());
      if (drops) drops->corrupt.push_back(name);
      continue;
    }
    entry.bytes = text->size();
    bytes_ += entry.bytes;
    ids_.insert(entry.delivery_id);
    next_seq_ = std::max(next_seq_, entry.seq + 1);
    entries_.push_back(std::move(entry));
  }
  return {};
}

Spool::PutResult Spool::put(const Incident& incident, std::string_view body, std::int64_t now_ms, SpoolDrops* drops,
                            std::string* error) {
  std::string delivery_id = incident.id + "-" + std::to_string(incident.revision);
  if (ids_.count(delivery_id)) return PutResult::duplicate;
  nlohmann::ordered_json j;
  j["format"] = "faultline-spool";
  j["version"] = kSpoolVersion;
  j["delivery_id"] = delivery_id;
  j["incident_id"] = incident.id;
  j["revision"] = incident.revision;
  j["created_ms"] = now_ms;
  j["body"] = std::string(body);
  std::string text = j.dump();

  SpoolEntry entry;
  entry.seq = next_seq_++;
  entry.path = dir_ + "/" + file_name(entry.seq);
  entry.delivery_id = delivery_id;
  entry.incident_id = incident.id;
  entry.revision = incident.revision;
  entry.created_ms = now_ms;
  entry.bytes = text.size();

  if (auto written = write_file_atomic(entry.path, text); !written) {
    if (error) *error = written.error().message;
    return PutResult::failed;
  }
  bytes_ += entry.bytes;
  ids_.insert(entry.delivery_id);
  entries_.push_back(std::move(entry));
  while (bytes_ > max_bytes_ && entries_.size() > 1) drop_front_to(drops ? &drops->spool_full : nullptr);
  return PutResult::stored;
}

void Spool::drop_front_to(std::vector<SpoolEntry>* out) {
  SpoolEntry e = std::move(entries_.front());
  entries_.erase(entries_.begin());
  ::unlink(e.path.c_str());
  bytes_ -= std::min(bytes_, e.bytes);
  ids_.erase(e.delivery_id);
  if (out) out->push_back(std::move(e));
}

std::optional<std::pair<SpoolEntry, std::string>> Spool::front(SpoolDrops* drops) {
  while (!entries_.empty()) {
    SpoolEntry entry = entries_.front();
    std::string body;
    auto text = read_file(entry.path);
    SpoolEntry parsed = entry;
    if (text.ok() && parse_record(*text, parsed, &body)) return std::make_pair(std::move(entry), std::move(body));
    if (drops) drops->corrupt.push_back(entry.path);
    drop_front_to(nullptr);
  }
  return std::nullopt;
}

void Spool::remove(const SpoolEntry& entry) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const SpoolEntry& e) { return e.seq == entry.seq; });
  if (it == entries_.end()) return;
  ::unlink(it->path.c_str());
  bytes_ -= std::min(bytes_, it->bytes);
  ids_.erase(it->delivery_id);
  entries_.erase(it);
}

void Spool::expire(std::int64_t now_ms, SpoolDrops* drops) {
  auto max_ms = std::chrono::duration_cast<std::chrono::milliseconds>(max_age_).count();
  while (!entries_.empty() && now_ms - entries_.front().created_ms > max_ms)
    drop_front_to(drops ? &drops->max_age : nullptr);
}

std::optional<std::int64_t> Spool::oldest_ms() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.front().created_ms;
}

}  // namespace faultline
