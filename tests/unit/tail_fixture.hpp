// The tail tests' fixture: a temporary directory, a Recorder standing in for the pipeline, and Tailer lives driven
// step by step with a manual clock (no sleeps). TEST_CASE_METHOD(TailFixture, ...) gets `t`, `opts` and start().
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "faultline/tail.hpp"

namespace tailtest {

using namespace faultline;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/faultline-tail-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write(const std::string& path, const std::string& text, bool append = true) {
  std::ofstream out(path, append ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
  out << text;
}

// Stands in for the pipeline: records what the Tailer says, and commits like a decoder (up to the last newline).
struct Recorder : TailHandler {
  struct Stream {
    StreamIdentity identity;
    ContainerFormat format{};
    std::string data;           // everything fed
    std::uint64_t base = 0;     // file offset where the current file's bytes started
    std::uint64_t fed = 0;      // bytes of the current file fed
    std::uint64_t committed = 0;
    std::uint64_t line = 1;
    int idles = 0;
    bool ended = false;
  };
  std::vector<Stream> streams;
  std::vector<std::string> events;

  std::uint32_t open_stream(const StreamIdentity& identity, ContainerFormat format) override {
    streams.push_back(Stream{identity, format});
    events.push_back("open " + identity.name);
    return static_cast<std::uint32_t>(streams.size() - 1);
  }
  void begin_file(std::uint32_t s, FileStart how, const StreamIdentity& identity, std::uint64_t offset,
                  std::uint64_t line) override {
    auto& st = streams[s];
    st.identity = identity;
    st.base = offset;
    st.fed = 0;
    st.committed = offset;
    st.line = line;
    events.push_back(std::string(to_string(how)) + " " + identity.name + " @" + std::to_string(offset) + " L" +
                     std::to_string(line) + " i=" + identity.instance);
  }
  void data(std::uint32_t s, std::string_view bytes, Time) override {
    auto& st = streams[s];
    st.data.append(bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] == '\n') {
        st.committed = st.base + st.fed + i + 1;
        ++st.line;
      }
    }
    st.fed += bytes.size();
  }
  void idle(std::uint32_t s, Time) override { ++streams[s].idles; }
  void end_of_stream(std::uint32_t s, Time) override { streams[s].ended = true; }
  Committed committed(std::uint32_t s) override { return Committed{streams[s].committed, streams[s].line}; }

  const Stream* find(const std::string& name) const {
    for (const auto& s : streams)
      if (s.identity.name == name) return &s;
    return nullptr;
  }
  std::string data_of(const std::string& name) const {
    auto* s = find(name);
    return s ? s->data : "";
  }
  bool saw(const std::string& prefix) const {
    for (const auto& e : events)
      if (e.rfind(prefix, 0) == 0) return true;
    return false;
  }
};

inline TailOptions options() {
  TailOptions o;
  o.rescan_interval = std::chrono::seconds(1);
  o.rotate_wait = std::chrono::milliseconds(500);
  o.partial_timeout = std::chrono::seconds(2);
  o.node_name = "node-a";
  return o;
}

// One rescan period passes; polls until the Tailer has nothing more to do now.
inline void step(Tailer& t, ManualClock& clock, Duration d = std::chrono::milliseconds(1100)) {
  clock.advance(d);
  for (int i = 0; i < 1000 && t.poll_once(); ++i) {
  }
}

inline SourceSpec files(const std::string& glob, StartAt start = StartAt::beginning) {
  SourceSpec s;
  s.paths = {glob};
  s.start_at = start;
  return s;
}

inline std::string lines(int from, int to, const std::string& tag = "line") {
  std::string out;
  for (int i = from; i <= to; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

// One life of a Tailer: its clock, what it told its handler, and the Tailer, started over `sources`.
struct TailRun {
  ManualClock clock;
  Recorder rec;
  Tailer tailer;

  TailRun(const TailOptions& o, const std::vector<SourceSpec>& sources, const TailPositions* restored)
      : tailer(o, clock, rec) {
    for (const auto& s : sources) tailer.add_source(s);
    tailer.restore(restored);
  }
  void step(Duration d = std::chrono::milliseconds(1100)) { tailtest::step(tailer, clock, d); }
  // Polls until nothing more is ready, without moving the clock.
  void drain() {
    while (tailer.poll_once()) {
    }
  }
};

class TailFixture {
 protected:
  TempDir t;
  TailOptions opts = options();

  // A Tailer over `sources` (a restart when one runs already: the previous life ends first). `restored`: the
  // checkpoint's positions, null for the first start.
  TailRun& start(const std::vector<SourceSpec>& sources, const TailPositions* restored = nullptr) {
    run_.reset();
    run_ = std::make_unique<TailRun>(opts, sources, restored);
    return *run_;
  }
  TailRun& start(const SourceSpec& source, const TailPositions* restored = nullptr) {
    return start(std::vector<SourceSpec>{source}, restored);
  }

 private:
  std::unique_ptr<TailRun> run_;
};

}  // namespace tailtest
