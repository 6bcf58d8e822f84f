// The Tailer: the scheduler over its sources. Each poll_once() lets every source look for work (inotify events,
// rescans), reads standard input and the kernel log, then reads the active file streams round robin within the
// reading budget, and finally moves streams on to their next file, signals partial-line timeouts and drops streams
// with nothing left to do from the active list. What a source is: source.hpp; the files kind: file_source.hpp.
#include <algorithm>
#include <map>

#include "faultline/tail.hpp"
#include "file_source.hpp"
#include "identity.hpp"
#include "source.hpp"

namespace faultline {

using tail::LogicalStream;
using tail::Source;
using tail::Steady;

std::string_view to_string(StartAt start) { return start == StartAt::beginning ? "beginning" : "end"; }

std::optional<StartAt> parse_start_at(std::string_view text) {
  if (text == "beginning") return StartAt::beginning;
  if (text == "end") return StartAt::end;
  return std::nullopt;
}

std::string_view to_string(FileStart start) {
  switch (start) {
    case FileStart::first: return "first";
    case FileStart::resumed: return "resumed";
    case FileStart::rotated: return "rotated";
    case FileStart::new_instance: return "new_instance";
    case FileStart::truncated: return "truncated";
  }
  return "?";
}

struct Tailer::Impl {
  TailOptions options;
  tail::TailContext ctx;
  std::vector<SourceSpec> specs;               // as configured
  std::vector<std::unique_ptr<Source>> sources;  // by kind: files, stdin, kmsg
  tail::FileSource* files = nullptr;  // always there (its rescan also gives every stream a look now and then)
  Source* stdin_source = nullptr;
  std::optional<Steady> timers_deadline;  // of the streams' timers, as of the end of the last poll_once()
  std::size_t cursor = 0;                 // round-robin start among the active streams
  // lag_by_source(), until a file's size, offset or state changes.
  std::vector<std::pair<std::string, std::uint64_t>> lag_cache;

  Impl(TailOptions o, Clock& clock, TailHandler& handler) : options(std::move(o)), ctx(options, clock, handler) {
    auto f = std::make_unique<tail::FileSource>(ctx);
    files = f.get();
    sources.push_back(std::move(f));
  }

  void restore(const TailPositions* restored) {
    ctx.first_start = restored == nullptr;
    files->restore(restored);
    bool kmsg_open = false;
    for (const auto& spec : specs) {
      if (spec.kind == SourceKind::stdin_stream && !stdin_source) {
        sources.push_back(tail::open_stdin_source(ctx, spec));
        stdin_source = sources.back().get();
      } else if (spec.kind == SourceKind::kmsg && !kmsg_open) {
        if (auto kmsg = tail::open_kmsg_source(ctx, spec, restored ? &restored->kmsg : nullptr)) {
          sources.push_back(std::move(kmsg));
          kmsg_open = true;
        }
      }
    }
    std::stable_sort(sources.begin(), sources.end(),
                     [](const auto& a, const auto& b) { return a->kind() < b->kind(); });
  }

  bool poll_once() {
    if (ctx.stopped) return false;
    for (auto& source : sources) source->prepare();
    std::size_t budget = options.max_bytes_per_poll;
    bool more = false;
    for (auto& source : sources)
      if (source->kind() != SourceKind::files) more |= source->read(budget / 4 + 1);
    // Round-robin over the active streams with bytes ready; each gets a fair share of the budget per pass.
    auto& active = ctx.streams.active();
    const std::size_t n = active.size();
    if (n > 0) {
      std::size_t share = std::max<std::size_t>(options.read_chunk_bytes, budget / ctx.streams.size());
      for (std::size_t i = 0; i < n && budget > 0 && !ctx.stopped; ++i) {
        LogicalStream& s = ctx.streams[active[(cursor + i) % n]];
        if (!s.source->ready(s)) continue;
        budget -= s.source->read_stream(s, std::min(share, budget));
      }
      cursor = (cursor + 1) % n;
    }
    // Rotation, partial-line timeouts and the next deadline; streams with nothing left to do leave the active list.
    Steady after = ctx.clock.steady();
    timers_deadline.reset();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::uint32_t index = active[i];
      LogicalStream& s = ctx.streams[index];
      s.source->settle(s, after);
      if (s.source->ready(s)) more = true;
      if (!s.idle_sent && after - s.last_data >= options.partial_timeout) {
        s.idle_sent = true;
        ctx.handler.idle(s.handle, ctx.clock.now());
      }
      // The streams change only in poll_once: next_timeout() reuses this.
      s.source->deadline(s, timers_deadline);
      if (!s.idle_sent) {
        Steady t = s.last_data + tail::to_steady(options.partial_timeout);
        if (!timers_deadline || t < *timers_deadline) timers_deadline = t;
      }
      if (s.idle_sent && s.source->quiet(s))
        s.active = false;
      else
        active[kept++] = index;
    }
    active.resize(kept);
    return more && !ctx.stopped;
  }

  std::chrono::milliseconds next_timeout() const {
    using namespace std::chrono;
    Steady now = ctx.clock.steady();
    std::optional<Steady> deadline = timers_deadline;
    for (const auto& source : sources)
      if (auto due = source->due(); due && (!deadline || *due < *deadline)) deadline = due;
    if (!deadline) return duration_cast<milliseconds>(options.rescan_interval);
    if (*deadline <= now) return milliseconds(0);
    return duration_cast<milliseconds>(*deadline - now) + milliseconds(1);
  }
};

Tailer::Tailer(TailOptions options, Clock& clock, TailHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), clock, handler)) {}
Tailer::~Tailer() = default;

void Tailer::add_source(SourceSpec source) {
  impl_->ctx.source_stats.of(tail::source_label(source));
  if (source.kind == SourceKind::files) impl_->files->add_spec(source);
  impl_->specs.push_back(std::move(source));
}

void Tailer::restore(const TailPositions* restored) { impl_->restore(restored); }

std::vector<int> Tailer::wait_fds() const {
  std::vector<int> fds;
  for (const auto& source : impl_->sources)
    if (int fd = source->wait_fd(); fd >= 0) fds.push_back(fd);
  return fds;
}

bool Tailer::poll_once() { return impl_->poll_once(); }
std::chrono::milliseconds Tailer::next_timeout() const { return impl_->next_timeout(); }
void Tailer::stop() { impl_->ctx.stopped = true; }

TailPositions Tailer::positions() {
  TailPositions out;
  for (auto& source : impl_->sources) source->positions(out);
  return out;
}

const std::vector<std::pair<std::string, std::uint64_t>>& Tailer::lag_by_source() const {
  if (!impl_->ctx.lag_stale) return impl_->lag_cache;
  std::map<std::string, std::uint64_t> lag;
  for (const auto& spec : impl_->specs) lag[tail::source_label(spec)] = 0;
  impl_->files->add_lag(lag);
  impl_->lag_cache.assign(lag.begin(), lag.end());
  impl_->ctx.lag_stale = false;
  return impl_->lag_cache;
}

bool Tailer::stdin_finished() const { return impl_->stdin_source && impl_->stdin_source->ended(); }
bool Tailer::has_file_sources() const {
  for (const auto& s : impl_->specs)
    if (s.kind != SourceKind::stdin_stream) return true;
  return false;
}
const TailStats& Tailer::stats() const { return impl_->ctx.stats; }
std::vector<SourceTailStats> Tailer::source_stats() const { return impl_->ctx.source_stats.list(); }

}  // namespace faultline
