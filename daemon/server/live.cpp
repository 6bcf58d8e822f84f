// The daemon's status for the page (routes.hpp): what it reads, how many incidents it holds, and a change marker; the
// same as Server-Sent Events, sent whenever something the page shows changed, so the page never reloads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "faultline/clock.hpp"
#include "routes.hpp"

namespace faultline::server_detail {
namespace {

struct Snapshot {
  std::uint64_t change = 0;  // the newest update's order in the view: grows with every update
  std::size_t total = 0;
  std::size_t firing = 0;
  std::size_t critical_firing = 0;
  ReadingActivity activity;
  bool ready = true;
  std::string not_ready;

  // What the page shows, but the time: a new event when this changes.
  std::string key() const {
    return std::to_string(change) + "/" + std::to_string(total) + "/" + std::to_string(activity.files) + "/" +
           std::to_string(activity.lines_read) + "/" + (ready ? "1" : "0") + not_ready;
  }
};

Snapshot take(const ApiContext& ctx) {
  Snapshot s;
  if (ctx.incidents) {
    IncidentQuery all;
    all.limit = std::numeric_limits<std::size_t>::max();
    for (const auto* item : ctx.incidents->query(all)) {
      s.change = std::max(s.change, item->order + 1);
      ++s.total;
      if (item->summary.status != IncidentStatus::firing) continue;
      ++s.firing;
      if (item->summary.severity == Severity::critical) ++s.critical_firing;
    }
  }
  if (ctx.activity) s.activity = ctx.activity();
  if (ctx.readiness) {
    for (const auto& item : ctx.readiness()) {
      if (item.ok) continue;
      s.ready = false;
      if (!s.not_ready.empty()) s.not_ready += "; ";
      s.not_ready += item.component + (item.detail.empty() ? "" : ": " + item.detail);
    }
  }
  return s;
}

std::string render(const ApiContext& ctx, const Snapshot& s, Time now) {
  nlohmann::ordered_json j;
  j["version"] = ctx.version;
  j["now"] = format_time(now);
  j["ready"] = s.ready;
  if (!s.ready) j["not_ready"] = sanitize_utf8(s.not_ready);
  nlohmann::ordered_json reading;
  reading["files"] = s.activity.files;
  reading["lines_read"] = s.activity.lines_read;
  if (s.activity.last_line) {
    reading["last_line"] = format_time(*s.activity.last_line);
    auto age = std::chrono::duration<double>(now - *s.activity.last_line).count();
    reading["last_line_age_seconds"] = std::max(0.0, std::floor(age * 10) / 10);
  } else {
    reading["last_line"] = nullptr;
    reading["last_line_age_seconds"] = nullptr;
  }
  j["reading"] = std::move(reading);
  nlohmann::ordered_json incidents;
  incidents["total"] = s.total;
  incidents["firing"] = s.firing;
  incidents["critical_firing"] = s.critical_firing;
  j["incidents"] = std::move(incidents);
  j["change"] = s.change;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Time now_of(const ApiContext& ctx) {
  return (ctx.clock ? *ctx.clock : static_cast<const Clock&>(SystemClock::instance())).now();
}

}  // namespace

std::string status_json(const ApiContext& context, Time now) { return render(context, take(context), now); }

HttpResponse status_response(const ApiContext& context, Time now) {
  return json_response(200, status_json(context, now));
}

HttpResponse event_stream(const ApiContext& context) {
  HttpResponse r;
  r.content_type = "text/event-stream; charset=utf-8";
  Snapshot first = take(context);
  // retry: how long a browser waits before it reconnects once the stream ends.
  r.body = "retry: 2000\n\nevent: status\ndata: " + render(context, first, now_of(context)) + "\n\n";
  r.stream = std::make_shared<EventStream>();
  r.stream->next = [ctx = &context, last = first.key(), quiet = 0]() mutable -> std::string {
    Snapshot s = take(*ctx);
    auto key = s.key();
    if (key != last) {
      last = std::move(key);
      quiet = 0;
      return "event: status\ndata: " + render(*ctx, s, now_of(*ctx)) + "\n\n";
    }
    // A comment now and then: a proxy keeps the stream open, and a client that went away is noticed.
    if (++quiet % 30 == 0) return ": keep-alive\n\n";
    return {};
  };
  return r;
}

}  // namespace faultline::server_detail
