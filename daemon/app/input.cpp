#include "input.hpp"

#include "faultline/clock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

namespace faultline::app {

namespace {

constexpr std::size_t kBuffer = 1u << 20;    // read() at a time otherwise
constexpr std::size_t kDecompressed = 4u << 20;  // decompressed bytes handed out at a time
constexpr std::size_t kMagic = 6;             // bytes that tell the encoding (xz's magic is the longest)

bool starts_with(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && bytes.compare(0, magic.size(), magic) == 0;
}

// A stored format that scan cannot decompress: named, so the input is an error and not "no lines".
const char* unreadable_format(std::string_view head) {
  using namespace std::string_view_literals;
  if (starts_with(head, "\xfd" "7zXZ\x00"sv)) return "xz";
  if (starts_with(head, "BZh"sv) && head.size() > 3 && head[3] >= '1' && head[3] <= '9') return "bzip2";
  if (starts_with(head, "PK\x03\x04"sv)) return "zip";
  if (starts_with(head, "\x04\x22\x4d\x18"sv)) return "lz4";
  return nullptr;
}

// Bytes that start a compressed file, readable or not: such a file goes through ScanInput, which decompresses it or
// names its format as the error.
bool stored_compressed(std::string_view head) {
  using namespace std::string_view_literals;
  return unreadable_format(head) != nullptr || starts_with(head, "\x1f\x8b"sv) || starts_with(head, "\x28\xb5\x2f\xfd"sv);
}

// A mapped file that another process truncates makes reading past its new end raise SIGBUS. That is reported as
// what it is, not as a crash.
void on_sigbus(int) {
  static constexpr char kMsg[] =
      "faultline scan: an input file shrank while it was being read (truncated by another process); scan it again\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  ::_exit(2);
}

void install_sigbus_handler() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

}  // namespace

std::string_view to_string(InputEncoding encoding) {
  switch (encoding) {
    case InputEncoding::plain: return "plain";
    case InputEncoding::gzip: return "gzip";
    case InputEncoding::zstd: return "zstd";
  }
  return "plain";
}

// One compressed stream: takes input bytes, gives output bytes. Concatenated members (gzip) and frames (zstd) are one
// stream, as gzip -dc and zstd -dc read them.
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  // Decompresses from `in` (advanced past what was taken) into `out`; returns the bytes written, or sets `error`.
  virtual std::size_t run(std::string_view& in, char* out, std::size_t capacity, std::string& error) = 0;
  // The input ended: whether it ended at the end of a member or frame (else it was cut short).
  virtual bool complete() const = 0;
};

namespace {

class GzipDecompressor final : public Decompressor {
 public:
  GzipDecompressor() {
    // 15 + 32: a window of 32 KiB, gzip or zlib header detected.
    ok_ = ::inflateInit2(&z_, 15 + 32) == Z_OK;
  }
  ~GzipDecompressor() override {
    if (ok_) ::inflateEnd(&z_);
  }
  GzipDecompressor(const GzipDecompressor&) = delete;
  GzipDecompressor& operator=(const GzipDecompressor&) = delete;

  std::size_t run(std::string_view& in, char* out, std::size_t capacity, std::string& error) override {
    if (!ok_) {
      error = "cannot start zlib";
      return 0;
    }
    std::size_t written = 0;
    // With no input left, zlib may still hold output that did not fit last time: call until it makes no progress.
    while (written < capacity) {
      if (member_ended_ && in.empty()) break;
      if (member_ended_) {
        // Another member follows (gzip file1 file2 > both.gz), or padding of zeros some tools leave.
        if (in.find_first_not_of('\0') == std::string_view::npos) {
          in = {};
          break;
        }
        ::inflateReset(&z_);
        member_ended_ = false;
      }
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z_.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), 1u << 30));
      z_.next_out = reinterpret_cast<Bytef*>(out + written);
      z_.avail_out = static_cast<uInt>(capacity - written);
      const uInt before_in = z_.avail_in;
      const uInt before_out = z_.avail_out;
      int rc = ::inflate(&z_, Z_NO_FLUSH);
      in.remove_prefix(before_in - z_.avail_in);
      written += before_out - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
        continue;
      }
      if (rc == Z_BUF_ERROR || (before_in == z_.avail_in && before_out == z_.avail_out)) break;  // needs more input
      if (rc != Z_OK) {
        error = std::string("corrupt gzip data: ") + (z_.msg ? z_.msg : "inflate failed");
        return written;
      }
    }
    return written;
  }
  bool complete() const override { return member_ended_; }

 private:
  z_stream z_{};
  bool ok_ = false;
  bool member_ended_ = false;
};

