// A webhook sink: its spool, its delivery loop on the io thread, its backoff and its metrics. The payload format
// (sinks_internal.hpp) says what a delivery looks like; the HTTP client (http_client.hpp) carries it.
//
// The loop: expire what is too old, take the oldest spooled delivery, attempt it (one connection per attempt, one
// deadline over the whole attempt), remove it on 2xx, otherwise back off (exponential, ±20% jitter) and try the same
// delivery again — deliveries to one sink stay in order, and sinks never wait for each other. With nothing pending,
// a payload with a refresh interval (Alertmanager) re-sends what is firing.
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include <boost/asio.hpp>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <spdlog/spdlog.h>

#include "faultline/http_client.hpp"
#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/secrets.hpp"
#include "faultline/sinks.hpp"
#include "sinks_internal.hpp"

namespace faultline {
namespace {

namespace asio = boost::asio;

std::int64_t unix_ms(Time t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count(); }

// The one place an attempt's outcome becomes a metric.
prometheus::Counter& counter_for(SinkMetrics& m, PostOutcome outcome) {
  switch (outcome) {
    case PostOutcome::success: return m.success;
    case PostOutcome::http_error: return m.http_error;
    case PostOutcome::network_error: return m.network_error;
    case PostOutcome::timeout: return m.timeout;
    case PostOutcome::tls_error: return m.tls_error;
  }
  return m.network_error;
}

class WebhookSink final : public Sink {
 public:
  WebhookSink(SinkConfig config, const WebhookContext& context, std::unique_ptr<sinks_detail::Payload> payload,
              std::unique_ptr<HttpClient> client)
      : cfg_(std::move(config)),
        io_(context.io),
        metrics_(context.metrics),
        m_(context.metrics.sink(cfg_.name)),
        clock_(context.clock),
        max_sent_(4 * context.max_incidents + 64),
        payload_(std::move(payload)),
        client_(std::move(client)),
        spool_(context.spool_root + "/" + cfg_.name, cfg_.spool_max_bytes, cfg_.spool_max_age),
        wake_(context.io.context()),
        rng_(std::random_device{}()) {}

  ~WebhookSink() override {
    stop(Duration::zero());
    if (hook_id_) metrics_.remove_collect_hook(hook_id_);
  }

  Result<void> open() {
    SpoolDrops drops;
    if (auto opened = spool_.open(&drops); !opened) return Error{"sink '" + cfg_.name + "': " + opened.error().message};
    if (!spool_.empty())
      spdlog::info("sink {}: {} pending deliveries resume from the spool", cfg_.name, spool_.size());
    record_drops(drops);
    refresh_gauges();
    // Scrape-time gauge: the age of the oldest pending delivery.
    hook_id_ = metrics_.add_collect_hook([this] {
      auto o = oldest_ms_.load();
      auto now = unix_ms(clock_.now());
      m_.spool_oldest_pending_seconds.Set(o > 0 ? std::max<double>(0, static_cast<double>(now - o) / 1000.0) : 0);
    });
    return {};
  }

  void spawn() {
    {
      std::lock_guard lock(mu_);
      running_ = true;
    }
    asio::co_spawn(io_.context(), run(), asio::detached);
  }

  std::string_view name() const override { return cfg_.name; }

  bool accepts(const Incident& incident) const override {
    return sink_accepts(cfg_, incident, sent_ids_.count(incident.id) != 0);
  }

  Result<void> deliver(const Incident& incident) override {
    if (auto taken = take(incident); !taken) return taken;
    return commit();
  }

  Result<void> take(const Incident& incident) override {
    unspooled_.push_back(SpoolItem{incident.id, incident.revision, to_json(incident)});
    if (sent_ids_.size() > max_sent_) sent_ids_.clear();
    sent_ids_.insert(incident.id);
    return {};
  }

  // Everything taken, in order, in one spool file. On failure all of it stays in memory for the next commit, in
  // front of whatever is taken meanwhile.
  Result<void> commit() override {
    if (unspooled_.empty()) return {};
    SpoolDrops drops;
    std::string err;
    auto r = spool_.put_batch(unspooled_, unix_ms(clock_.now()), &drops, &err);
    record_drops(drops);
    refresh_gauges();
    if (r == Spool::PutResult::failed) {
      metrics_.state_write_failures("spool").Increment();
      if (!write_failing_)
        spdlog::error("sink {}: {}; {} deliveries kept in memory, retried", cfg_.name, err, unspooled_.size());
      write_failing_ = true;
      return Error{"sink " + cfg_.name + ": " + err};
    }
    if (write_failing_)
      spdlog::info("sink {}: spool written again ({} deliveries kept in memory meanwhile)", cfg_.name,
                   unspooled_.size());
    write_failing_ = false;
    unspooled_.clear();
    wake();
    return {};
  }

