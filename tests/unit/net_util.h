// Blocking loopback HTTP helpers for the outputs tests (plain POSIX sockets, no Boost): a GET client and a tiny
// receiver that records requests and answers with a status chosen per request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nettest {

struct Response {
  int status = 0;
  std::string head;
  std::string body;
};

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::uint16_t port_of(const std::string& host_port) {
  return static_cast<std::uint16_t>(std::stoi(host_port.substr(host_port.rfind(':') + 1)));
}

// Reads until the peer closes or `timeout` passes.
inline std::string read_all(int fd, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + timeout;
  char buf[8192];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

inline int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline Response request(std::uint16_t port, const std::string& raw) {
  Response r;
  int fd = connect_to(port);
  if (fd < 0) return r;
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string all = read_all(fd);
  ::close(fd);
  auto sep = all.find("\r\n\r\n");
  if (sep == std::string::npos || all.size() < 12) return r;
  r.head = all.substr(0, sep);
  r.body = all.substr(sep + 4);
  r.status = std::stoi(all.substr(9, 3));
  return r;
}

inline Response get(std::uint16_t port, const std::string& target, const std::string& extra = {},
                    const std::string& method = "GET") {
  return request(port, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra + "\r\n");
}

struct Received {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return {};
  }
};

// A one-request-per-connection HTTP receiver on 127.0.0.1.
class Receiver {
 public:
  explicit Receiver(std::function<int(const Received&)> respond = nullptr) : respond_(std::move(respond)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~Receiver() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/hook") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<Received> received() {
    std::lock_guard lock(mu_);
    return got_;
  }
  // Waits until at least `n` requests arrived.
  bool wait_for(std::size_t n, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard lock(mu_);
        if (got_.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string data;
      char buf[8192];
      std::size_t need = std::string::npos;
      auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (std::chrono::steady_clock::now() < end) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 20) <= 0) continue;
        auto n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        data.append(buf, static_cast<std::size_t>(n));
        auto sep = data.find("\r\n\r\n");
        if (sep != std::string::npos && need == std::string::npos) {
          std::size_t len = 0;
          auto l = lower(data.substr(0, sep));
          auto cl = l.find("content-length:");
          if (cl != std::string::npos) len = std::stoul(l.substr(cl + 15));
          need = sep + 4 + len;
        }
        if (need != std::string::npos && data.size() >= need) break;
      }
      Received r;
      auto sep = data.find("\r\n\r\n");
      if (sep != std::string::npos) {
        std::string head = data.substr(0, sep);
        r.body = data.substr(sep + 4);
        std::size_t pos = head.find("\r\n");
        std::string first = head.substr(0, pos);
        r.method = first.substr(0, first.find(' '));
        r.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
        while (pos != std::string::npos && pos < head.size()) {
          auto next = head.find("\r\n", pos + 2);
          std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
          auto colon = line.find(':');
          if (colon != std::string::npos) {
            std::string v = line.substr(colon + 1);
            while (!v.empty() && v.front() == ' ') v.erase(0, 1);
            r.headers.emplace_back(lower(line.substr(0, colon)), v);
          }
          pos = next;
        }
      }
      int status = respond_ ? respond_(r) : 200;
      {
        std::lock_guard lock(mu_);
        got_.push_back(r);
      }
      std::string resp = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }

  std::function<int(const Received&)> respond_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Received> got_;
  std::thread thread_;
};

}  // namespace nettest