class ZstdDecompressor final : public Decompressor {
 public:
  ZstdDecompressor() : z_(::ZSTD_createDStream()) {}
  ~ZstdDecompressor() override { ::ZSTD_freeDStream(z_); }
  ZstdDecompressor(const ZstdDecompressor&) = delete;
  ZstdDecompressor& operator=(const ZstdDecompressor&) = delete;

  std::size_t run(std::string_view& in, char* out, std::size_t capacity, std::string& error) override {
    if (z_ == nullptr) {
      error = "cannot start zstd";
      return 0;
    }
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out, capacity, 0};
    // With no input left, zstd may still hold output that did not fit last time: call until it makes no progress.
    while (output.pos < output.size) {
      const std::size_t in_before = input.pos, out_before = output.pos;
      const std::size_t rc = ::ZSTD_decompressStream(z_, &output, &input);
      if (::ZSTD_isError(rc)) {
        error = std::string("corrupt zstd data: ") + ::ZSTD_getErrorName(rc);
        break;
      }
      if (input.pos == in_before && output.pos == out_before) break;  // (rc then only hints at the next frame)
      frame_ended_ = rc == 0;
    }
    in.remove_prefix(input.pos);
    return output.pos;
  }
  bool complete() const override { return frame_ended_; }

 private:
  ZSTD_DStream* z_;
  bool frame_ended_ = false;
};

}  // namespace

ScanInput::ScanInput(const std::string& path, std::size_t window) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  window_size_ = std::max<std::size_t>(1, (window + page - 1) / page) * page;
  if (path == "-") {
    fd_ = STDIN_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = std::strerror(errno);
      return;
    }
    owns_fd_ = true;
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    mapped_ = true;
    size_ = static_cast<std::size_t>(st.st_size);
    install_sigbus_handler();
  }
}

ScanInput::~ScanInput() {
  unmap();
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

void ScanInput::unmap() {
  if (window_ != nullptr) ::munmap(window_, window_len_);
  window_ = nullptr;
  window_len_ = 0;
}

bool ScanInput::next_raw(std::string_view& piece) {
  if (!ok()) return false;
  if (mapped_) {
    unmap();
    if (offset_ < size_) {
      // Only what the file still holds is mapped: a file that shrank since it was opened ends early.
      struct stat st {};
      if (::fstat(fd_, &st) == 0) size_ = std::min(size_, static_cast<std::size_t>(st.st_size));
    }
    if (offset_ >= size_) return false;
    const std::size_t len = std::min(window_size_, size_ - offset_);
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, static_cast<off_t>(offset_));
    if (p == MAP_FAILED) {
      // Not mappable after all (some file systems): read the rest.
      mapped_ = false;
      if (::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET) < 0) {
        error_ = std::strerror(errno);
        return false;
      }
      return next_raw(piece);
    }
    ::madvise(p, len, MADV_SEQUENTIAL);
    window_ = p;
    window_len_ = len;
    offset_ += len;
    piece = std::string_view(static_cast<const char*>(p), len);
    return true;
  }
  buffer_.resize(kBuffer);
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n > 0) {
      offset_ += static_cast<std::size_t>(n);
      piece = std::string_view(buffer_.data(), static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    error_ = std::strerror(errno);
    return false;
  }
}

