// The dispatcher: the pipeline thread only touches the bounded queue (submit) or hands a batch and waits for it
// (deliver); redaction, the store, the fan-out and the spool writes run on the io thread, so they need no locks. Each sink is isolated: what one throws is caught, what one fails is
// counted and logged, and the revision still goes to the others.
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include <algorithm>
#include <boost/asio.hpp>
#include <condition_variable>
#include <deque>
#include <set>
#include <spdlog/spdlog.h>

#include "faultline/io_thread.hpp"
#include "faultline/metrics.hpp"
#include "faultline/sinks.hpp"

namespace faultline {

std::vector<std::string> validate_delivery(const DispatcherOptions& options, const std::vector<SinkConfig>& sinks,
                                           const std::string& state_dir) {
  std::vector<std::string> errors;
  std::set<std::string> names;
  for (const auto& s : sinks) {
    for (auto& e : validate_sink(s)) errors.push_back(std::move(e));
    if (!names.insert(s.name).second) errors.push_back("sink '" + s.name + "': duplicate name");
  }
  if (!sinks.empty() && state_dir.empty()) errors.push_back("webhook sinks need a state directory for their spool");
  std::string err;
  if (!options.redactor && !Redactor::create(options.redaction, &err)) errors.push_back(err);
  if (options.queue_capacity == 0) errors.push_back("queue_capacity must be positive");
  return errors;
}

struct Dispatcher::Impl {
  Impl(DispatcherOptions o, IoThread& i, Metrics& m, IncidentStore& s)
      : opts(std::move(o)), io(i), metrics(m), store(s) {}

  struct Entry {
    std::unique_ptr<Sink> sink;
    std::atomic<std::uint64_t> delivered{0};
    std::atomic<std::uint64_t> failed{0};
  };

  DispatcherOptions opts;
  IoThread& io;
  Metrics& metrics;
  IncidentStore& store;
  std::shared_ptr<const Redactor> redactor;
  std::deque<Entry> sinks;  // a deque: entries hold atomics and never move

  // Pipeline-facing state.
  mutable std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Incident> queue;
  bool accepting = false;
  bool stopped = false;
  bool drain_posted = false;

  // Scrape-time state (used only inside the collect hook; Metrics runs hooks one at a time).
  std::size_t hook_id = 0;
  std::map<std::pair<std::string, Severity>, prometheus::Gauge*> active_gauges;

  // Revisions accepted by the store but not logged there yet: some sink still holds them in memory only.
  std::vector<std::string> unpersisted;
  std::atomic<std::size_t> backlog{0};  // the largest Sink::backlog() after the last batch

  std::vector<Incident> take_queue() {
    std::deque<Incident> taken;
    {
      std::lock_guard lock(qmu);
      taken.swap(queue);
      drain_posted = false;
      metrics.incident_queue_length().Set(0);
    }
    qcv.notify_all();
    return {std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end())};
  }

  void drain_queue() {
    auto batch = take_queue();
    if (batch.empty() && backlog.load() == 0) return;
    process(batch);
  }

  // One batch: redact, let the store deduplicate, let every sink take what it accepts, then one commit per sink.
  Dispatcher::Committed process(std::vector<Incident>& batch) {
    Dispatcher::Committed out;
    std::vector<std::string> fresh;  // ids the store took from this batch
    for (auto& incident : batch) {
      if (redactor) redactor->apply(incident);
      auto accepted = store.accept(incident, false);
      if (accepted == IncidentStore::Accept::duplicate) continue;  // already seen (a replay after restart)
      // A new incident is its first revision; a later one the store did not hold was let go by its bounds.
      if (accepted == IncidentStore::Accept::added && incident.revision == 1)
        metrics.incidents(incident.rule, incident.severity).Increment();
      fresh.push_back(incident.id);
      for (auto& e : sinks) {
        try {
          if (!e.sink->accepts(incident)) continue;
          if (auto r = e.sink->take(incident); r) {
            ++e.delivered;
          } else {
            ++e.failed;
            spdlog::error("sink {}: {}", e.sink->name(), r.error().message);
          }
        } catch (const std::exception& ex) {
          ++e.failed;
          spdlog::error("sink {}: unexpected error taking incident {}: {}", e.sink->name(), incident.id, ex.what());
        }
      }
    }
    std::size_t most = 0;
    for (auto& e : sinks) {
      try {
        if (auto r = e.sink->commit(); !r && out.error.empty()) out.error = r.error().message;
      } catch (const std::exception& ex) {
        if (out.error.empty()) out.error = "sink " + std::string(e.sink->name()) + ": " + ex.what();
      }
      most = std::max(most, e.sink->backlog());
    }
    backlog = most;
    out.backlog = most;
    out.durable = most == 0;
    for (auto& id : fresh) unpersisted.push_back(std::move(id));
    if (out.durable) {
      for (const auto& id : unpersisted) store.persist(id);
      unpersisted.clear();
    }
    return out;
  }

