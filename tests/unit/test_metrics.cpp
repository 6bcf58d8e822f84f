// metrics: every family is declared once, exported in the text format, documented in docs/metrics.md, and handles
// are stable references.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "faultline/metrics.hpp"
#include "faultline/rules.hpp"

using namespace faultline;

namespace {

std::set<std::string> family_names(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) names.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  return names;
}

std::string docs_path() {
  std::string rules = FAULTLINE_SOURCE_RULES_DIR;  // <source>/rules
  return rules.substr(0, rules.rfind('/')) + "/docs/metrics.md";
}

}  // namespace

TEST_CASE("every family is exported with HELP and TYPE", "[metrics]") {
  Metrics m("1.2.3");
  m.source("vllm").lines_read.Increment(3);
  m.sink("pager");
  m.incidents("cuda-oom", Severity::critical).Increment();
  m.incidents_active("cuda-oom", Severity::critical).Set(1);
  m.record_http_request("metrics", 200);
  RuleSet rs;
  rs.rules.emplace_back().id = "r";
  rs.rules.back().events.emplace_back().name = "e";
  m.event_counters(rs);
  auto text = m.serialize();
  auto names = family_names(text);
  for (const char* want :
       {"faultline_incidents_total", "faultline_incidents_active", "faultline_event_matches_total",
        "faultline_lines_read_total", "faultline_bytes_read_total", "faultline_lines_truncated_total",
        "faultline_files_rotated_total", "faultline_files_truncated_total", "faultline_files_lost_total",
        "faultline_files_unreadable_total", "faultline_source_lag_bytes", "faultline_checkpoint_age_seconds",
        "faultline_rules_loaded", "faultline_reloads_total", "faultline_last_reload_success_timestamp_seconds",
        "faultline_webhook_deliveries_total", "faultline_webhook_retries_total", "faultline_spool_bytes",
        "faultline_spool_oldest_pending_seconds", "faultline_spool_dropped_total", "faultline_lines_shed_total",
        "faultline_incident_latency_seconds", "faultline_build_info", "faultline_files_waiting",
        "faultline_file_reopens_total"}) {
    INFO(want);
    CHECK(names.count(want) == 1);
  }
  CHECK(text.find("faultline_build_info{version=\"1.2.3\"} 1") != std::string::npos);
  CHECK(text.find("faultline_lines_read_total{source=\"vllm\"} 3") != std::string::npos);
  CHECK(text.find("faultline_webhook_deliveries_total{result=\"tls_error\",sink=\"pager\"} 0") != std::string::npos);
  CHECK(text.find("faultline_spool_dropped_total{reason=\"spool_full\",sink=\"pager\"} 0") != std::string::npos);
  CHECK(text.find("faultline_incidents_total{rule=\"cuda-oom\",severity=\"critical\"} 1") != std::string::npos);
  // Counters end in _total; no family is left without help text.
  for (const auto& n : names) {
    INFO(n);
    CHECK(text.find("# HELP " + n + " ") != std::string::npos);
  }
}

TEST_CASE("every exported family is documented in docs/metrics.md", "[metrics]") {
  std::ifstream in(docs_path());
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = ss.str();
  Metrics m;
  m.source("a");
  m.sink("b");
  m.incidents("r", Severity::info);
  m.incidents_active("r", Severity::info);
  m.record_http_request("metrics", 200);
  RuleSet rs;
  rs.rules.emplace_back().id = "r";
  rs.rules.back().events.emplace_back().name = "e";
  m.event_counters(rs);
  for (const auto& n : family_names(m.serialize())) {
    INFO(n);
    CHECK(doc.find("`" + n) != std::string::npos);
  }
}

TEST_CASE("handles are stable references", "[metrics]") {
  Metrics m;
  CHECK(&m.source("x") == &m.source("x"));
  CHECK(&m.source("x") != &m.source("y"));
  CHECK(&m.sink("s").success == &m.sink("s").success);
  CHECK(&m.incidents("r", Severity::warning) == &m.incidents("r", Severity::warning));
}

TEST_CASE("event counters follow the rule set's indices", "[metrics]") {
  Metrics m;
  RuleSet rs;
  auto& a = rs.rules.emplace_back();
  a.id = "alpha";
  a.events.emplace_back().name = "one";
  a.events.emplace_back().name = "two";
  auto& b = rs.rules.emplace_back();
  b.id = "beta";
  b.events.emplace_back().name = "three";
  auto counters = m.event_counters(rs);
  REQUIRE(counters.size() == 2);
  REQUIRE(counters[0].size() == 2);
  REQUIRE(counters[1].size() == 1);
  counters[0][1]->Increment();
  counters[1][0]->Increment(2);
  auto text = m.serialize();
  CHECK(text.find("faultline_event_matches_total{event=\"two\",rule=\"alpha\"} 1") != std::string::npos);
  CHECK(text.find("faultline_event_matches_total{event=\"three\",rule=\"beta\"} 2") != std::string::npos);
  // A second table for the same rule set shares the series.
  CHECK(m.event_counters(rs)[0][1] == counters[0][1]);
}

