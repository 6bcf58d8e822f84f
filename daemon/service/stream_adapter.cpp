// The tail → pipeline adapter (stream_adapter.hpp).
#include "stream_adapter.hpp"

#include "faultline/config.hpp"

namespace faultline::service_detail {

StreamAdapter::StreamAdapter(Pipeline& pipeline, const Config& config, Clock& clock)
    : pipeline_(pipeline), config_(config), clock_(clock) {}

std::uint32_t StreamAdapter::open_stream(const StreamIdentity& identity, ContainerFormat format) {
  DecodeOptions d;
  d.format = format;
  d.max_line_bytes = config_.max_line_bytes;
  d.time.utc_offset = config_.utc_offset;
  std::uint32_t index = pipeline_.add_stream(identity, d);
  std::string_view source = identity.label(LabelKey::source);
  if (streams_.size() <= index) streams_.resize(index + 1);
  streams_[index] = Stream{source.empty() ? std::string("file") : std::string(source), {}};
  return index;
}

void StreamAdapter::begin_file(std::uint32_t stream, FileStart how, const StreamIdentity& identity,
                               std::uint64_t offset, std::uint64_t line) {
  Time now = clock_.now();
  StreamCounts& c = streams_[stream].counts;
  switch (how) {
    case FileStart::first:
    case FileStart::resumed:
      if (pipeline_.progress(stream).has_partial) flush(stream, now);  // the stream's previous file
      if (offset > 0 || line > 1) pipeline_.resume(stream, offset, line);
      break;
    case FileStart::rotated:
    case FileStart::truncated:
      flush(stream, now);
      pipeline_.resume(stream, offset, line);
      ++(how == FileStart::rotated ? c.files_rotated : c.files_truncated);
      break;
    case FileStart::new_instance: {
      flush(stream, now);
      carry_counts(stream);  // the new instance starts a fresh decoder
      pipeline_.new_instance(stream, identity, offset);
      if (line > 1) pipeline_.resume(stream, offset, line);
      ++c.files_rotated;
      break;
    }
  }
}

void StreamAdapter::data(std::uint32_t stream, std::string_view bytes, Time read_time) {
  pipeline_.feed(stream, bytes, read_time);
  streams_[stream].counts.bytes += bytes.size();
}

void StreamAdapter::idle(std::uint32_t stream, Time read_time) {
  if (pipeline_.progress(stream).has_partial) flush(stream, read_time);
}

void StreamAdapter::end_of_stream(std::uint32_t stream, Time read_time) {
  flush(stream, read_time);
  carry_counts(stream);  // its decoder starts over, its buffers freed
  pipeline_.end_stream(stream);
}

TailHandler::Committed StreamAdapter::committed(std::uint32_t stream) {
  Pipeline::StreamProgress p = pipeline_.progress(stream);
  return Committed{p.committed_offset, p.committed_line};
}

StreamCounts StreamAdapter::counts(std::uint32_t stream) const {
  StreamCounts c = streams_[stream].counts;
  const DecodeStats& st = pipeline_.decode_stats(stream);
  c.lines += st.lines;
  c.truncated_lines += st.truncated;
  return c;
}

void StreamAdapter::carry_counts(std::uint32_t stream) {
  StreamCounts& c = streams_[stream].counts;
  const DecodeStats& st = pipeline_.decode_stats(stream);
  c.lines += st.lines;
  c.truncated_lines += st.truncated;
}

void StreamAdapter::flush(std::uint32_t stream, Time now) {
  pipeline_.flush_partial(stream, now);
  pipeline_.drain();
}

}  // namespace faultline::service_detail
