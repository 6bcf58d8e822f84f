// Outputs: the io_context thread that runs the HTTP server, the incident store and one delivery loop per webhook
// sink. The pipeline thread only touches the bounded queue (submit) and a few locked fields (readiness, rules);
// everything else lives on the io thread, so it needs no locks.
//
// A sink's loop: expire what is too old, take the oldest spooled delivery, attempt it (one connection per attempt,
// one deadline over the whole attempt), remove it on 2xx, otherwise back off (exponential, ±20% jitter) and try the
// same delivery again — deliveries to one sink stay in order, and sinks never wait for each other.
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <spdlog/spdlog.h>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "../server/http_server.hpp"
#include "faultline/rules.hpp"
#include "faultline/sinks.hpp"

namespace faultline {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::string> read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

enum class AttemptResult { success, http_error, network_error, timeout, tls_error };

struct Attempt {
  AttemptResult result = AttemptResult::network_error;
  unsigned status = 0;
  std::string detail;
};

std::string_view to_string(AttemptResult r) {
  switch (r) {
    case AttemptResult::success: return "success";
    case AttemptResult::http_error: return "http_error";
    case AttemptResult::network_error: return "network_error";
    case AttemptResult::timeout: return "timeout";
    case AttemptResult::tls_error: return "tls_error";
  }
  return "?";
}

struct SinkWorker {
  SinkWorker(asio::io_context& io, SinkConfig c, ParsedUrl u, SinkMetrics& sm, std::string spool_dir)
      : cfg(std::move(c)),
        url(std::move(u)),
        m(sm),
        spool(std::move(spool_dir), cfg.spool_max_bytes, cfg.spool_max_age),
        wake(io),
        rng(std::random_device{}()) {}

  SinkConfig cfg;
  ParsedUrl url;
  SinkMetrics& m;
  Spool spool;
  asio::steady_timer wake;  // the loop sleeps on it; cancelled when work arrives or on stop
  std::unique_ptr<ssl::context> tls;
  std::mt19937_64 rng;
  std::set<std::string> sent_ids;  // incidents with a revision spooled for this sink (in this process)
  std::atomic<std::int64_t> oldest_ms{0};
  bool in_backoff = false;
  bool running = false;     // the loop coroutine is alive
  bool busy = false;        // an attempt is in flight
  beast::tcp_stream* in_flight = nullptr;
  Clock::time_point next_refresh{};
  std::uint32_t head_rejections = 0;  // consecutive 400/413/422 answers for the delivery at the head
};

}  // namespace

struct Outputs::Impl {
  Impl(OutputsOptions o, Metrics& m) : opts(std::move(o)), metrics(m), store(opts.max_incidents, log_path()) {}

  std::string log_path() const { return opts.state_dir.empty() ? std::string() : opts.state_dir + "/incidents.jsonl"; }

  OutputsOptions opts;
  Metrics& metrics;
  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;

  // Pipeline-facing state.
  mutable std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Incident> queue;
  bool accepting = false;
  bool drain_posted = false;
  std::mutex rmu;
  std::map<std::string, ReadinessItem, std::less<>> ready;
  std::vector<RuleInfo> rules;

  // io-thread state.
  IncidentStore store;
  std::unique_ptr<Redactor> redactor;
  std::unique_ptr<HttpServer> server;
  std::vector<std::unique_ptr<SinkWorker>> sinks;
  ApiContext api;
  std::string listen;
  std::map<std::pair<std::string, Severity>, prometheus::Gauge*> active_gauges;
  std::size_t hook_id = 0;  // our collect hook in `metrics`, removed at stop
  bool soft_stop = false;  // loops exit once their spool is empty
  bool hard_stop = false;  // loops exit now
  std::atomic<bool> idle{false};

