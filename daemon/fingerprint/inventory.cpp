// The inventory's JSON form (shared by `faultline fingerprints --json` and `GET /api/v1/fingerprints`), its saved
// form in the daemon's checkpoint, and the board that hands the pipeline thread's inventory to the HTTP server's
// thread.
#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "faultline/json_integer.hpp"

#include "faultline/fingerprint.hpp"

namespace faultline {

namespace {

nlohmann::ordered_json entry_object(const FingerprintEntry& e) {
  nlohmann::ordered_json j;
  j["fingerprint"] = e.fingerprint;
  j["type"] = sanitize_utf8(e.type);
  j["template"] = sanitize_utf8(e.message_template);
  j["count"] = e.count;
  j["first_seen"] = format_time(e.first_seen);
  j["last_seen"] = format_time(e.last_seen);
  nlohmann::ordered_json streams = nlohmann::ordered_json::array();
  for (const auto& s : e.streams) streams.push_back(sanitize_utf8(s));
  j["streams"] = std::move(streams);
  nlohmann::ordered_json example = nlohmann::ordered_json::array();
  for (const auto& l : e.example) example.push_back(sanitize_utf8(l));
  j["example"] = std::move(example);
  j["claimed_by"] = e.claimed_by.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.claimed_by);
  j["below_error"] = e.below_error;
  j["severity"] = std::string(to_string(e.severity));
  return j;
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string fingerprint_json(const FingerprintEntry& entry) { return dump(entry_object(entry)); }

std::string inventory_json(const std::vector<FingerprintEntry>& inventory) {
  nlohmann::ordered_json j;
  j["count"] = inventory.size();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& e : inventory) list.push_back(entry_object(e));
  j["fingerprints"] = std::move(list);
  return dump(j);
}

namespace {
constexpr int kInventoryStateVersion = 1;

std::string cut(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(0, n); }

Time time_field(const nlohmann::json& j, const char* what) {
  auto t = parse_rfc3339(j.at(what).get<std::string>());
  if (!t) throw std::runtime_error(std::string(what) + " is not an RFC 3339 time: " + j.at(what).dump());
  return *t;
}

// The saved inventory's version, checked before any entry is read: another version is an Error saying which.
std::optional<Error> version_error(const nlohmann::json& j) {
  const auto& v = j.at("version");
  if (v.is_number_integer() && v.get<std::int64_t>() == kInventoryStateVersion) return std::nullopt;
  return Error{"unsupported fingerprint inventory version " + v.dump()};
}
}  // namespace

std::string inventory_state_json(const std::vector<FingerprintEntry>& inventory,
                                 const std::vector<UnclassifiedContinuation>& book) {
  // The most recently seen entries, kept in order of first sight.
  std::vector<const FingerprintEntry*> kept;
  for (const auto& e : inventory) kept.push_back(&e);
  if (kept.size() > kMaxSavedFingerprints) {
    std::vector<const FingerprintEntry*> by_last = kept;
    std::nth_element(by_last.begin(), by_last.begin() + (kMaxSavedFingerprints - 1), by_last.end(),
                     [](auto* a, auto* b) { return a->last_seen > b->last_seen; });
    const Time cutoff = by_last[kMaxSavedFingerprints - 1]->last_seen;
    std::size_t above = std::count_if(kept.begin(), kept.end(), [&](auto* e) { return e->last_seen > cutoff; });
    std::size_t at_cutoff = kMaxSavedFingerprints - above;  // ties at the cutoff: the later ones in order
    std::vector<const FingerprintEntry*> out;
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      if ((*it)->last_seen > cutoff || ((*it)->last_seen == cutoff && at_cutoff > 0 && at_cutoff--)) out.push_back(*it);
    }
    std::reverse(out.begin(), out.end());
    kept = std::move(out);
  }
  nlohmann::json j;
  j["version"] = kInventoryStateVersion;
  auto& list = j["entries"] = nlohmann::json::array();
  for (const FingerprintEntry* e : kept) {
    nlohmann::json x;
    x["fingerprint"] = e->fingerprint;
    x["type"] = e->type;
    x["template"] = e->message_template;
    x["count"] = e->count;
    x["first_seen"] = format_time(e->first_seen);
    x["last_seen"] = format_time(e->last_seen);
    x["streams"] = e->streams;
    auto& example = x["example"] = nlohmann::json::array();
    for (std::size_t k = 0; k < e->example.size() && k < kMaxSavedExampleLines; ++k)
      example.push_back(cut(e->example[k], kMaxSavedExampleText));
    x["claimed_by"] = e->claimed_by;
    x["severity"] = std::string(to_string(e->severity));
    x["below_error"] = e->below_error;
    list.push_back(std::move(x));
  }
  auto& incidents = j["incidents"] = nlohmann::json::array();
  const std::size_t skip = book.size() > kMaxSavedFingerprints ? book.size() - kMaxSavedFingerprints : 0;
  for (std::size_t i = skip; i < book.size(); ++i) {  // the newest, in the book's order
    const UnclassifiedContinuation& b = book[i];
    incidents.push_back({{"stream", b.stream}, {"fingerprint", b.fingerprint}, {"id", b.id}, {"revision", b.revision},
                         {"count", b.count}, {"severity", std::string(to_string(b.severity))},
                         {"first_seen", format_time(b.first_seen)}});
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::vector<UnclassifiedContinuation>> book_from_state_json(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (auto unsupported = version_error(j)) return *unsupported;
    std::vector<UnclassifiedContinuation> out;
    if (!j.contains("incidents")) return out;  // written before the book was kept
    for (const auto& x : j.at("incidents")) {
      if (out.size() >= kMaxSavedFingerprints) break;
      UnclassifiedContinuation b;
      b.stream = x.at("stream").get<std::string>();
      b.fingerprint = x.at("fingerprint").get<std::string>();
      b.id = x.at("id").get<std::string>();
      auto revision = json_integer<std::uint32_t>(x.at("revision"));
      auto count = json_integer<std::uint32_t>(x.at("count"));
      if (!revision || !count) throw std::runtime_error("revision or count is not an integer in range");
      b.revision = *revision;
      b.count = *count;
      auto severity = parse_severity(x.at("severity").get<std::string>());
      if (!severity) throw std::runtime_error("unknown severity " + x.at("severity").dump());
      b.severity = *severity;
      b.first_seen = time_field(x, "first_seen");
      out.push_back(std::move(b));
    }
    return out;
  } catch (const std::exception& e) {
    return Error{std::string("malformed unclassified incidents in the checkpoint: ") + e.what()};
  }
}

Result<std::vector<FingerprintEntry>> inventory_from_state_json(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (auto unsupported = version_error(j)) return *unsupported;
    std::vector<FingerprintEntry> out;
    for (const auto& x : j.at("entries")) {
      if (out.size() >= kMaxSavedFingerprints) break;
      FingerprintEntry e;
      e.fingerprint = x.at("fingerprint").get<std::string>();
      e.type = x.at("type").get<std::string>();
      e.message_template = x.at("template").get<std::string>();
      auto count = json_integer<std::uint64_t>(x.at("count"));
      if (!count) throw std::runtime_error("count is not an integer in range: " + x.at("count").dump());
      e.count = *count;
      e.first_seen = time_field(x, "first_seen");
      e.last_seen = time_field(x, "last_seen");
      for (const auto& s : x.at("streams")) {
        if (e.streams.size() < 8) e.streams.push_back(s.get<std::string>());
      }
      for (const auto& l : x.at("example")) {
        if (e.example.size() < kMaxSavedExampleLines)
          e.example.push_back(cut(l.get<std::string>(), kMaxSavedExampleText));
      }
      e.claimed_by = x.at("claimed_by").get<std::string>();
      auto severity = parse_severity(x.at("severity").get<std::string>());
      if (!severity) throw std::runtime_error("unknown severity " + x.at("severity").dump());
      e.severity = *severity;
      e.below_error = x.at("below_error").get<bool>();
      out.push_back(std::move(e));
    }
    return out;
  } catch (const std::exception& e) {
    return Error{std::string("malformed fingerprint inventory: ") + e.what()};
  }
}

void InventoryBoard::publish(std::vector<FingerprintEntry> inventory) {
  auto next = std::make_shared<const std::vector<FingerprintEntry>>(std::move(inventory));
  std::lock_guard lock(mutex_);
  latest_ = std::move(next);
}

std::shared_ptr<const std::vector<FingerprintEntry>> InventoryBoard::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

}  // namespace faultline
