// RecordBatch: records of one or more streams with their texts joined in one buffer ('\n' after each).
#include <algorithm>

#include "faultline/decode.hpp"

namespace faultline {

void RecordBatch::append(RecordMeta meta, std::string_view text) {
  meta.text_begin = static_cast<std::uint32_t>(buffer_.size());
  meta.text_size = static_cast<std::uint32_t>(text.size());
  buffer_.append(text);
  buffer_.push_back('\n');
  records_.push_back(meta);
}

std::size_t RecordBatch::record_at(std::size_t pos) const {
  if (pos >= buffer_.size()) return records_.size();
  // The last record that begins at or before pos; texts are laid out in record order.
  auto it = std::upper_bound(records_.begin(), records_.end(), pos,
                             [](std::size_t p, const RecordMeta& m) { return p < m.text_begin; });
  return static_cast<std::size_t>(it - records_.begin()) - 1;
}

}  // namespace faultline