  void drain_queue();
  void process(Incident incident);
  void update_active_gauges();
  void record_drops(SinkWorker& w, const SpoolDrops& d);
  void refresh_gauges(SinkWorker& w);
  void wake(SinkWorker& w);
  bool all_idle() const;
  asio::awaitable<void> run_sink(SinkWorker& w);
  asio::awaitable<Attempt> post(SinkWorker& w, std::string body, std::vector<std::pair<std::string, std::string>> headers);
  asio::awaitable<Attempt> post_plain(SinkWorker& w, const http::request<http::string_body>& req, Clock::time_point deadline);
  asio::awaitable<Attempt> post_tls(SinkWorker& w, const http::request<http::string_body>& req, Clock::time_point deadline);
  asio::awaitable<std::optional<tcp::resolver::results_type>> resolve(SinkWorker& w, Clock::time_point deadline, Attempt& a);
};

// ---------------------------------------------------------------------------------------------------------------

std::vector<std::string> validate_outputs(const OutputsOptions& options) {
  std::vector<std::string> errors;
  std::string err;
  if (!options.server.listen.empty() && !parse_listen_address(options.server.listen, &err)) errors.push_back(err);
  if (!options.server.api_token_file.empty() && ::access(options.server.api_token_file.c_str(), R_OK) != 0)
    errors.push_back("server api_token_file '" + options.server.api_token_file + "' is not readable");
  std::set<std::string> names;
  for (const auto& s : options.sinks) {
    for (auto& e : validate_sink(s)) errors.push_back(std::move(e));
    if (!names.insert(s.name).second) errors.push_back("sink '" + s.name + "': duplicate name");
  }
  if (!options.sinks.empty() && options.state_dir.empty())
    errors.push_back("webhook sinks need a state directory for their spool");
  if (!Redactor::create(options.redaction, &err)) errors.push_back(err);
  if (options.queue_capacity == 0) errors.push_back("queue_capacity must be positive");
  return errors;
}

Outputs::Outputs(OutputsOptions options, std::shared_ptr<Metrics> metrics)
    : metrics_(metrics ? std::move(metrics) : std::make_shared<Metrics>(options.version)),
      impl_(std::make_unique<Impl>(std::move(options), *metrics_)) {}

Outputs::~Outputs() { stop(Duration::zero()); }