  std::size_t backlog() const override { return unspooled_.size(); }

  void poke() override {
    if (!in_backoff_) wake_.cancel();
  }

  void stop(Duration grace) override {
    if (!io_.running()) return;  // the loop never ran, or the io thread is gone
    {
      std::lock_guard lock(mu_);
      if (!running_) return;
    }
    // run_sync, not post: nothing of ours may still be queued on the io thread when this returns.
    io_.run_sync([this] {
      soft_stop_ = true;
      wake_.cancel();
    });
    std::unique_lock lock(mu_);
    if (done_.wait_for(lock, grace, [this] { return !running_; })) return;
    lock.unlock();
    io_.run_sync([this] {
      hard_stop_ = true;
      wake_.cancel();
      client_->cancel();
    });
    lock.lock();
    done_.wait(lock, [this] { return !running_; });
  }

 private:
  void wake() {
    if (!in_backoff_ || soft_stop_) wake_.cancel();
  }

  void record_drops(const SpoolDrops& d) {
    for (const auto& e : d.spool_full)
      spdlog::warn("sink {}: spool full, dropped delivery {}", cfg_.name, e.delivery_id);
    for (const auto& e : d.max_age) spdlog::warn("sink {}: delivery {} expired undelivered", cfg_.name, e.delivery_id);
    for (const auto& f : d.corrupt) spdlog::warn("sink {}: dropped unreadable spool file {}", cfg_.name, f);
    m_.dropped_spool_full.Increment(static_cast<double>(d.spool_full.size()));
    m_.dropped_max_age.Increment(static_cast<double>(d.max_age.size()));
    m_.dropped_corrupt.Increment(static_cast<double>(d.corrupt.size()));
  }

  void refresh_gauges() {
    m_.spool_bytes.Set(static_cast<double>(spool_.bytes()));
    oldest_ms_ = spool_.oldest_ms().value_or(0);
  }

  asio::awaitable<PostResult> post(sinks_detail::Delivery d) {
    PostRequest req;
    req.headers = cfg_.headers;
    if (!cfg_.bearer_token_file.empty()) {
      if (auto t = read_secret_file(cfg_.bearer_token_file)) req.headers.emplace_back("Authorization", "Bearer " + *t);
      else spdlog::error("sink {}: cannot read bearer_token_file {}", cfg_.name, cfg_.bearer_token_file);
    }
    for (auto& h : d.headers) req.headers.push_back(std::move(h));
    req.body = std::move(d.body);
    auto a = co_await client_->post(std::move(req), cfg_.timeout);
    if (!hard_stop_) counter_for(m_, a.outcome).Increment();
    co_return a;
  }

  Duration backoff(std::uint32_t failures) {
    auto base = std::chrono::duration<double>(cfg_.backoff_initial).count() *
                std::pow(2.0, std::min<std::uint32_t>(failures - 1, 30));
    base = std::min(base, std::chrono::duration<double>(cfg_.backoff_max).count());
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(base * jitter(rng_)));
  }

