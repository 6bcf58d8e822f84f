// Durable writes: temp + fsync + rename + directory fsync, written once for every room that persists something.
#include "faultline/durable_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace faultline {

Error Error::from_errno(std::string_view what, std::string_view path) { return from_errno(what, path, errno); }

Error Error::from_errno(std::string_view what, std::string_view path, int saved_errno) {
  std::string m(what);
  m += ' ';
  m += path;
  m += ": ";
  m += std::strerror(saved_errno);
  return Error{std::move(m)};
}

Result<void> write_all(int fd, std::string_view data, std::string_view what) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("cannot write", what);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> sync_parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Error::from_errno("cannot open directory", dir);
  int rc = ::fsync(dfd);
  int saved = errno;
  ::close(dfd);
  // Some filesystems refuse fsync on a directory (EINVAL); the rename is as durable as they make it.
  if (rc != 0 && saved != EINVAL) return Error::from_errno("cannot fsync directory", dir, saved);
  return {};
}

namespace {
constexpr std::size_t kWriterBuffer = 64 << 10;  // a piece at least this large is written straight from its caller
}  // namespace

Result<AtomicFileWriter> AtomicFileWriter::create(std::string path, unsigned mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return Error::from_errno("cannot create", tmp);
  return AtomicFileWriter(std::move(path), std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string tmp, int fd)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      tmp_(std::move(other.tmp_)),
      fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)),
      size_(other.size_),
      error_(std::move(other.error_)) {}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void AtomicFileWriter::abandon() {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  ::unlink(tmp_.c_str());
}

void AtomicFileWriter::append(std::string_view piece) {
  size_ += piece.size();
  if (buffer_.size() + piece.size() > kWriterBuffer) flush();
  if (piece.size() >= kWriterBuffer) {
    write_out(piece);
    return;
  }
  if (buffer_.capacity() < kWriterBuffer) buffer_.reserve(kWriterBuffer);
  buffer_.append(piece);
}

void AtomicFileWriter::flush() {
  write_out(buffer_);
  buffer_.clear();
}

void AtomicFileWriter::write_out(std::string_view bytes) {
  if (bytes.empty() || error_ || fd_ < 0) return;
  if (auto w = write_all(fd_, bytes, tmp_); !w) error_ = w.error();
}

Result<void> AtomicFileWriter::commit() {
  if (fd_ < 0) return Error{"cannot commit " + tmp_ + ": already committed or abandoned"};
  flush();
  std::string{}.swap(buffer_);
  if (error_) {
    abandon();
    return *error_;
  }
  if (::fsync(fd_) != 0) {
    Error e = Error::from_errno("cannot fsync", tmp_);
    abandon();
    return e;
  }
  if (::close(std::exchange(fd_, -1)) != 0) {
    Error e = Error::from_errno("cannot close", tmp_);
    ::unlink(tmp_.c_str());
    return e;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    Error e = Error::from_errno("cannot rename to", path_);
    ::unlink(tmp_.c_str());
    return e;
  }
  return sync_parent_dir(path_);
}

Result<void> write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
  auto writer = AtomicFileWriter::create(path, mode);
  if (!writer) return writer.error();
  writer->write_out(data);  // one piece: straight from the caller, no copy into the buffer
  return writer->commit();
}

Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("cannot open", path);
  // Read straight into the string, sized once from the file's size (growing it as it fills would copy it again
  // and again); a file that grows meanwhile is read on to its end.
  std::string out;
  struct stat st {};
  std::size_t size = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0;
  out.resize(std::max<std::size_t>(size + 1, 4096));
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) out.resize(out.size() * 2);
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = Error::from_errno("cannot read", path);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

ReadOnlyMapping::ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ReadOnlyMapping& ReadOnlyMapping::operator=(ReadOnlyMapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ReadOnlyMapping::~ReadOnlyMapping() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Result<ReadOnlyMapping> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Error e = Error::from_errno("cannot stat", path);
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{"cannot map " + path + ": not a regular file"};
  }
  ReadOnlyMapping m;
  if (st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    // MAP_POPULATE: the file's cached pages are mapped in this one call instead of one fault per few pages.
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = Error::from_errno("cannot map", path);
      ::close(fd);
      return e;
    }
    m.data_ = p;
    m.size_ = size;
  }
  ::close(fd);
  return m;
}

}  // namespace faultline