bool Outputs::start(std::string* error) {
  auto& d = *impl_;
  if (d.thread.joinable()) return true;
  auto errors = validate_outputs(d.opts);
  if (!errors.empty()) {
    if (error) {
      *error = errors.front();
      for (std::size_t i = 1; i < errors.size(); ++i) *error += "; " + errors[i];
    }
    return false;
  }
  std::string err;
  d.redactor = Redactor::create(d.opts.redaction, &err);
  if (!d.opts.state_dir.empty()) {
    Spool probe(d.opts.state_dir, 1, Duration(1));  // creates the directory tree
    if (!probe.open(&err)) {
      if (error) *error = err;
      return false;
    }
  }
  if (!d.store.open(&err)) {
    if (error) *error = err;
    return false;
  }
  d.update_active_gauges();

  std::string token;
  if (!d.opts.server.api_token_file.empty()) {
    auto t = read_secret_file(d.opts.server.api_token_file);
    if (!t || t->empty()) {
      if (error) *error = "server api_token_file '" + d.opts.server.api_token_file + "' is empty or unreadable";
      return false;
    }
    token = *t;
  }

  for (const auto& cfg : d.opts.sinks) {
    auto url = parse_url(cfg.url, &err);
    if (cfg.format == WebhookFormat::alertmanager) {
      auto& t = url->target;
      auto q = t.find('?');
      std::string path = t.substr(0, q), query = q == std::string::npos ? "" : t.substr(q);
      while (path.size() > 1 && path.back() == '/') path.pop_back();
      if (path.size() < 14 || path.compare(path.size() - 14, 14, "/api/v2/alerts") != 0)
        path = (path == "/" ? "" : path) + "/api/v2/alerts";
      t = path + query;
    }
    auto w = std::make_unique<SinkWorker>(d.io, cfg, *url, d.metrics.sink(cfg.name),
                                          d.opts.state_dir + "/spool/" + cfg.name);
    if (url->scheme == "https") {
      try {
        w->tls = std::make_unique<ssl::context>(ssl::context::tls_client);
        w->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                            ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
        if (cfg.tls.verify) {
          w->tls->set_verify_mode(ssl::verify_peer);
          if (cfg.tls.ca_file.empty()) w->tls->set_default_verify_paths();
          else w->tls->load_verify_file(cfg.tls.ca_file);
        } else {
          w->tls->set_verify_mode(ssl::verify_none);
        }
        if (!cfg.tls.client_cert_file.empty()) {
          w->tls->use_certificate_chain_file(cfg.tls.client_cert_file);
          w->tls->use_private_key_file(cfg.tls.client_key_file, ssl::context::pem);
        }
      } catch (const std::exception& e) {
        if (error) *error = "sink '" + cfg.name + "': TLS setup failed: " + e.what();
        return false;
      }
    }
    SpoolDrops drops;
    if (!w->spool.open(&err, &drops)) {
      if (error) *error = "sink '" + cfg.name + "': " + err;
      return false;
    }
    if (!w->spool.empty())
      spdlog::info("sink {}: {} pending deliveries resume from the spool", cfg.name, w->spool.size());
    d.record_drops(*w, drops);
    d.refresh_gauges(*w);
    d.sinks.push_back(std::move(w));
  }

  if (!d.opts.server.listen.empty()) {
    auto handler = [&d](const HttpRequest& r, std::string* h) { return handle_request(r, d.api, h); };
    auto observer = [&d](std::string_view h, unsigned status) { d.metrics.record_http_request(h, status); };
    d.server = HttpServer::create(d.io, d.opts.server, handler, observer, &err);
    if (!d.server) {
      if (error) *error = err;
      return false;
    }
    d.listen = d.server->local_address();
  }
  std::string external = d.opts.external_url;
  if (external.empty() && !d.listen.empty()) external = "http://" + d.listen;
  while (!external.empty() && external.back() == '/') external.pop_back();
  d.opts.external_url = external;

  d.api.store = &d.store;
  d.api.metrics = &d.metrics;
  d.api.api_token = token;
  d.api.external_url = external;
  d.api.version = d.opts.version;
  d.api.readiness = [&d] {
    std::vector<ReadinessItem> items;
    {
      std::lock_guard lock(d.rmu);
      for (const auto& [k, v] : d.ready) items.push_back(v);
    }
    if (!d.opts.state_dir.empty()) {
      bool ok = ::access(d.opts.state_dir.c_str(), W_OK) == 0;
      items.push_back({"state_dir", ok, ok ? d.opts.state_dir : d.opts.state_dir + " is not writable"});
    }
    return items;
  };
  d.api.rules = [&d] {
    std::lock_guard lock(d.rmu);
    return d.rules;
  };

  // Scrape-time gauges: the age of each sink's oldest pending delivery.
  d.hook_id = d.metrics.add_collect_hook([&d] {
    auto now = unix_ms();
    for (auto& w : d.sinks) {
      auto o = w->oldest_ms.load();
      w->m.spool_oldest_pending_seconds.Set(o > 0 ? std::max<double>(0, (now - o) / 1000.0) : 0);
    }
  });

  for (auto& w : d.sinks) {
    w->running = true;
    asio::co_spawn(d.io, d.run_sink(*w), asio::detached);
  }
  {
    std::lock_guard lock(d.qmu);
    d.accepting = true;
  }
  d.guard.emplace(d.io.get_executor());
  d.thread = std::thread([&d] {
    for (;;) {
      try {
        d.io.run();
        break;
      } catch (const std::exception& e) {
        spdlog::error("outputs: unexpected error on the io thread: {}", e.what());
      }
    }
  });
  return true;
}

