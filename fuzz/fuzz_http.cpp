// The HTTP API's request handling (routing, query parsing, authorization, the page's session cookie and login form)
// over fuzzed method, target, Authorization and Cookie headers and body, with an empty incident view; sockets play no
// part (handle_request takes plain values).
#include <cstddef>
#include <cstdint>
#include <string>

#include "faultline/clock.hpp"
#include "faultline/metrics.hpp"
#include "faultline/server.hpp"
#include "fuzz_support.hpp"

using namespace faultline;

namespace {

class NoIncidents : public IncidentView {
 public:
  const StoredIncident* find(std::string_view) const override { return nullptr; }
  std::vector<const StoredIncident*> query(const IncidentQuery&) const override { return {}; }
  std::vector<const StoredIncident*> firing() const override { return {}; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static NoIncidents incidents;
  static Metrics metrics;
  fuzz::Bytes in(data, size);
  const std::uint8_t flags = in.byte();
  HttpRequest request;
  request.method = std::string(in.until('\n'));
  request.target = std::string(in.until('\n'));
  request.authorization = std::string(in.until('\n'));
  request.cookie = std::string(in.until('\n'));
  request.origin = flags & 2 ? "http://127.0.0.1:9464" : "";
  request.host = "127.0.0.1:9464";
  request.body = std::string(in.rest());
  ApiContext context;
  context.incidents = &incidents;
  context.metrics = &metrics;
  context.readiness = [] { return std::vector<ReadinessItem>{}; };
  context.rules = [] { return std::vector<RuleInfo>{}; };
  if (flags & 1) context.api_token = "s3cret";
  context.external_url = "http://127.0.0.1:9090";
  context.version = "fuzz";
  std::string handler;
  (void)handle_request(request, context, &handler);
  (void)url_decode(request.target);
  (void)parse_query(request.target);
  return 0;
}