bool ScanInput::next(std::string_view& piece) {
  if (!sniffed_) return sniff(piece);
  if (decompressor_) return next_decompressed(piece);
  return next_raw(piece);
}

bool ScanInput::sniff(std::string_view& piece) {
  sniffed_ = true;
  std::string_view first;
  if (!next_raw(first)) return false;
  // A pipe may hand out fewer bytes than the magic at first: gather them.
  if (first.size() < kMagic) {
    head_.assign(first);
    std::string_view more;
    while (head_.size() < kMagic && next_raw(more)) head_.append(more);
    if (!ok()) return false;
    first = head_;
  }
  if (const char* format = unreadable_format(first)) {
    error_ = std::string(format) + "-compressed input: scan reads plain, gzip and zstd logs (decompress it first: " +
             (std::string_view(format) == "xz"      ? "xz -dc"
              : std::string_view(format) == "bzip2" ? "bzip2 -dc"
              : std::string_view(format) == "lz4"   ? "lz4 -dc"
                                                    : "unzip -p") +
             " FILE | faultline scan -)";
    return false;
  }
  using namespace std::string_view_literals;
  if (starts_with(first, "\x1f\x8b"sv)) {
    encoding_ = InputEncoding::gzip;
    decompressor_ = std::make_unique<GzipDecompressor>();
  } else if (starts_with(first, "\x28\xb5\x2f\xfd"sv)) {
    encoding_ = InputEncoding::zstd;
    decompressor_ = std::make_unique<ZstdDecompressor>();
  }
  if (!decompressor_) {
    piece = first;
    return !first.empty() || next_raw(piece);
  }
  pending_ = first;
  return next_decompressed(piece);
}

bool ScanInput::next_decompressed(std::string_view& piece) {
  decompressed_.resize(kDecompressed);
  while (ok()) {
    if (pending_.empty() && !raw_ended_) {
      if (!next_raw(pending_)) {
        raw_ended_ = true;
        if (!ok()) return false;
      }
    }
    const std::size_t n = decompressor_->run(pending_, decompressed_.data(), decompressed_.size(), error_);
    if (!error_.empty()) error_ = std::string(to_string(encoding_)) + " input: " + error_;
    if (n > 0) {
      piece = std::string_view(decompressed_.data(), n);
      return true;  // an error after these bytes shows at the next call
    }
    if (!ok()) return false;
    if (raw_ended_ && pending_.empty()) {
      if (!decompressor_->complete()) {
        error_ = std::string(to_string(encoding_)) + " input ends in the middle of its data (cut short?)";
      }
      return false;
    }
  }
  return false;
}

ScanProgress::ScanProgress(std::string input, bool enabled)
    : input_(std::move(input)), enabled_(enabled), started_(std::chrono::steady_clock::now()),
      next_draw_(started_ + kAfter) {}

ScanProgress::~ScanProgress() { done(); }

void ScanProgress::update(std::size_t consumed, std::size_t size, std::uint64_t lines) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_draw_) return;
  next_draw_ = now + std::chrono::seconds(1);
  const double seconds = std::chrono::duration<double>(now - started_).count();
  std::string text = "\r" + line(input_, consumed, size, lines, seconds) + "\x1b[K";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
  shown_ = true;
}

void ScanProgress::done() {
  if (!shown_) return;
  shown_ = false;
  static constexpr char kClear[] = "\r\x1b[K";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, kClear, sizeof kClear - 1);
}

namespace {

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return buf;
}