bool Outputs::submit(const Incident& incident) {
  auto& d = *impl_;
  d.metrics.observe_incident_latency(incident.read_at);
  std::unique_lock lock(d.qmu);
  d.qcv.wait(lock, [&] { return !d.accepting || d.queue.size() < 4 * d.opts.queue_capacity; });
  if (!d.accepting) return false;
  d.queue.push_back(incident);
  d.metrics.incident_queue_length().Set(static_cast<double>(d.queue.size()));
  if (!d.drain_posted) {
    d.drain_posted = true;
    asio::post(d.io, [&d] { d.drain_queue(); });
  }
  return true;
}

bool Outputs::backpressure() const {
  std::lock_guard lock(impl_->qmu);
  return impl_->queue.size() >= impl_->opts.queue_capacity;
}

bool Outputs::wait_for_space(Duration max) {
  auto& d = *impl_;
  std::unique_lock lock(d.qmu);
  return d.qcv.wait_for(lock, max, [&] { return !d.accepting || d.queue.size() < d.opts.queue_capacity; }) &&
         d.queue.size() < d.opts.queue_capacity;
}

void Outputs::set_ready(std::string_view component, bool ok, std::string detail) {
  std::lock_guard lock(impl_->rmu);
  impl_->ready.insert_or_assign(std::string(component), ReadinessItem{std::string(component), ok, std::move(detail)});
}

void Outputs::update_rules(const RuleSet& rules) {
  std::vector<RuleInfo> infos;
  infos.reserve(rules.rules.size());
  for (const auto& r : rules.rules) {
    infos.push_back({r.id, r.title, r.severity, r.content_hash});
    // Series start at 0 for every severity a rule can raise, so increase() sees its first incident.
    std::set<Severity> severities{r.severity};
    for (const auto& step : r.sequence)
      if (step.severity) severities.insert(*step.severity);
    for (auto sev : severities) {
      impl_->metrics.incidents(r.id, sev);
      impl_->metrics.incidents_active(r.id, sev);
    }
  }
  {
    std::lock_guard lock(impl_->rmu);
    impl_->rules = std::move(infos);
  }
  impl_->metrics.rules_loaded().Set(static_cast<double>(rules.rules.size()));
}

std::string Outputs::listen_address() const { return impl_->listen; }

void Outputs::stop(Duration grace) {
  auto& d = *impl_;
  {
    std::lock_guard lock(d.qmu);
    if (!d.accepting && !d.thread.joinable()) return;
    d.accepting = false;
  }
  d.qcv.notify_all();
  if (!d.thread.joinable()) return;
  // Spool what is queued, then let the sinks deliver until they are idle or the grace period ends.
  auto deadline = Clock::now() + grace;
  d.idle = false;
  asio::post(d.io, [&d] {
    d.drain_queue();
    d.soft_stop = true;
    if (d.server) d.server->close();
    for (auto& w : d.sinks) d.wake(*w);
    d.idle = d.all_idle();
  });
  while (Clock::now() < deadline && !d.idle.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    asio::post(d.io, [&d] { d.idle = d.all_idle(); });
  }
  asio::post(d.io, [&d] {
    d.hard_stop = true;
    if (d.server) d.server->close();
    for (auto& w : d.sinks) {
      w->wake.cancel();
      if (w->in_flight) {
        beast::error_code ec;
        w->in_flight->socket().close(ec);
      }
    }
  });
  d.guard.reset();
  d.thread.join();
  if (d.hook_id) d.metrics.remove_collect_hook(d.hook_id);  // the metrics may outlive us (a shared registry)
  d.hook_id = 0;
}

// ---------------------------------------------------------------------------------------------------------------
// io thread

void Outputs::Impl::drain_queue() {
  std::deque<Incident> batch;
  {
    std::lock_guard lock(qmu);
    batch.swap(queue);
    drain_posted = false;
    metrics.incident_queue_length().Set(0);
  }
  qcv.notify_all();
  for (auto& inc : batch) process(std::move(inc));
}

