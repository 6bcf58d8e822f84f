// The inventory's JSON form (shared by `faultline fingerprints --json` and `GET /api/v1/fingerprints`) and the board
// that hands the pipeline thread's inventory to the HTTP server's thread.
#include <nlohmann/json.hpp>

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
