// The per-sink spool: one file per batch of pending deliveries, durable before the first attempt (write_file_atomic:
// temporary name, fsync, rename, fsync the directory — once per batch), removed once every delivery in it is done;
// until then "<seq>.done" beside it names the deliveries of the batch already done.
// Bounded in bytes and age; what is shed is reported to the caller, who counts it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "faultline/durable_file.hpp"
#include "faultline/json_integer.hpp"
#include "faultline/sinks.hpp"

namespace faultline {
namespace {

constexpr int kSpoolVersion = 2;  // 1: one delivery per file, still read

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

// Beside a batch file "<seq>.json": "<seq>.done", the ids of its deliveries already done, one a line.
std::string done_path(const std::string& batch) { return batch.substr(0, batch.size() - 5) + ".done"; }

// One delivery of a spool file; false when a field is missing or of the wrong type.
bool parse_delivery(const nlohmann::json& j, SpoolEntry& entry, std::string* body) {
  if (!j.is_object() || !j.contains("body") || !j["body"].is_string()) return false;
  entry.delivery_id = j.value("delivery_id", "");
  entry.incident_id = j.value("incident_id", "");
  auto revision = json_integer_field<std::uint32_t>(j, "revision", 0);
  auto created_ms = json_integer_field<std::int64_t>(j, "created_ms", 0);
  if (!revision || !created_ms) return false;  // 1e300 or -1 where a count belongs: corrupt
  entry.revision = *revision;
  entry.created_ms = *created_ms;
  if (entry.delivery_id.empty()) return false;
  if (body) *body = j["body"].get<std::string>();
  return true;
}

struct ParsedDelivery {
  SpoolEntry entry;
  std::string body;
  std::uint64_t bytes = 0;
};

// The deliveries of a spool file, in order (version 1: one; version 2: a batch). Empty: the file is corrupt.
std::vector<ParsedDelivery> parse_file_json(const std::string& text) {
  std::vector<ParsedDelivery> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "faultline-spool") return out;
  const int version = json_integer_field<int>(j, "version", 0).value_or(0);
  if (version == 1) {
    ParsedDelivery d;
    if (parse_delivery(j, d.entry, &d.body)) {
      d.bytes = text.size();
      out.push_back(std::move(d));
    }
    return out;
  }
  if (version != kSpoolVersion || !j.contains("deliveries") || !j["deliveries"].is_array()) return out;
  for (const auto& item : j["deliveries"]) {
    ParsedDelivery d;
    if (!parse_delivery(item, d.entry, &d.body)) return {};  // a torn or edited batch: not trusted at all
    d.bytes = d.body.size() + d.entry.delivery_id.size() + d.entry.incident_id.size() + 80;
    out.push_back(std::move(d));
  }
  return out;
}

// A field of the wrong type (a string revision, ...) makes the file corrupt, not the daemon end (it threw).
std::vector<ParsedDelivery> parse_file(const std::string& text) {
  try {
    return parse_file_json(text);
  } catch (const nlohmann::json::exception&) {
    return {};
  }
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
  live_.clear();
  cached_path_.clear();
  cached_bodies_.clear();
  bytes_ = 0;
  std::vector<std::string> names;
  while (auto* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  // The deliveries of a batch done before the last stop (delivered or dropped), per batch file.
  std::unordered_map<std::string, std::set<std::string>> done;
  for (const auto& name : names) {
    if (name.size() != 25 || name.compare(20, 5, ".done") != 0) continue;
    std::string batch = dir_ + "/" + name.substr(0, 20) + ".json";
    if (!std::binary_search(names.begin(), names.end(), name.substr(0, 20) + ".json")) {
      ::unlink((dir_ + "/" + name).c_str());  // its batch is gone
      continue;
    }
    if (auto text = read_file(dir_ + "/" + name); text.ok()) {
      std::size_t start = 0;
      while (start < text->size()) {
        auto end = text->find('\n', start);
        if (end == std::string::npos) break;  // a torn last line: that delivery is sent again
        done[batch].insert(text->substr(start, end - start));
        start = end + 1;
      }
    }
  }
  for (const auto& name : names) {
    std::string path = dir_ + "/" + name;
    if (name.find(".tmp") != std::string::npos) {
      ::unlink(path.c_str());  // a write that never completed: it was never acknowledged to anyone
      continue;
    }
    if (name.size() != 25 || name.compare(20, 5, ".json") != 0) continue;  // not ours
    std::uint64_t file_seq = std::strtoull(name.substr(0, 20).c_str(), nullptr, 10);
    auto text = read_file(path);
    auto parsed = text.ok() ? parse_file(*text) : std::vector<ParsedDelivery>{};
    const auto& done_here = done[path];
    std::size_t kept = 0;
    for (auto& p : parsed) {
      if (done_here.count(p.entry.delivery_id)) continue;
      if (ids_.count(p.entry.delivery_id)) continue;  // written again after a crash: the first copy stands
      SpoolEntry entry = std::move(p.entry);
      entry.seq = next_seq_++;
      entry.path = path;
      entry.bytes = p.bytes;
      bytes_ += entry.bytes;
      ids_.insert(entry.delivery_id);
      entries_.push_back(std::move(entry));
      ++kept;
    }
    if (kept == 0) {
      ::unlink(path.c_str());
      ::unlink(done_path(path).c_str());
      if (parsed.empty() && drops) drops->corrupt.push_back(name);
      continue;
    }
    live_[path] = kept;
    next_file_ = std::max(next_file_, file_seq + 1);
  }
  return {};
}

Spool::PutResult Spool::put(const Incident& incident, std::string_view body, std::int64_t now_ms, SpoolDrops* drops,
                            std::string* error) {
  return put_batch({SpoolItem{incident.id, incident.revision, std::string(body)}}, now_ms, drops, error);
}

Spool::PutResult Spool::put_batch(const std::vector<SpoolItem>& items, std::int64_t now_ms, SpoolDrops* drops,
                                  std::string* error) {
  nlohmann::ordered_json j;
  j["format"] = "faultline-spool";
  j["version"] = kSpoolVersion;
  auto& list = j["deliveries"] = nlohmann::ordered_json::array();
  std::string path = dir_ + "/" + file_name(next_file_);
  std::vector<SpoolEntry> added;
  std::set<std::string> in_batch;
  for (const auto& item : items) {
    std::string delivery_id = item.delivery_id();
    if (ids_.count(delivery_id) || !in_batch.insert(delivery_id).second) continue;
    nlohmann::ordered_json d;
    d["delivery_id"] = delivery_id;
    d["incident_id"] = item.incident_id;
    d["revision"] = item.revision;
    d["created_ms"] = now_ms;
    d["body"] = item.body;
    list.push_back(std::move(d));
    SpoolEntry entry;
    entry.path = path;
    entry.delivery_id = std::move(delivery_id);
    entry.incident_id = item.incident_id;
    entry.revision = item.revision;
    entry.created_ms = now_ms;
    entry.bytes = item.body.size() + entry.delivery_id.size() + entry.incident_id.size() + 80;
    added.push_back(std::move(entry));
  }
  if (added.empty()) return PutResult::duplicate;
  if (auto written = write_file_atomic(path, j.dump()); !written) {
    if (error) *error = written.error().message;
    return PutResult::failed;
  }
  ++next_file_;
  live_[path] = added.size();
  for (auto& entry : added) {
    entry.seq = next_seq_++;
    bytes_ += entry.bytes;
    ids_.insert(entry.delivery_id);
    entries_.push_back(std::move(entry));
  }
  while (bytes_ > max_bytes_ && entries_.size() > 1) drop_front_to(drops ? &drops->spool_full : nullptr);
  return PutResult::stored;
}

void Spool::erase_at(std::size_t index) {
  SpoolEntry& e = entries_[index];
  auto live = live_.find(e.path);
  if (live == live_.end() || --live->second == 0) {
    ::unlink(e.path.c_str());
    ::unlink(done_path(e.path).c_str());
    if (live != live_.end()) live_.erase(live);
    if (cached_path_ == e.path) {
      cached_path_.clear();
      cached_bodies_.clear();
    }
  } else {
    // The batch lives on: note this one done beside it, so that a restart does not send it again. Not fsync'd (a
    // power loss may send it again: at least once); a failed write has the same effect.
    int fd = ::open(done_path(e.path).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      (void)write_all(fd, e.delivery_id + "\n", e.path);
      ::close(fd);
    }
    if (cached_path_ == e.path) cached_bodies_.erase(e.delivery_id);
  }
  bytes_ -= std::min(bytes_, e.bytes);
  ids_.erase(e.delivery_id);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Spool::drop_front_to(std::vector<SpoolEntry>* out) {
  if (out) out->push_back(entries_.front());
  erase_at(0);
}

bool Spool::load_file(const std::string& path, std::unordered_map<std::string, std::string>* bodies) {
  auto text = read_file(path);
  if (!text.ok()) return false;
  auto parsed = parse_file(*text);
  if (parsed.empty()) return false;
  bodies->clear();
  for (auto& p : parsed) bodies->emplace(p.entry.delivery_id, std::move(p.body));
  return true;
}

std::optional<std::pair<SpoolEntry, std::string>> Spool::front(SpoolDrops* drops) {
  while (!entries_.empty()) {
    const SpoolEntry& entry = entries_.front();
    if (cached_path_ != entry.path) {
      cached_path_.clear();
      if (load_file(entry.path, &cached_bodies_)) cached_path_ = entry.path;
    }
    if (cached_path_ == entry.path) {
      auto it = cached_bodies_.find(entry.delivery_id);
      if (it != cached_bodies_.end()) return std::make_pair(entry, it->second);
    }
    // Unreadable, or the delivery is not in its file: everything of that file goes.
    std::string path = entry.path;
    if (drops) drops->corrupt.push_back(path);
    for (std::size_t i = 0; i < entries_.size();) {
      if (entries_[i].path == path) erase_at(i);
      else ++i;
    }
  }
  return std::nullopt;
}

void Spool::remove(const SpoolEntry& entry) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const SpoolEntry& e) { return e.seq == entry.seq; });
  if (it == entries_.end()) return;
  erase_at(static_cast<std::size_t>(it - entries_.begin()));
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
