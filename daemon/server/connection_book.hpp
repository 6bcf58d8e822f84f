// Internal: which connections the listener holds and which one gives way when it is full. A connection that is
// waiting — for its request's header or body, or idle between keep-alive requests — can be shed; one whose response is
// being written cannot. When a new connection would exceed the per-client bound, its own client's connection that has
// waited longest is shed; when it would exceed the total, the connection that has waited longest of all is. A new
// connection is refused only when nothing can be shed. So clients that are slow or idle can never keep out a request
// that arrives whole (a probe, a scrape): it is the newest, and the oldest waiters go first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace faultline {

class ConnectionBook {
 public:
  using Id = std::uint64_t;
  struct Limits {
    std::size_t total = 1;       // connections held at once
    std::size_t per_client = 1;  // of them from one client address
  };
  struct Admission {
    std::optional<Id> id;   // nullopt: refused (every connection held is busy)
    std::vector<Id> shed;   // to close now; already forgotten by the book
  };

  explicit ConnectionBook(Limits limits);

  // A new connection from `client` (its address). The new connection starts waiting.
  Admission admit(const std::string& client);
  // Waiting again (for a request or the rest of one): it goes to the back of the line. Unknown ids are ignored.
  void waiting(Id id);
  // Writing its response: not shed until it waits again.
  void busy(Id id);
  // Gone (closed, or shed). Unknown ids are ignored.
  void remove(Id id);

  bool holds(Id id) const { return index_.count(id) != 0; }
  std::size_t size() const { return index_.size(); }
  std::size_t of_client(const std::string& client) const;

 private:
  struct Entry {
    Id id;
    std::string client;
    bool busy = false;
  };
  using Line = std::list<Entry>;
  std::optional<Line::iterator> oldest_waiting(const std::string* client, std::optional<Id> except) const;

  Limits limits_;
  Id next_ = 1;
  mutable Line line_;  // longest waiting first
  std::unordered_map<Id, Line::iterator> index_;
  std::unordered_map<std::string, std::size_t> per_client_;
};

}  // namespace faultline
