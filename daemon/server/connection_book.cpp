#include "connection_book.hpp"

#include <algorithm>

namespace faultline {

ConnectionBook::ConnectionBook(Limits limits) : limits_(limits) {
  limits_.total = std::max<std::size_t>(limits_.total, 1);
  limits_.per_client = std::max<std::size_t>(limits_.per_client, 1);
}

std::optional<ConnectionBook::Line::iterator> ConnectionBook::oldest_waiting(const std::string* client,
                                                                             std::optional<Id> except) const {
  for (auto it = line_.begin(); it != line_.end(); ++it) {
    if (it->busy || (except && it->id == *except)) continue;
    if (client && it->client != *client) continue;
    return it;
  }
  return std::nullopt;
}

ConnectionBook::Admission ConnectionBook::admit(const std::string& client) {
  Admission out;
  std::optional<Line::iterator> own;
  if (of_client(client) >= limits_.per_client) {
    own = oldest_waiting(&client, std::nullopt);
    if (!own) return out;
  }
  std::optional<Line::iterator> any;
  if (size() - (own ? 1 : 0) >= limits_.total) {
    any = oldest_waiting(nullptr, own ? std::optional<Id>((*own)->id) : std::nullopt);
    if (!any) return out;
  }
  for (auto victim : {own, any}) {
    if (!victim) continue;
    Id id = (*victim)->id;
    out.shed.push_back(id);
    remove(id);
  }
  Id id = next_++;
  index_[id] = line_.insert(line_.end(), Entry{id, client, false});
  ++per_client_[client];
  out.id = id;
  return out;
}

void ConnectionBook::waiting(Id id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  it->second->busy = false;
  line_.splice(line_.end(), line_, it->second);
}

void ConnectionBook::busy(Id id) {
  if (auto it = index_.find(id); it != index_.end()) it->second->busy = true;
}

void ConnectionBook::remove(Id id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  auto pc = per_client_.find(it->second->client);
  if (pc != per_client_.end() && --pc->second == 0) per_client_.erase(pc);
  line_.erase(it->second);
  index_.erase(it);
}

std::size_t ConnectionBook::of_client(const std::string& client) const {
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace faultline
