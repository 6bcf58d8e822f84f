// Internal to the sinks room: the payload format behind a webhook sink (how a spooled delivery becomes a request,
// and what an Alertmanager sink re-sends while alerts are firing), and a text helper the formats share. Used on the
// io thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/sinks.hpp"

namespace faultline::sinks_detail {

// Cuts to at most `max` bytes at a UTF-8 character boundary.
std::string cut_utf8(std::string_view s, std::size_t max);

struct Delivery {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides the sink's own (config headers, bearer token)
  std::size_t items = 1;                                     // alerts in a re-send, for logs
};

class Payload {
 public:
  virtual ~Payload() = default;
  // The request target for the sink's URL target (Alertmanager: its alerts endpoint).
  virtual std::string target(std::string url_target) const { return url_target; }
  // The request for one spooled delivery (`body`: the incident JSON); nullopt: the body is unusable (dropped).
  virtual std::optional<Delivery> render(const SpoolEntry& entry, std::string body, Time now) = 0;
  // How often what is firing is re-sent while nothing is pending; zero: never.
  virtual Duration refresh_interval() const { return Duration::zero(); }
  // The re-send of the firing incidents this sink takes (`taken`); nullopt: nothing to send.
  virtual std::optional<Delivery> refresh(Time, const std::function<bool(const Incident&)>&) { return std::nullopt; }
};

// json: the incident JSON with webhook-id, webhook-timestamp and (with a secret) webhook-signature.
std::unique_ptr<Payload> make_standard_webhooks_payload(const SinkConfig& config);
// alertmanager: a one-alert array per delivery; re-sends every firing incident of `incidents` the sink takes.
std::unique_ptr<Payload> make_alertmanager_payload(const SinkConfig& config, std::string external_url,
                                                   const IncidentView* incidents);

}  // namespace faultline::sinks_detail
