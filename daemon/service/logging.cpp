// faultline's own log (service.hpp): spdlog on standard error, as text or one JSON object per line.
#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "faultline/service.hpp"

namespace faultline {
namespace {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::json j;
    j["time"] = format_time(std::chrono::time_point_cast<Duration>(msg.time));
    auto level = spdlog::level::to_string_view(msg.level);
    j["level"] = std::string(level.data(), level.size());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(s.data(), s.data() + s.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLogFormatter>(); }
};

}  // namespace

void setup_logging(const LogSettings& log) {
  auto logger = spdlog::default_logger();
  if (log.format == LogFormat::json) logger->set_formatter(std::make_unique<JsonLogFormatter>());
  std::string level = log.level == "warning" ? "warn" : log.level;
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
}

void log_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    if (d.kind == Diagnostic::Kind::error) spdlog::error("{}", d.str());
    else spdlog::warn("{}", d.str());
  }
}

std::size_t error_count(const std::vector<Diagnostic>& diagnostics) {
  std::size_t n = 0;
  for (const auto& d : diagnostics) n += d.kind == Diagnostic::Kind::error;
  return n;
}

}  // namespace faultline
