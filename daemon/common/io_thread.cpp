// The io thread: io_context + work guard + thread. An exception escaping a handler (third-party code) is logged and
// the loop goes on: one bad handler must not take the HTTP server and every sink down with it.
#include <utility>  // first: Boost 1.74 Asio under g++ 12 in C++20 needs it

#include "faultline/io_thread.hpp"

#include <boost/asio.hpp>
#include <future>
#include <optional>
#include <spdlog/spdlog.h>
#include <thread>

namespace faultline {

namespace asio = boost::asio;

struct IoThread::Impl {
  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread thread;
  std::thread::id id;
};

IoThread::IoThread() : impl_(std::make_unique<Impl>()) {}
IoThread::~IoThread() { stop(); }

void IoThread::start() {
  auto& d = *impl_;
  if (d.thread.joinable()) return;
  d.guard.emplace(d.io.get_executor());
  std::promise<void> started;
  auto ready = started.get_future();
  d.thread = std::thread([&d, &started] {
    d.id = std::this_thread::get_id();
    started.set_value();
    for (;;) {
      try {
        d.io.run();
        break;
      } catch (const std::exception& e) {
        spdlog::error("unexpected error on the io thread: {}", e.what());
      }
    }
  });
  ready.wait();
}

void IoThread::stop() {
  auto& d = *impl_;
  if (!d.thread.joinable()) return;
  d.guard.reset();
  d.thread.join();
  d.id = {};
  d.io.restart();
}

bool IoThread::running() const { return impl_->thread.joinable(); }
bool IoThread::in_io_thread() const { return running() && std::this_thread::get_id() == impl_->id; }

asio::io_context& IoThread::context() { return impl_->io; }

void IoThread::post(std::function<void()> fn) { asio::post(impl_->io, std::move(fn)); }

void IoThread::run_sync(const std::function<void()>& fn) {
  if (!running() || in_io_thread()) {
    fn();
    return;
  }
  std::promise<void> done;
  auto finished = done.get_future();
  asio::post(impl_->io, [&] {
    try {
      fn();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  finished.get();
}

}  // namespace faultline
