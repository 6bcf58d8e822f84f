// checkpoint: the durable joint state of a daemon — where every source was read to and the correlator's in-flight
// state, taken at the same instant so a restart neither re-alerts nor misses. One versioned JSON file in the state
// dir, replaced atomically (durable_file.hpp). Plain functions; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "faultline/result.hpp"
#include "faultline/tail.hpp"
#include "faultline/types.hpp"

namespace faultline {

struct Checkpoint {
  static constexpr int kVersion = 1;
  TailPositions positions;
  std::string correlator_state;  // the pipeline's saved correlation state
  std::string fingerprints;      // the detector's inventory (inventory_state_json); empty in older checkpoints
  Time written{};
};

std::string checkpoint_to_json(const Checkpoint& checkpoint);
Result<Checkpoint> checkpoint_from_json(std::string_view json);
Result<void> write_checkpoint(const std::string& state_dir, const Checkpoint& checkpoint);
// nullopt: no checkpoint yet (first start). An Error: unreadable or corrupt (it names the file).
Result<std::optional<Checkpoint>> read_checkpoint(const std::string& state_dir);

}  // namespace faultline