  asio::awaitable<void> sleep(Duration d) {
    wake_.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(d));
    boost::system::error_code ec;
    co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  asio::awaitable<void> run() {
    std::uint32_t failures = 0;
    const Duration refresh_every = payload_->refresh_interval();
    while (!hard_stop_) {
      SpoolDrops drops;
      spool_.expire(unix_ms(clock_.now()), &drops);
      auto item = spool_.front(&drops);
      record_drops(drops);
      refresh_gauges();

      if (item) {
        auto& [entry, body] = *item;
        auto delivery = payload_->render(entry, std::move(body), clock_.now());
        if (!delivery) {
          spdlog::warn("sink {}: spooled delivery {} is not a valid incident; dropped", cfg_.name, entry.delivery_id);
          m_.dropped_corrupt.Increment();
          spool_.remove(entry);
          continue;
        }
        if (failures > 0) m_.retries.Increment();
        auto a = co_await post(std::move(*delivery));
        if (hard_stop_) break;
        if (a.outcome == PostOutcome::success) {
          spool_.remove(entry);
          refresh_gauges();
          failures = 0;
          head_rejections_ = 0;
          continue;
        }
        bool payload_refused = a.status == 400 || a.status == 413 || a.status == 422;
        if (payload_refused && ++head_rejections_ >= 3) {
          spdlog::error("sink {}: receiver refused delivery {} three times ({}); dropped", cfg_.name,
                        entry.delivery_id, a.detail);
          m_.dropped_rejected.Increment();
          spool_.remove(entry);
          refresh_gauges();
          head_rejections_ = 0;
          continue;
        }
        if (!payload_refused) head_rejections_ = 0;
        ++failures;
        auto delay = backoff(failures);
        if (failures == 1 || failures % 10 == 0)
          spdlog::warn("sink {}: delivery {} failed ({}: {}); retry {} in {:.1f}s", cfg_.name, entry.delivery_id,
                       to_string(a.outcome), a.detail, failures, std::chrono::duration<double>(delay).count());
        if (soft_stop_) break;  // shutting down: what is left stays spooled for the next start
        in_backoff_ = true;
        co_await sleep(delay);
        in_backoff_ = false;
        continue;
      }

      if (soft_stop_) break;
      // Nothing pending: re-send what is firing when it is due.
      if (refresh_every > Duration::zero() && clock_.steady() >= next_refresh_) {
        next_refresh_ = clock_.steady() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(refresh_every);
        auto taken = [this](const Incident& i) { return sink_accepts(cfg_, i, sent_ids_.count(i.id) != 0); };
        if (auto d = payload_->refresh(clock_.now(), taken)) {
          auto n = d->items;
          auto a = co_await post(std::move(*d));
          if (hard_stop_) break;
          if (a.outcome != PostOutcome::success)
            spdlog::warn("sink {}: refreshing {} firing alerts failed ({}: {})", cfg_.name, n, to_string(a.outcome),
                         a.detail);
        }
        continue;
      }
      // Asleep until a delivery arrives, stop, or the next refresh (a span of the injected clock, slept in real time).
      if (refresh_every > Duration::zero()) co_await sleep(next_refresh_ - clock_.steady());
      else co_await sleep(std::chrono::hours(24 * 365));
    }
    std::lock_guard lock(mu_);
    running_ = false;
    done_.notify_all();
  }

  SinkConfig cfg_;
  IoThread& io_;
  Metrics& metrics_;
  SinkMetrics& m_;
  const Clock& clock_;
  std::size_t max_sent_;
  std::unique_ptr<sinks_detail::Payload> payload_;
  std::unique_ptr<HttpClient> client_;
  Spool spool_;
  asio::steady_timer wake_;  // the loop sleeps on it; cancelled when work arrives or on stop
  std::mt19937_64 rng_;
  std::set<std::string> sent_ids_;  // incidents with a revision taken by this sink (in this process)
  std::vector<SpoolItem> unspooled_;  // taken, not durable yet: the spool write failed (a full disk); in order
  bool write_failing_ = false;
  std::atomic<std::int64_t> oldest_ms_{0};
  std::size_t hook_id_ = 0;
  std::chrono::steady_clock::time_point next_refresh_{};
  std::uint32_t head_rejections_ = 0;  // consecutive 400/413/422 answers for the delivery at the head
  bool in_backoff_ = false;
  bool soft_stop_ = false;  // the loop exits once its spool is empty (or at the next failure)
  bool hard_stop_ = false;  // the loop exits now
  std::mutex mu_;
  std::condition_variable done_;
  bool running_ = false;  // the loop coroutine is alive (guarded by mu_)
};

}  // namespace

Result<std::unique_ptr<Sink>> make_webhook_sink(const SinkConfig& config, const WebhookContext& context) {
  std::string err;
  auto url = parse_url(config.url, &err);
  if (!url) return Error{"sink '" + config.name + "': " + err};
  auto payload = config.format == WebhookFormat::alertmanager
                     ? sinks_detail::make_alertmanager_payload(config, context.external_url, context.incidents)
                     : sinks_detail::make_standard_webhooks_payload(config);
  url->target = payload->target(url->target);
  auto client = HttpClient::create(*url, config.tls, "faultline/" + context.version);
  if (!client) return Error{"sink '" + config.name + "': " + client.error().message};
  auto sink = std::make_unique<WebhookSink>(config, context, std::move(payload), std::move(*client));
  if (auto opened = sink->open(); !opened) return opened.error();
  sink->spawn();
  return std::unique_ptr<Sink>(std::move(sink));
}

}  // namespace faultline
