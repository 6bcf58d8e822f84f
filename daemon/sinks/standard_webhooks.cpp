// The json sink's payload: the incident JSON as it was spooled, with the Standard Webhooks headers — webhook-id (the
// delivery id, stable across retries and restarts), webhook-timestamp (this attempt) and, with a secret, the
// signature. The secret file is re-read at every attempt, so a rotated secret needs no restart.
#include <spdlog/spdlog.h>

#include "faultline/secrets.hpp"
#include "faultline/sinks.hpp"
#include "sinks_internal.hpp"

namespace faultline {
namespace {

class StandardWebhooksPayload final : public sinks_detail::Payload {
 public:
  explicit StandardWebhooksPayload(const SinkConfig& config)
      : name_(config.name), secret_file_(config.hmac_secret_file) {}

  std::optional<sinks_detail::Delivery> render(const SpoolEntry& entry, std::string body, Time now) override {
    sinks_detail::Delivery d;
    d.body = std::move(body);
    auto ts = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    d.headers.emplace_back("webhook-id", entry.delivery_id);
    d.headers.emplace_back("webhook-timestamp", std::to_string(ts));
    if (!secret_file_.empty()) {
      if (auto secret = read_secret_file(secret_file_)) {
        d.headers.emplace_back("webhook-signature", standard_webhooks_signature(decode_webhook_secret(*secret),
                                                                                entry.delivery_id, ts, d.body));
      } else {
        spdlog::error("sink {}: cannot read hmac_secret_file {}; sending unsigned", name_, secret_file_);
      }
    }
    return d;
  }

 private:
  std::string name_;
  std::string secret_file_;
};

}  // namespace

namespace sinks_detail {

std::unique_ptr<Payload> make_standard_webhooks_payload(const SinkConfig& config) {
  return std::make_unique<StandardWebhooksPayload>(config);
}

}  // namespace sinks_detail
}  // namespace faultline