void Outputs::Impl::process(Incident incident) {
  if (redactor) redactor->apply(incident);
  auto accepted = store.accept(incident);
  if (accepted == IncidentStore::Accept::duplicate) return;  // already seen (a replay after restart)
  if (accepted == IncidentStore::Accept::added) metrics.incidents(incident.rule, incident.severity).Increment();
  update_active_gauges();
  const auto* stored = store.find(incident.id);
  if (!stored) return;
  auto now = unix_ms();
  for (auto& w : sinks) {
    bool sent_before = w->sent_ids.count(incident.id) != 0;
    if (!sink_accepts(w->cfg, stored->incident, sent_before)) continue;
    SpoolDrops drops;
    std::string err;
    auto r = w->spool.put(stored->incident, stored->json, now, &drops, &err);
    if (r == Spool::PutResult::failed) {
      spdlog::error("sink {}: {}", w->cfg.name, err);
      w->m.dropped_write_error.Increment();
    } else {
      if (w->sent_ids.size() > 4 * opts.max_incidents + 64) w->sent_ids.clear();
      w->sent_ids.insert(incident.id);
    }
    record_drops(*w, drops);
    refresh_gauges(*w);
    wake(*w);
  }
}

void Outputs::Impl::update_active_gauges() {
  std::map<std::pair<std::string, Severity>, int> counts;
  for (const auto* s : store.firing()) ++counts[{s->incident.rule, s->incident.severity}];
  for (auto& [key, g] : active_gauges) g->Set(0);
  for (const auto& [key, n] : counts) {
    auto it = active_gauges.find(key);
    if (it == active_gauges.end())
      it = active_gauges.emplace(key, &metrics.incidents_active(key.first, key.second)).first;
    it->second->Set(n);
  }
}

void Outputs::Impl::record_drops(SinkWorker& w, const SpoolDrops& d) {
  for (const auto& e : d.spool_full)
    spdlog::warn("sink {}: spool full, dropped delivery {}", w.cfg.name, e.delivery_id);
  for (const auto& e : d.max_age)
    spdlog::warn("sink {}: delivery {} expired undelivered", w.cfg.name, e.delivery_id);
  for (const auto& f : d.corrupt) spdlog::warn("sink {}: dropped unreadable spool file {}", w.cfg.name, f);
  w.m.dropped_spool_full.Increment(static_cast<double>(d.spool_full.size()));
  w.m.dropped_max_age.Increment(static_cast<double>(d.max_age.size()));
  w.m.dropped_corrupt.Increment(static_cast<double>(d.corrupt.size()));
}

void Outputs::Impl::refresh_gauges(SinkWorker& w) {
  w.m.spool_bytes.Set(static_cast<double>(w.spool.bytes()));
  w.oldest_ms = w.spool.oldest_ms().value_or(0);
}

void Outputs::Impl::wake(SinkWorker& w) {
  if (!w.in_backoff || soft_stop) w.wake.cancel();
}

bool Outputs::Impl::all_idle() const {
  for (const auto& w : sinks)
    if (!w->spool.empty() && w->running) return false;
  return true;
}

