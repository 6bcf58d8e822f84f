// The server's lifecycle (token, bind, close on the io thread) and what the daemon tells it (ServerStatus).
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include <unistd.h>

#include <algorithm>

#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/rules.hpp"
#include "faultline/secrets.hpp"
#include "faultline/server.hpp"
#include "http_server.hpp"

namespace faultline {

std::vector<RuleInfo> rule_infos(const RuleSet& rules) {
  std::vector<RuleInfo> infos;
  infos.reserve(rules.rules.size());
  for (const auto& r : rules.rules)
    infos.push_back({r.id, r.title, r.severity, r.content_hash, r.summary, r.references});
  return infos;
}

void ServerStatus::set_ready(std::string_view component, bool ok, std::string detail) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(ready_.begin(), ready_.end(), [&](const auto& i) { return i.component == component; });
  ReadinessItem item{std::string(component), ok, std::move(detail)};
  if (it == ready_.end()) ready_.push_back(std::move(item));
  else *it = std::move(item);
}

void ServerStatus::set_rules(std::vector<RuleInfo> rules) {
  std::lock_guard lock(mutex_);
  rules_ = std::move(rules);
}

void ServerStatus::set_activity(ReadingActivity activity) {
  std::lock_guard lock(mutex_);
  activity_ = std::move(activity);
}

ReadingActivity ServerStatus::activity() const {
  std::lock_guard lock(mutex_);
  return activity_;
}

std::vector<ReadinessItem> ServerStatus::readiness() const {
  std::vector<ReadinessItem> items;
  {
    std::lock_guard lock(mutex_);
    items = ready_;
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.component < b.component; });
  if (!state_dir_.empty()) {
    bool ok = ::access(state_dir_.c_str(), W_OK) == 0;
    items.push_back({"state_dir", ok, ok ? state_dir_ : state_dir_ + " is not writable"});
  }
  return items;
}

std::vector<RuleInfo> ServerStatus::rules() const {
  std::lock_guard lock(mutex_);
  return rules_;
}

void use_status(ApiContext& context, const ServerStatus& status) {
  context.readiness = [&status] { return status.readiness(); };
  context.rules = [&status] { return status.rules(); };
  context.activity = [&status] { return status.activity(); };
}

std::vector<std::string> validate_server(const ServerOptions& options) {
  std::vector<std::string> errors;
  std::string err;
  if (!options.listen.empty() && !parse_listen_address(options.listen, &err)) errors.push_back(err);
  if (!options.api_token_file.empty() && ::access(options.api_token_file.c_str(), R_OK) != 0)
    errors.push_back("server api_token_file '" + options.api_token_file + "' is not readable");
  return errors;
}

struct Server::Impl {
  ServerOptions options;
  ApiContext context;
  IoThread& io;
  Metrics& metrics;
  std::unique_ptr<HttpServer> http;
  std::string listen;
};

Server::Server(ServerOptions options, ApiContext context, IoThread& io, Metrics& metrics)
    : impl_(std::make_unique<Impl>(Impl{std::move(options), std::move(context), io, metrics, nullptr, {}})) {}

Server::~Server() { stop(); }

Result<void> Server::start() {
  auto& d = *impl_;
  if (d.http) return {};
  if (!d.options.api_token_file.empty()) {
    auto token = read_secret_file(d.options.api_token_file);
    if (!token) return Error{"server api_token_file '" + d.options.api_token_file + "' is empty or unreadable"};
    d.context.api_token = *token;
  }
  std::string err;
  auto handler = [&d](const HttpRequest& r, std::string* h) { return handle_request(r, d.context, h); };
  // The observer may run after stop() (a response still being written): it holds the metrics, not this server.
  auto observer = [&m = d.metrics](std::string_view h, unsigned status) { m.record_http_request(h, status); };
  d.http = HttpServer::create(d.io.context(), d.options, handler, observer, &err);
  if (!d.http) return Error{err};
  d.listen = d.http->local_address();
  return {};
}

std::string Server::listen_address() const { return impl_->listen; }

void Server::stop() {
  auto& d = *impl_;
  if (!d.http) return;
  d.io.run_sync([&d] { d.http->close(); });
  d.http.reset();
}

}  // namespace faultline