TEST_CASE("reloads, checkpoints, latency and collect hooks", "[metrics]") {
  Metrics m;
  m.record_reload(true, 42);
  m.record_reload(false);
  m.record_checkpoint(std::chrono::system_clock::now() - std::chrono::seconds(30));
  m.observe_incident_latency(std::chrono::steady_clock::now() - std::chrono::milliseconds(20));
  m.observe_incident_latency({});  // unset: ignored
  int hook_calls = 0;
  auto hook = m.add_collect_hook([&] { ++hook_calls; });
  auto text = m.serialize();
  CHECK(hook_calls == 1);
  m.remove_collect_hook(hook);
  m.serialize();
  CHECK(hook_calls == 1);
  CHECK(text.find("faultline_reloads_total{result=\"success\"} 1") != std::string::npos);
  CHECK(text.find("faultline_reloads_total{result=\"failure\"} 1") != std::string::npos);
  CHECK(text.find("faultline_rules_loaded 42") != std::string::npos);
  CHECK(text.find("faultline_incident_latency_seconds_count 1") != std::string::npos);
  std::smatch match;
  REQUIRE(std::regex_search(text, match, std::regex("faultline_checkpoint_age_seconds ([0-9.e+]+)")));
  double age = std::stod(match[1]);
  CHECK(age >= 29.0);
  CHECK(age < 300.0);
  REQUIRE(std::regex_search(text, match, std::regex("faultline_last_reload_success_timestamp_seconds ([0-9.e+]+)")));
  CHECK(std::stod(match[1]) > 1.6e9);
}

TEST_CASE("the totals collector brings the source families up to the published totals at scrape time", "[metrics]") {
  Metrics m;
  TotalsCollector collector(m);
  PipelineTotals t;
  t.sources.push_back(SourceTotals{"vllm", 10, 1000, 1, 2, 3, 4, 5, 77});
  t.sources.push_back(SourceTotals{"vllm", 5, 500});  // a source named twice is summed
  t.sources.push_back(SourceTotals{"kmsg"});
  t.stories_dropped = 6;
  t.timestamps_rejected_future = 10;
  t.stream_clock_resets = 11;
  t.files_waiting = 8;
  t.file_reopens = 9;
  t.streams_ended = 12;
  collector.publish(t);
  auto text = m.serialize();
  CHECK(text.find("faultline_lines_read_total{source=\"vllm\"} 15") != std::string::npos);
  CHECK(text.find("faultline_bytes_read_total{source=\"vllm\"} 1500") != std::string::npos);
  CHECK(text.find("faultline_lines_truncated_total{source=\"vllm\"} 1") != std::string::npos);
  CHECK(text.find("faultline_files_rotated_total{source=\"vllm\"} 2") != std::string::npos);
  CHECK(text.find("faultline_files_truncated_total{source=\"vllm\"} 3") != std::string::npos);
  CHECK(text.find("faultline_files_lost_total{source=\"vllm\"} 4") != std::string::npos);
  CHECK(text.find("faultline_files_unreadable_total{source=\"vllm\"} 5") != std::string::npos);
  CHECK(text.find("faultline_source_lag_bytes{source=\"vllm\"} 77") != std::string::npos);
  CHECK(text.find("faultline_lines_read_total{source=\"kmsg\"} 0") != std::string::npos);
  CHECK(text.find("faultline_stories_dropped_total 6") != std::string::npos);
  CHECK(text.find("faultline_timestamps_rejected_total{reason=\"future\"} 10") != std::string::npos);
  CHECK(text.find("faultline_stream_clock_resets_total 11") != std::string::npos);
  CHECK(text.find("faultline_files_waiting 8") != std::string::npos);
  CHECK(text.find("faultline_file_reopens_total 9") != std::string::npos);
  CHECK(text.find("faultline_streams_ended_total 12") != std::string::npos);

  // Counters never fall; a lag left unset keeps the gauge's value.
  PipelineTotals later;
  later.sources.push_back(SourceTotals{"vllm", 12, 1200});
  collector.publish(later);
  text = m.serialize();
  CHECK(text.find("faultline_lines_read_total{source=\"vllm\"} 15") != std::string::npos);
  CHECK(text.find("faultline_source_lag_bytes{source=\"vllm\"} 77") != std::string::npos);
  later.sources[0].lines_read = 20;
  later.sources[0].lag_bytes = 0;
  collector.publish(later);
  text = m.serialize();
  CHECK(text.find("faultline_lines_read_total{source=\"vllm\"} 20") != std::string::npos);
  CHECK(text.find("faultline_source_lag_bytes{source=\"vllm\"} 0") != std::string::npos);
}
