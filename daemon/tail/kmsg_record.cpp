// /dev/kmsg records: parsing "pri,seq,usec,flags;message" and the timed line fed to the decoder.
#include <charconv>

#include "faultline/tail.hpp"
#include "text.hpp"

namespace faultline {

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  auto semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  auto head = tail::split(record.substr(0, semi), ',');
  if (head.size() < 3) return std::nullopt;
  KmsgRecord r;
  std::uint64_t pri = 0;
  auto parse_u64 = [](std::string_view s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  if (!parse_u64(head[0], pri) || !parse_u64(head[1], r.seq) || !parse_u64(head[2], r.usec)) return std::nullopt;
  r.facility = static_cast<int>(pri >> 3);
  r.priority = static_cast<int>(pri & 7);
  auto msg = record.substr(semi + 1);
  auto nl = msg.find('\n');  // continuation lines (" KEY=value") follow the first newline
  if (nl != std::string_view::npos) msg = msg.substr(0, nl);
  r.message = std::string(msg);
  return r;
}

std::string format_kmsg_line(const KmsgRecord& record, Time boot_time) {
  static constexpr std::string_view kLevels[] = {"CRITICAL", "CRITICAL", "CRITICAL", "ERROR",
                                                 "WARNING",  "INFO",     "INFO",     "DEBUG"};
  Time t = boot_time + std::chrono::microseconds(record.usec);
  std::string line = format_time(t);
  line += ' ';
  line += kLevels[record.priority & 7];
  line += " kernel: ";
  line += record.message;
  return line;
}

}  // namespace faultline