asio::awaitable<void> Outputs::Impl::run_sink(SinkWorker& w) {
  std::uint32_t failures = 0;
  auto& cfg = w.cfg;
  while (!hard_stop) {
    SpoolDrops drops;
    w.spool.expire(unix_ms(), &drops);
    auto item = w.spool.front(&drops);
    record_drops(w, drops);
    refresh_gauges(w);

    if (item) {
      auto& [entry, body] = *item;
      std::string payload;
      std::vector<std::pair<std::string, std::string>> headers;
      if (cfg.format == WebhookFormat::alertmanager) {
        auto inc = incident_from_json(body);
        if (!inc) {
          spdlog::warn("sink {}: spooled delivery {} is not a valid incident; dropped", cfg.name, entry.delivery_id);
          w.m.dropped_corrupt.Increment();
          w.spool.remove(entry);
          continue;
        }
        auto resolved_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(entry.created_ms));
        payload = "[" +
                  alertmanager_alert(*inc, {opts.external_url, cfg.resend_interval}, std::chrono::system_clock::now(),
                                     resolved_at) +
                  "]";
      } else {
        payload = std::move(body);
        auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
        headers.emplace_back("webhook-id", entry.delivery_id);
        headers.emplace_back("webhook-timestamp", std::to_string(ts));
        if (!cfg.hmac_secret_file.empty()) {
          auto secret = read_secret_file(cfg.hmac_secret_file);
          if (secret && !secret->empty()) {
            headers.emplace_back("webhook-signature",
                                 standard_webhooks_signature(decode_webhook_secret(*secret), entry.delivery_id, ts,
                                                             payload));
          } else {
            spdlog::error("sink {}: cannot read hmac_secret_file {}; sending unsigned", cfg.name,
                          cfg.hmac_secret_file);
          }
        }
      }
      if (failures > 0) w.m.retries.Increment();
      auto a = co_await post(w, std::move(payload), std::move(headers));
      if (hard_stop) break;
      switch (a.result) {
        case AttemptResult::success: w.m.success.Increment(); break;
        case AttemptResult::http_error: w.m.http_error.Increment(); break;
        case AttemptResult::network_error: w.m.network_error.Increment(); break;
        case AttemptResult::timeout: w.m.timeout.Increment(); break;
        case AttemptResult::tls_error: w.m.tls_error.Increment(); break;
      }
      if (a.result == AttemptResult::success) {
        w.spool.remove(entry);
        refresh_gauges(w);
        failures = 0;
        w.head_rejections = 0;
        continue;
      }
      bool payload_refused = a.status == 400 || a.status == 413 || a.status == 422;
      if (payload_refused && ++w.head_rejections >= 3) {
        spdlog::error("sink {}: receiver refused delivery {} three times ({}); dropped", cfg.name, entry.delivery_id,
                      a.detail);
        w.m.dropped_rejected.Increment();
        w.spool.remove(entry);
        refresh_gauges(w);
        w.head_rejections = 0;
        continue;
      }
      if (!payload_refused) w.head_rejections = 0;
      ++failures;
      auto base = std::chrono::duration<double>(cfg.backoff_initial).count() *
                  std::pow(2.0, std::min<std::uint32_t>(failures - 1, 30));
      base = std::min(base, std::chrono::duration<double>(cfg.backoff_max).count());
      std::uniform_real_distribution<double> jitter(0.8, 1.2);
      auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(base * jitter(w.rng)));
      if (failures == 1 || failures % 10 == 0)
        spdlog::warn("sink {}: delivery {} failed ({}: {}); retry {} in {:.1f}s", cfg.name, entry.delivery_id,
                     to_string(a.result), a.detail, failures, std::chrono::duration<double>(delay).count());
      if (soft_stop) break;  // shutting down: what is left stays spooled for the next start
      w.in_backoff = true;
      w.wake.expires_after(delay);
      beast::error_code ec;
      co_await w.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      w.in_backoff = false;
      continue;
    }

    if (soft_stop) break;
    // Nothing pending. Alertmanager: keep firing alerts alive by re-posting them.
    if (cfg.format == WebhookFormat::alertmanager && Clock::now() >= w.next_refresh) {
      w.next_refresh = Clock::now() + cfg.resend_interval;
      std::string payload = "[";
      std::size_t n = 0;
      auto now = std::chrono::system_clock::now();
      for (const auto* s : store.firing()) {
        if (!sink_accepts(cfg, s->incident, w.sent_ids.count(s->incident.id) != 0)) continue;
        if (n++) payload += ',';
        payload += alertmanager_alert(s->incident, {opts.external_url, cfg.resend_interval}, now);
      }
      payload += "]";
      if (n > 0) {
        auto a = co_await post(w, std::move(payload), {});
        if (hard_stop) break;
        if (a.result == AttemptResult::success) w.m.success.Increment();
        else if (a.result == AttemptResult::http_error) w.m.http_error.Increment();
        else if (a.result == AttemptResult::timeout) w.m.timeout.Increment();
        else if (a.result == AttemptResult::tls_error) w.m.tls_error.Increment();
        else w.m.network_error.Increment();
        if (a.result != AttemptResult::success)
          spdlog::warn("sink {}: refreshing {} firing alerts failed ({}: {})", cfg.name, n, to_string(a.result),
                       a.detail);
      }
      continue;
    }
    if (cfg.format == WebhookFormat::alertmanager) w.wake.expires_at(w.next_refresh);
    else w.wake.expires_at(Clock::time_point::max());
    beast::error_code ec;
    co_await w.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  w.running = false;
}

