// The tail → pipeline adapter: the Tailer's TailHandler, turning its streams, files and bytes into Pipeline calls
// (add_stream, resume, new_instance, feed, flush_partial) and answering how far each stream is committed. It also
// keeps each stream's counts across container instances (a new instance starts a fresh decoder), so the metrics
// collector can read totals per source. Internal to the service room; belongs to the pipeline thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "faultline/clock.hpp"
#include "faultline/pipeline.hpp"
#include "faultline/tail.hpp"

namespace faultline {
struct Config;
}

namespace faultline::service_detail {

// One stream's counts since start (all its instances).
struct StreamCounts {
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t truncated_lines = 0;
  std::uint64_t files_rotated = 0;
  std::uint64_t files_truncated = 0;
};

class StreamAdapter final : public TailHandler {
 public:
  StreamAdapter(Pipeline& pipeline, const Config& config, Clock& clock);

  std::uint32_t open_stream(const StreamIdentity& identity, ContainerFormat format) override;
  void begin_file(std::uint32_t stream, FileStart how, const StreamIdentity& identity, std::uint64_t offset,
                  std::uint64_t line) override;
  void data(std::uint32_t stream, std::string_view bytes, Time read_time) override;
  void idle(std::uint32_t stream, Time read_time) override;
  void end_of_stream(std::uint32_t stream, Time read_time) override;
  Committed committed(std::uint32_t stream) override;

  std::size_t streams() const { return streams_.size(); }
  // The stream's `source` label ("file" when it has none).
  const std::string& source(std::uint32_t stream) const { return streams_[stream].source; }
  StreamCounts counts(std::uint32_t stream) const;

 private:
  struct Stream {
    std::string source;
    StreamCounts counts;  // lines and truncated_lines: of the instances before the current one
  };
  void flush(std::uint32_t stream, Time now);
  // Adds the stream's decoder counts to those of its earlier instances, before the decoder starts over.
  void carry_counts(std::uint32_t stream);

  Pipeline& pipeline_;
  const Config& config_;
  Clock& clock_;
  std::vector<Stream> streams_;
};

}  // namespace faultline::service_detail
