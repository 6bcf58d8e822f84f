// The incident store behind the API: the latest revision of each recent incident and its bounded revision history
// (incident_view.hpp), deduplicating on (id, revision), with an append-only JSON-lines log so the API, the history
// and deduplication survive restarts.
//
// The log, version 2: a first line {"faultline_incident_log":2}; then one incident revision per line (to_json, as
// version 1 had only); a line {"history_of":"<id>","revisions":[...],"omitted":N} before a revision line sets that
// incident's history (written when the log is compacted, and before a revision whose earlier ones were never
// logged). A version 1 log (revision lines only) is read the same way: its revisions make the history.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "faultline/durable_file.hpp"
#include "faultline/sinks.hpp"

namespace faultline {
namespace {
constexpr std::uint64_t kCompactAt = 16ull << 20;  // rewrite the log when it grows past this
constexpr std::string_view kHeaderKey = "{\"faultline_incident_log\":";
constexpr std::string_view kHistoryKey = "{\"history_of\":";
constexpr int kLogVersion = 2;

std::string history_line(const std::string& id, const RevisionHistory& history) {
  std::string body = history.to_json();  // {"revisions":...}
  return std::string(kHistoryKey) + nlohmann::json(id).dump() + "," + body.substr(1);
}

// A stored incident's place in the store: its map node (key, value, hash, link) and its entry in logged_.
std::size_t entry_bytes(const std::string& id, const StoredIncident& s) {
  constexpr std::size_t kNodes = 2 * (2 * sizeof(void*) + sizeof(std::string)) + sizeof(std::uint32_t);
  return s.bytes() + kNodes + 2 * heap_bytes(id);
}
}  // namespace

IncidentStore::IncidentStore(IncidentStoreLimits limits, std::string log_path)
    : limits_(limits), log_path_(std::move(log_path)) {
  limits_.incidents = std::max<std::size_t>(limits_.incidents, 1);
}

Result<void> IncidentStore::open() {
  if (log_path_.empty()) return {};
  std::ifstream in(log_path_);
  if (in) {
    std::string line;
    std::unordered_map<std::string, RevisionHistory> pending;  // histories read before their incident's revision
    while (std::getline(in, line)) {
      if (line.empty() || line.rfind(kHeaderKey, 0) == 0) continue;
      if (line.rfind(kHistoryKey, 0) == 0) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j["history_of"].is_string()) continue;  // torn: the revisions still count
        auto history = RevisionHistory::from_json(line);
        if (history) pending.insert_or_assign(j["history_of"].get<std::string>(), std::move(*history));
        continue;
      }
      auto inc = incident_from_json(line);
      if (!inc) continue;  // a torn last line after a crash; the rest is still good
      auto it = by_id_.find(inc->id);
      if (it != by_id_.end() && it->second.stored.summary.revision >= inc->revision) continue;
      RevisionHistory history;
      if (auto p = pending.find(inc->id); p != pending.end()) {
        history = std::move(p->second);
        pending.erase(p);
      } else if (it != by_id_.end()) {
        history = std::move(it->second.stored.history);
      }
      history.record(*inc);
      logged_[inc->id] = inc->revision;
      hold({IncidentSummary::of(*inc), std::move(line), next_order_++, std::move(history)});
      evict();  // as it reads: a log longer than the limits never has to be held whole
    }
  }
  compact_log();
  int fd = ::open(log_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return Error::from_errno("cannot open", log_path_);
  ::close(fd);
  return {};
}

void IncidentStore::count(const IncidentSummary& incident, int delta) {
  if (incident.status != IncidentStatus::firing) return;
  std::lock_guard lock(counts_mutex_);
  auto& n = firing_counts_[{incident.rule, incident.severity}];  // kept at 0 once seen: its gauge goes back to 0
  if (delta > 0) ++n;
  else if (n > 0) --n;
}

std::vector<std::pair<std::pair<std::string, Severity>, std::size_t>> IncidentStore::firing_counts() const {
  std::lock_guard lock(counts_mutex_);
  return {firing_counts_.begin(), firing_counts_.end()};
}

Result<void> IncidentStore::deliver(const Incident& incident) {
  accept(incident);
  return {};
}

void IncidentStore::persist(std::string_view id) {
  if (const auto* s = find(id)) log_revision(*s);
  if (log_bytes_ > kCompactAt) compact_log();
}

void IncidentStore::log_revision(const StoredIncident& s) {
  if (log_path_.empty()) return;
  auto& logged = logged_[s.summary.id];
  if (logged >= s.summary.revision) return;
  // Revisions the history holds that were never logged (accepted while a sink held them in memory only): the
  // history goes first, so a restart shows them.
  const auto& entries = s.history.entries();
  std::string text;
  if (entries.size() > 1 && entries[entries.size() - 2].revision > logged)
    text = history_line(s.summary.id, s.history) + "\n";
  text += s.json;
  append_log(text);
  logged = s.summary.revision;
}