  void collect_active() {
    for (const auto& [key, n] : store.firing_counts()) {
      auto it = active_gauges.find(key);
      if (it == active_gauges.end()) it = active_gauges.emplace(key, &metrics.incidents_active(key.first, key.second)).first;
      it->second->Set(static_cast<double>(n));
    }
  }
};

Dispatcher::Dispatcher(DispatcherOptions options, IoThread& io, Metrics& metrics, IncidentStore& store)
    : impl_(std::make_unique<Impl>(std::move(options), io, metrics, store)) {}

Dispatcher::~Dispatcher() {
  stop(Duration::zero());
  if (impl_->hook_id) impl_->metrics.remove_collect_hook(impl_->hook_id);
}

void Dispatcher::add(std::unique_ptr<Sink> sink) { impl_->sinks.emplace_back().sink = std::move(sink); }

Result<void> Dispatcher::start() {
  auto& d = *impl_;
  std::string err;
  d.redactor = d.opts.redactor ? d.opts.redactor : Redactor::create(d.opts.redaction, &err);
  if (!d.redactor) return Error{err};
  if (!d.hook_id) d.hook_id = d.metrics.add_collect_hook([&d] { d.collect_active(); });
  std::lock_guard lock(d.qmu);
  if (!d.stopped) d.accepting = true;
  return {};
}

bool Dispatcher::submit(const Incident& incident) {
  auto& d = *impl_;
  d.metrics.observe_incident_latency(incident.read_at);
  std::unique_lock lock(d.qmu);
  d.qcv.wait(lock, [&] { return !d.accepting || d.queue.size() < 4 * d.opts.queue_capacity; });
  if (!d.accepting) return false;
  d.queue.push_back(incident);
  d.metrics.incident_queue_length().Set(static_cast<double>(d.queue.size()));
  if (!d.drain_posted) {
    d.drain_posted = true;
    d.io.post([&d] { d.drain_queue(); });
  }
  return true;
}

bool Dispatcher::backpressure() const {
  std::lock_guard lock(impl_->qmu);
  return impl_->queue.size() >= impl_->opts.queue_capacity || impl_->backlog.load() >= impl_->opts.queue_capacity;
}

bool Dispatcher::wait_for_space(Duration max) {
  auto& d = *impl_;
  std::unique_lock lock(d.qmu);
  auto room = [&] { return d.queue.size() < d.opts.queue_capacity && d.backlog.load() < d.opts.queue_capacity; };
  // A spool backlog shrinks only when the caller delivers again (a retry): waiting on it is bounded by `max`.
  return d.qcv.wait_for(lock, max, [&] { return !d.accepting || room(); }) && room();
}

Dispatcher::Committed Dispatcher::deliver(const std::vector<Incident>& batch) {
  auto& d = *impl_;
  Committed out;
  {
    std::lock_guard lock(d.qmu);
    if (!d.accepting) {
      out.durable = batch.empty();
      if (!out.durable) out.error = "the outputs are stopped";
      return out;
    }
  }
  for (const auto& incident : batch) d.metrics.observe_incident_latency(incident.read_at);
  d.io.run_sync([&] {
    auto all = d.take_queue();  // what was submitted before goes first
    all.insert(all.end(), batch.begin(), batch.end());
    out = d.process(all);
  });
  return out;
}

void Dispatcher::flush() {
  auto& d = *impl_;
  d.io.run_sync([&d] { d.drain_queue(); });
}

void Dispatcher::poke() {
  auto& d = *impl_;
  d.io.run_sync([&d] {
    for (auto& e : d.sinks) e.sink->poke();
  });
}

void Dispatcher::stop(Duration grace) {
  auto& d = *impl_;
  {
    std::lock_guard lock(d.qmu);
    if (d.stopped) return;
    d.stopped = true;
    d.accepting = false;
  }
  d.qcv.notify_all();
  // The shutdown grace is real time: it bounds how long the process takes to exit.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(grace);
  d.io.run_sync([&d] { d.drain_queue(); });  // spool what is queued
  for (auto& e : d.sinks) {
    auto left = std::max<Duration>(Duration::zero(), deadline - std::chrono::steady_clock::now());
    try {
      e.sink->stop(left);
    } catch (const std::exception& ex) {
      spdlog::error("sink {}: unexpected error while stopping: {}", e.sink->name(), ex.what());
    }
  }
}

std::vector<SinkStats> Dispatcher::stats() const {
  std::vector<SinkStats> out;
  for (const auto& e : impl_->sinks) out.push_back({std::string(e.sink->name()), e.delivered.load(), e.failed.load()});
  return out;
}

}  // namespace faultline
