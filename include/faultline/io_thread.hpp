// io_thread: the daemon's one Boost.Asio io_context and the thread that runs it — the HTTP server, webhook deliveries
// and their timers. The daemon owns it and lends it to the server and the dispatcher; they stop their own work on it
// (Server::stop, Dispatcher::stop) before it is stopped. start/stop belong to the owner's thread; post and run_sync
// may be called from any thread.
#pragma once

#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace faultline {

class IoThread {
 public:
  IoThread();
  ~IoThread();  // stop()
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  // Starts the thread (once). Work posted before runs then.
  void start();
  // Lets the queued work finish, then joins the thread. Whatever still has work on the io_context must end it first
  // (a listener still accepting would keep it running).
  void stop();
  bool running() const;
  // True on the io thread itself.
  bool in_io_thread() const;

  boost::asio::io_context& context();
  void post(std::function<void()> fn);
  // Runs `fn` on the io thread and waits for it; runs it here when the thread is not running or this is it.
  void run_sync(const std::function<void()>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace faultline