asio::awaitable<std::optional<tcp::resolver::results_type>> Outputs::Impl::resolve(SinkWorker& w,
                                                                                     Clock::time_point deadline,
                                                                                     Attempt& a) {
  auto ex = co_await asio::this_coro::executor;
  tcp::resolver resolver(ex);
  asio::steady_timer timer(ex);
  timer.expires_at(deadline);
  bool timed_out = false;
  timer.async_wait([&](beast::error_code ec) {
    if (!ec) {
      timed_out = true;
      resolver.cancel();
    }
  });
  beast::error_code ec;
  auto results = co_await resolver.async_resolve(w.url.host, std::to_string(w.url.port),
                                                 asio::redirect_error(asio::use_awaitable, ec));
  timer.cancel();
  if (timed_out) {
    a = {AttemptResult::timeout, 0, "resolving " + w.url.host + " timed out"};
    // Let the cancelled wait complete before the timer goes out of scope (its handler refers to locals).
    co_await asio::post(ex, asio::use_awaitable);
    co_return std::nullopt;
  }
  co_await asio::post(ex, asio::use_awaitable);
  if (ec) {
    a = {AttemptResult::network_error, 0, "resolving " + w.url.host + ": " + ec.message()};
    co_return std::nullopt;
  }
  co_return results;
}

namespace {

http::request<http::string_body> make_request(const SinkWorker& w, const std::string& version, std::string body,
                                              const std::vector<std::pair<std::string, std::string>>& extra) {
  http::request<http::string_body> req{http::verb::post, w.url.target, 11};
  bool default_port = (w.url.scheme == "https" && w.url.port == 443) || (w.url.scheme == "http" && w.url.port == 80);
  std::string host = w.url.host.find(':') != std::string::npos ? "[" + w.url.host + "]" : w.url.host;
  req.set(http::field::host, default_port ? host : host + ":" + std::to_string(w.url.port));
  req.set(http::field::user_agent, "faultline/" + version);
  req.set(http::field::content_type, "application/json");
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : w.cfg.headers) req.set(k, v);
  if (!w.cfg.bearer_token_file.empty()) {
    if (auto t = read_secret_file(w.cfg.bearer_token_file); t && !t->empty())
      req.set(http::field::authorization, "Bearer " + *t);
    else
      spdlog::error("sink {}: cannot read bearer_token_file {}", w.cfg.name, w.cfg.bearer_token_file);
  }
  for (const auto& [k, v] : extra) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

Attempt classify(beast::error_code ec, const char* step) {
  if (ec == beast::error::timeout) return {AttemptResult::timeout, 0, std::string(step) + " timed out"};
  return {AttemptResult::network_error, 0, std::string(step) + ": " + ec.message()};
}

Attempt from_response(const http::response<http::string_body>& res) {
  unsigned code = res.result_int();
  if (code >= 200 && code < 300) return {AttemptResult::success, code, {}};
  std::string body = res.body().substr(0, 200);
  return {AttemptResult::http_error, code, "HTTP " + std::to_string(code) + (body.empty() ? "" : ": " + body)};
}

}  // namespace

