// The kernel log as a source: /dev/kmsg (one record per read, gaps counted as lost) or a file of kmsg-format
// records (lines; continuation lines skipped). Records become timed lines of one stream per boot; a restart skips
// the records the checkpoint says were processed.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "file_io.hpp"
#include "identity.hpp"
#include "source.hpp"

namespace faultline::tail {

namespace {

std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

Time boot_wall_time() {
  timespec rt{}, mono{};
  ::clock_gettime(CLOCK_REALTIME, &rt);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  auto ns = (static_cast<std::int64_t>(rt.tv_sec) - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
  return Time{Duration{ns}};
}

class KmsgSource final : public Source {
 public:
  KmsgSource(TailContext& ctx, const SourceSpec& spec, UniqueFd fd, std::string path)
      : ctx_(ctx), counters_(ctx.source_stats.of(source_label(spec))), fd_(std::move(fd)), path_(std::move(path)) {}

  // Opens the stream and says where it starts.
  void start(const SourceSpec& spec, const KmsgPosition* pos) {
    struct stat st;
    ::fstat(fd_.get(), &st);
    is_file_ = S_ISREG(st.st_mode);
    boot_id_ = is_file_ ? "file:" + path_ : read_boot_id();
    boot_ = boot_wall_time();
    stream_ = ctx_.streams.find_or_add(kmsg_identity(spec, ctx_.options.node_name, boot_id_), ContainerFormat::raw,
                                       *this);
    LogicalStream& s = ctx_.streams[stream_];
    StreamTable::open(s, ctx_.handler);
    s.had_file = true;
    if (pos && pos->valid && pos->boot_id == boot_id_) {
      skip_ = true;
      skip_through_ = pos->seq;
      last_seq_ = pos->seq;
      any_ = true;
      offset_ = pos->offset;
      line_ = pos->line;
      ctx_.handler.begin_file(s.handle, FileStart::resumed, s.identity, offset_, line_);
    } else {
      if (ctx_.first_start && spec.start_at == StartAt::end) {
        if (is_file_)
          file_offset_ = static_cast<std::uint64_t>(st.st_size);
        else
          ::lseek(fd_.get(), 0, SEEK_END);
      }
      ctx_.handler.begin_file(s.handle, FileStart::first, s.identity, 0, 1);
    }
  }

  SourceKind kind() const override { return SourceKind::kmsg; }
  int wait_fd() const override { return is_file_ ? -1 : fd_.get(); }

  bool read(std::size_t budget) override {
    LogicalStream& s = ctx_.streams[stream_];
    std::string out;
    bool more = false;
    if (is_file_) {
      std::string& buf = ctx_.read_buf;
      ssize_t n = ::pread(fd_.get(), buf.data(), std::min(buf.size(), budget), static_cast<off_t>(file_offset_));
      if (n > 0) {
        file_offset_ += static_cast<std::uint64_t>(n);
        carry_.append(buf.data(), static_cast<std::size_t>(n));
        std::size_t start = 0;
        while (true) {
          auto nl = carry_.find('\n', start);
          if (nl == std::string::npos) break;
          std::string_view rec(carry_.data() + start, nl - start);
          if (!rec.empty() && rec.front() != ' ') take(rec, out);
          start = nl + 1;
        }
        carry_.erase(0, start);
        more = static_cast<std::size_t>(n) == std::min(buf.size(), budget);
      }
    } else {
      char rec[16 * 1024];
      std::size_t total = 0;
      while (total < budget) {
        ssize_t n = ::read(fd_.get(), rec, sizeof rec - 1);
        if (n < 0) {
          if (errno == EINTR) continue;
          if (errno == EPIPE) continue;  // overwritten before we read it; the next read continues after the gap
          break;                         // EAGAIN: nothing more
        }
        if (n == 0) break;
        total += static_cast<std::size_t>(n);
        take(std::string_view(rec, static_cast<std::size_t>(n)), out);
      }
      more = total >= budget;
    }
    if (!out.empty()) {
      ctx_.stats.bytes += out.size();
      counters_.bytes += out.size();
      s.last_data = ctx_.clock.steady();
      ctx_.handler.data(s.handle, out, ctx_.clock.now());
    }
    return more;
  }

  void positions(TailPositions& out) override {
    if (!any_) return;
    out.kmsg.valid = true;
    out.kmsg.boot_id = boot_id_;
    out.kmsg.seq = last_seq_;
    out.kmsg.offset = offset_;
    out.kmsg.line = line_;
  }

 private:
  // One record: skipped when processed before the restart, else appended to `out` as a line.
  void take(std::string_view rec, std::string& out) {
    auto r = parse_kmsg_record(rec);
    if (!r) return;
    if (skip_ && r->seq <= skip_through_) return;
    skip_ = false;
    if (any_ && r->seq > last_seq_ + 1 && !is_file_) ctx_.stats.kmsg_lost += r->seq - last_seq_ - 1;
    last_seq_ = r->seq;
    any_ = true;
    ++ctx_.stats.kmsg_records;
    std::string line = format_kmsg_line(*r, boot_);
    line += '\n';
    offset_ += line.size();
    ++line_;
    out += line;
  }

  TailContext& ctx_;
  SourceTailStats& counters_;
  UniqueFd fd_;
  std::string path_;
  bool is_file_ = false;
  std::uint32_t stream_ = 0;
  std::string boot_id_;
  Time boot_{};
  std::uint64_t skip_through_ = 0;  // records with seq <= this were processed before a restart
  bool skip_ = false;
  std::uint64_t last_seq_ = 0;
  bool any_ = false;  // a record was processed (or the checkpoint says one was)
  std::uint64_t offset_ = 0, line_ = 1;  // of the synthetic stream (records are fed as lines)
  std::uint64_t file_offset_ = 0;
  std::string carry_;  // a file's partial last record
};

}  // namespace

std::unique_ptr<Source> open_kmsg_source(TailContext& ctx, const SourceSpec& spec, const KmsgPosition* restored) {
  std::string path = spec.paths.empty() ? "/dev/kmsg" : spec.paths.front();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (spec.optional)
      spdlog::info("kernel log {} not readable ({}); not following it", path, std::strerror(errno));
    else
      spdlog::error("cannot open kernel log {}: {}", path, std::strerror(errno));
    ++ctx.stats.unreadable;
    ++ctx.source_stats.of(source_label(spec)).unreadable;
    return nullptr;
  }
  auto source = std::make_unique<KmsgSource>(ctx, spec, std::move(fd), std::move(path));
  source->start(spec, restored);
  return source;
}

}  // namespace faultline::tail
