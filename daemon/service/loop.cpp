// The daemon's loop: waits in poll() on the service's descriptors and a signalfd until the next deadline, then
// steps the service. The only code in faultline that waits in poll(); no work happens in a signal handler.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "faultline/service.hpp"

namespace faultline {
namespace {

sigset_t daemon_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  return sigs;
}

// The signalfd, closed on every way out.
struct SignalFd {
  int fd;
  SignalFd() {
    sigset_t sigs = daemon_signals();
    fd = ::signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~SignalFd() {
    if (fd >= 0) ::close(fd);
  }
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
};

}  // namespace

void block_signals() {
  sigset_t sigs = daemon_signals();
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

void run_service_loop(Service& service) {
  SignalFd signals;
  // The descriptors to wait on change only when the service says so (standard input ended).
  std::vector<pollfd> fds;
  std::vector<WaitFd::Role> roles;  // of fds[1..]
  std::uint64_t fds_version = ~0ull;
  bool more = true;

  while (true) {
    bool paused = service.backpressure();
    if (paused) service.wait_for_space(std::chrono::milliseconds(200));

    if (std::uint64_t v = service.wait_fds_version(); v != fds_version) {
      fds_version = v;
      fds.assign(1, pollfd{signals.fd, POLLIN, 0});
      roles.clear();
      for (const WaitFd& w : service.wait_fds()) {
        fds.push_back({w.fd, POLLIN, 0});
        roles.push_back(w.role);
      }
    }
    auto now = service.clock().steady();
    // Rounded up: a deadline less than 1 ms away must not turn into a busy loop of zero timeouts.
    int timeout = (more || paused) ? 0
                                   : static_cast<int>(std::max<std::int64_t>(
                                         0, std::chrono::ceil<std::chrono::milliseconds>(
                                                service.next_deadline() - now).count()));
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) {
      spdlog::error("poll: {}", std::strerror(errno));
      return;
    }
    // Only what poll() found ready is read (after EINTR the revents say nothing: everything is).
    auto ready = [&](WaitFd::Role role) {
      if (rc < 0) return true;
      for (std::size_t i = 0; i < roles.size(); ++i)
        if (roles[i] == role && fds[i + 1].revents != 0) return true;
      return false;
    };

    signalfd_siginfo si;
    while ((rc < 0 || fds[0].revents != 0) && ::read(signals.fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGHUP) {
        service.request_reload("SIGHUP");
      } else {
        spdlog::info("{}: stopping", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        return;
      }
    }

    StepResult r = service.step(Wakeups{ready(WaitFd::Role::rules_changed), ready(WaitFd::Role::reload_done)});
    if (r.finished) return;
    more = r.more;
  }
}

}  // namespace faultline
