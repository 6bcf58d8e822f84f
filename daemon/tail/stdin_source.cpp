// Standard input as a source: one stream, read while poll() says there is something, ended at EOF.
#include <poll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "identity.hpp"
#include "source.hpp"

namespace faultline::tail {

namespace {

class StdinSource final : public Source {
 public:
  StdinSource(TailContext& ctx, const SourceSpec& spec)
      : ctx_(ctx), counters_(ctx.source_stats.of(source_label(spec))) {
    stream_ = ctx_.streams.find_or_add(stdin_identity(spec, ctx_.options.node_name), spec.format, *this);
    LogicalStream& s = ctx_.streams[stream_];
    StreamTable::open(s, ctx_.handler);
    s.had_file = true;
    ctx_.handler.begin_file(s.handle, FileStart::first, s.identity, 0, 1);
  }

  SourceKind kind() const override { return SourceKind::stdin_stream; }
  int wait_fd() const override { return eof_ ? -1 : 0; }
  bool ended() const override { return eof_; }

  bool read(std::size_t budget) override {
    if (eof_) return false;
    LogicalStream& s = ctx_.streams[stream_];
    std::string& buf = ctx_.read_buf;
    std::size_t total = 0;
    while (total < budget) {
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
      ssize_t n = ::read(0, buf.data(), std::min(buf.size(), budget - total));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) return false;
        spdlog::warn("cannot read standard input: {}", std::strerror(errno));
        n = 0;
      }
      if (n == 0) {
        eof_ = true;
        ctx_.handler.end_of_stream(s.handle, ctx_.clock.now());
        s.idle_sent = true;
        return false;
      }
      total += static_cast<std::size_t>(n);
      ctx_.stats.bytes += static_cast<std::uint64_t>(n);
      counters_.bytes += static_cast<std::uint64_t>(n);
      s.last_data = ctx_.clock.steady();
      s.idle_sent = false;
      ctx_.streams.activate(stream_);
      ctx_.handler.data(s.handle, std::string_view(buf.data(), static_cast<std::size_t>(n)), ctx_.clock.now());
      if (ctx_.stopped) return false;
    }
    return true;
  }

 private:
  TailContext& ctx_;
  SourceTailStats& counters_;
  std::uint32_t stream_ = 0;
  bool eof_ = false;
};

}  // namespace

std::unique_ptr<Source> open_stdin_source(TailContext& ctx, const SourceSpec& spec) {
  return std::make_unique<StdinSource>(ctx, spec);
}

}  // namespace faultline::tail