IncidentStore::Accept IncidentStore::accept(const Incident& incident, bool persist) {
  auto it = by_id_.find(incident.id);
  Accept result = Accept::added;
  if (it != by_id_.end()) {
    if (it->second.stored.summary.revision >= incident.revision) return Accept::duplicate;
    result = Accept::updated;
  }
  RevisionHistory history = it != by_id_.end() ? std::move(it->second.stored.history) : RevisionHistory{};
  history.record(incident);
  StoredIncident s{IncidentSummary::of(incident), to_json(incident), next_order_++, std::move(history)};
  if (persist) log_revision(s);
  hold(std::move(s));
  evict();
  if (log_bytes_ > kCompactAt) compact_log();
  return result;
}

void IncidentStore::hold(StoredIncident s) {
  s.json.shrink_to_fit();
  auto it = by_id_.find(s.summary.id);
  if (it != by_id_.end()) {
    count(it->second.stored.summary, -1);
    bytes_ -= it->second.bytes;
    it->second.stored = std::move(s);
  } else {
    std::string id = s.summary.id;
    it = by_id_.emplace(std::move(id), Held{std::move(s)}).first;
  }
  count(it->second.stored.summary, +1);
  it->second.bytes = entry_bytes(it->first, it->second.stored);
  bytes_ += it->second.bytes;
}

void IncidentStore::append_log(const std::string& json) {
  if (log_path_.empty()) return;
  int fd = ::open(log_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return;
  std::string line = json + "\n";
  auto n = ::write(fd, line.data(), line.size());
  if (n > 0) log_bytes_ += static_cast<std::uint64_t>(n);
  ::close(fd);
}

void IncidentStore::compact_log() {
  if (log_path_.empty()) return;
  std::vector<const StoredIncident*> all;
  all.reserve(by_id_.size());
  for (const auto& [id, held] : by_id_) all.push_back(&held.stored);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->order < b->order; });
  // Written in pieces: the stored lines are already strings, and one string of the whole log (about a megabyte at
  // the default capacity) would leave its buffer at the top of this thread's heap, held after every compaction.
  auto writer = AtomicFileWriter::create(log_path_);
  if (!writer) return;  // the old log stays; it is only longer
  writer->append(std::string(kHeaderKey) + std::to_string(kLogVersion) + "}\n");
  for (auto* s : all) {
    if (s->history.entries().size() > 1 || s->history.omitted() > 0) {
      writer->append(history_line(s->summary.id, s->history));
      writer->append("\n");
    }
    writer->append(s->json);
    writer->append("\n");
  }
  const std::uint64_t size = writer->size();
  if (!writer->commit()) return;
  log_bytes_ = size;
}

void IncidentStore::evict() {
  while (by_id_.size() > limits_.incidents || (bytes_ > limits_.bytes && by_id_.size() > 1)) {
    auto victim = by_id_.end();
    for (auto it = by_id_.begin(); it != by_id_.end(); ++it) {
      const StoredIncident& s = it->second.stored;
      if (s.order + 1 == next_order_) continue;  // the newest: kept
      bool resolved = s.summary.status == IncidentStatus::resolved;
      if (victim == by_id_.end()) {
        victim = it;
        continue;
      }
      const StoredIncident& v = victim->second.stored;
      bool vres = v.summary.status == IncidentStatus::resolved;
      if ((resolved && !vres) || (resolved == vres && s.order < v.order)) victim = it;
    }
    count(victim->second.stored.summary, -1);
    bytes_ -= victim->second.bytes;
    logged_.erase(victim->first);
    by_id_.erase(victim);
  }
}

const StoredIncident* IncidentStore::find(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : &it->second.stored;
}

std::vector<const StoredIncident*> IncidentStore::query(const IncidentQuery& q) const {
  std::vector<const StoredIncident*> out;
  for (const auto& [id, held] : by_id_) {
    const StoredIncident& s = held.stored;
    const auto& inc = s.summary;
    if (!q.rules.empty() && std::find(q.rules.begin(), q.rules.end(), inc.rule) == q.rules.end()) continue;
    if (!q.severities.empty() &&
        std::find(q.severities.begin(), q.severities.end(), inc.severity) == q.severities.end())
      continue;
    if (q.since && inc.last_seen < *q.since) continue;
    if (q.status && inc.status != *q.status) continue;
    out.push_back(&s);
  }
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->order > b->order; });
  if (out.size() > q.limit) out.resize(q.limit);
  return out;
}

std::vector<const StoredIncident*> IncidentStore::firing() const {
  std::vector<const StoredIncident*> out;
  for (const auto& [id, held] : by_id_)
    if (held.stored.summary.status == IncidentStatus::firing) out.push_back(&held.stored);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->order < b->order; });
  return out;
}

}  // namespace faultline