std::string human_count(double n) {
  char buf[32];
  if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else if (n >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

}  // namespace

std::string ScanProgress::line(const std::string& input, std::size_t consumed, std::size_t size, std::uint64_t lines,
                               double seconds) {
  std::string out = "scan " + input + ": " + human_bytes(static_cast<double>(consumed));
  if (size > 0) {
    out += " of " + human_bytes(static_cast<double>(size));
    out += " (" + std::to_string(std::min<std::size_t>(100, consumed * 100 / size)) + "%)";
  }
  if (seconds > 0) out += ", " + human_count(static_cast<double>(lines) / seconds) + " lines/s";
  if (size > 0 && consumed > 0 && consumed < size && seconds > 0) {
    const double left = seconds * static_cast<double>(size - consumed) / static_cast<double>(consumed);
    out += ", " + std::to_string(static_cast<long>(left + 0.5)) + " s left";
  }
  return out;
}

namespace {
Time modification_time(const struct stat& st) {
  return Time(std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}
}  // namespace

MappedFile::MappedFile(const std::string& path) {
  struct stat named {};
  // A FIFO is not opened here: opening it twice (here, then by ScanInput) could miss a writer that came and went.
  if (path == "-" || (::stat(path.c_str(), &named) == 0 && !S_ISREG(named.st_mode))) {
    not_regular_ = true;
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error_ = std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error_ = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    not_regular_ = true;
  } else if (st.st_size > 0 && static_cast<std::size_t>(st.st_size) < kReadWholeBelow) {
    // Read whole, up to the size it had (a file that grows meanwhile is read as it was; one that shrank, to its end).
    const auto want = static_cast<std::size_t>(st.st_size);
    owned_ = std::make_unique_for_overwrite<char[]>(want);
    std::size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, owned_.get() + got, want - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = std::strerror(errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (!error_.empty()) {
      owned_.reset();
    } else if (stored_compressed(std::string_view(owned_.get(), std::min(got, kMagic)))) {
      owned_.reset();  // a gzip/zstd file is read (decompressed) through ScanInput
      not_regular_ = true;
    } else if (got > 0) {
      data_ = owned_.get();
      size_ = got;
    }
  } else if (st.st_size > 0) {
    size_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      not_regular_ = true;  // not mappable (some file systems): read it
      size_ = 0;
    } else if (stored_compressed(std::string_view(static_cast<const char*>(p), std::min(size_, kMagic)))) {
      ::munmap(p, size_);  // a gzip/zstd file is read (decompressed) through ScanInput, never as mapped bytes
      not_regular_ = true;
      size_ = 0;
    } else {
      data_ = p;
      ::madvise(p, size_, MADV_SEQUENTIAL);
      install_sigbus_handler();
    }
  }
  if (data_ != nullptr && !owned_) fd_ = fd;
  else ::close(fd);
  if (ok()) modified_ = modification_time(st);
}

bool MappedFile::copy(std::size_t offset, char* out, std::size_t size) const {
  if (offset > size_ || size > size_ - offset) return false;
  if (owned_) {
    std::memcpy(out, owned_.get() + offset, size);
    return true;
  }
  if (fd_ < 0) return false;
  while (size > 0) {
    const ssize_t n = ::pread(fd_, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // an error, or the file ends early (it shrank)
    out += n;
    offset += static_cast<std::size_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void MappedFile::release(std::size_t from, std::size_t to) {
  if (data_ == nullptr || owned_) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t a = (from + page - 1) / page * page;
  const std::size_t b = std::min(to, size_) / page * page;
  if (b > a) ::madvise(static_cast<char*>(data_) + a, b - a, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr && !owned_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

// What a file's bytes were read at: --now, else its modification time; standard input is read now.
Time input_read_time(const std::string& input, const std::optional<Time>& now) {
  if (now) return *now;
  if (input != "-") {
    struct stat st {};
    if (::stat(input.c_str(), &st) == 0) {
      return modification_time(st);
    }
  }
  return SystemClock::instance().now();
}

StreamIdentity input_identity(const std::string& input) {
  const bool is_stdin = input == "-";
  StreamIdentity id;
  id.name = is_stdin ? "stdin" : input;
  id.logical = id.name;
  id.instance = id.name;
  id.set_label(LabelKey::source, is_stdin ? "stdin" : "file");
  // A scan knows nothing of hosts: each input is a node of its own, so that rules keyed by node (the kernel log)
  // never join lines of two files, and the order of the files does not matter.
  id.set_label(LabelKey::node, id.name);
  return id;
}

}  // namespace faultline::app