asio::awaitable<Attempt> Outputs::Impl::post(SinkWorker& w, std::string body,
                                             std::vector<std::pair<std::string, std::string>> headers) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(w.cfg.timeout);
  auto req = make_request(w, opts.version, std::move(body), headers);
  w.busy = true;
  // (Not a conditional expression: g++ 12 miscompiles co_await inside ?:.)
  Attempt a;
  if (w.tls) {
    a = co_await post_tls(w, req, deadline);
  } else {
    a = co_await post_plain(w, req, deadline);
  }
  w.busy = false;
  w.in_flight = nullptr;
  co_return a;
}

asio::awaitable<Attempt> Outputs::Impl::post_plain(SinkWorker& w, const http::request<http::string_body>& req,
                                                   Clock::time_point deadline) {
  Attempt a;
  auto results = co_await resolve(w, deadline, a);
  if (!results || hard_stop) co_return a;
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  w.in_flight = &stream;
  beast::error_code ec;
  stream.expires_at(deadline);
  co_await stream.async_connect(*results, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    w.in_flight = nullptr;
    co_return classify(ec, "connect");
  }
  stream.expires_at(deadline);
  co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    w.in_flight = nullptr;
    co_return classify(ec, "send");
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  stream.expires_at(deadline);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  w.in_flight = nullptr;
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (ec && !parser.is_header_done()) co_return classify(ec, "read response");
  co_return from_response(parser.get());
}

asio::awaitable<Attempt> Outputs::Impl::post_tls(SinkWorker& w, const http::request<http::string_body>& req,
                                                 Clock::time_point deadline) {
  Attempt a;
  auto results = co_await resolve(w, deadline, a);
  if (!results || hard_stop) co_return a;
  beast::ssl_stream<beast::tcp_stream> stream(co_await asio::this_coro::executor, *w.tls);
  auto& lower = beast::get_lowest_layer(stream);
  w.in_flight = &lower;
  std::string name = w.cfg.tls.server_name.empty() ? w.url.host : w.cfg.tls.server_name;
  beast::error_code addr_ec;
  asio::ip::make_address(name, addr_ec);
  bool is_ip = !addr_ec;  // SNI carries host names only (RFC 6066); an IP is still verified against the certificate
  if (!is_ip && !SSL_set_tlsext_host_name(stream.native_handle(), name.c_str())) {
    w.in_flight = nullptr;
    co_return Attempt{AttemptResult::tls_error, 0, "cannot set SNI " + name};
  }
  if (w.cfg.tls.verify) stream.set_verify_callback(ssl::host_name_verification(name));
  beast::error_code ec;
  lower.expires_at(deadline);
  co_await lower.async_connect(*results, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    w.in_flight = nullptr;
    co_return classify(ec, "connect");
  }
  lower.expires_at(deadline);
  co_await stream.async_handshake(ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    w.in_flight = nullptr;
    if (ec == beast::error::timeout) co_return classify(ec, "TLS handshake");
    std::string detail = "TLS handshake: " + ec.message();
    long verify = SSL_get_verify_result(stream.native_handle());
    if (verify != X509_V_OK) detail += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    co_return Attempt{AttemptResult::tls_error, 0, detail};
  }
  lower.expires_at(deadline);
  co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    w.in_flight = nullptr;
    co_return classify(ec, "send");
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  lower.expires_at(deadline);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  w.in_flight = nullptr;
  // No TLS close_notify exchange: the request is answered, and a peer that never replies would hold us to the
  // deadline. Closing the socket is enough for Connection: close.
  beast::error_code ignored;
  lower.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (ec && !parser.is_header_done()) co_return classify(ec, "read response");
  co_return from_response(parser.get());
}

}  // namespace faultline
