// What a story's lines are (story_shape.hpp): which lines continue a story, which anchors may open one, and the
// severity a closed story is raised at.
#include "story_shape.hpp"

#include <algorithm>
#include <array>

#include "exception_line.hpp"

namespace faultline::fingerprint_detail {

// Anchors that report the end of a process rather than a failure's cause: when one follows a story closely, it is
// that story's consequence.
bool consequence_anchor(StoryAnchor a) { return a == StoryAnchor::signal || a == StoryAnchor::exit_status; }

// Anchors after which the process is gone.
bool fatal_anchor(StoryAnchor a) {
  switch (a) {
    case StoryAnchor::terminate:
    case StoryAnchor::signal:
    case StoryAnchor::fatal_python:
    case StoryAnchor::check_failed:
    case StoryAnchor::glog_fatal:
    case StoryAnchor::assertion:
    case StoryAnchor::go_panic:
    case StoryAnchor::exit_status:
    case StoryAnchor::go_runtime_frame:  // the runtime prints these only as it dies (docs/fingerprints.md)
      return true;
    default:
      return false;
  }
}

// Anchors that mark a frame: they continue a story (a traceback's body) and open one only where no head was logged.
bool frame_anchor(StoryAnchor a) { return a == StoryAnchor::python_frame || a == StoryAnchor::go_runtime_frame; }

// Is this line (logger prefix removed) part of a failure story: a frame, a dump line, a chain marker?
bool story_line(std::string_view stripped) {
  if (stripped.empty()) return false;
  if (is_blank(stripped[0])) return true;  // frames, source lines, carets, what(), dump columns
  std::string_view t = trim(stripped);
  if (t.empty()) return false;
  static constexpr std::string_view kMarkers[] = {
      "The above exception was the direct cause", "During handling of the above exception",
      "Stack (most recent call first)", "Current thread 0x", "Thread 0x", "Extension modules:",
      "*** Check failure stack trace", "stack backtrace:", "Exception raised from", "note: run with",
      "PC: @", "*** SIG", "[Previous line repeated", "frame #", "goroutine ", "created by ", "Traceback (most recent",
      "Fatal Python error", "Error in cpuinfo", "Aborted (", "@ 0x", "File \"", "^"};
  // The first characters the markers begin with: most lines begin with none of them and are not compared at all.
  static constexpr auto kFirst = [] {
    std::array<bool, 256> first{};
    for (auto m : kMarkers) first[static_cast<unsigned char>(m[0])] = true;
    return first;
  }();
  if (kFirst[static_cast<unsigned char>(t[0])]) {
    for (auto m : kMarkers) {
      if (m[0] == t[0] && t.starts_with(m)) return true;
    }
    if (t == "Aborted") return true;  // a shell's report of SIGABRT (not vLLM's "Aborted request ...")
  }
  // Go frames: "runtime.gopark(0x1b8?, ...)" / "main.main()".
  if (t.back() == ')') {
    if (auto open = t.find('('); open != std::string_view::npos && open > 0 &&
                                 t.substr(0, open).find(' ') == std::string_view::npos &&
                                 t.substr(0, open).find('.') != std::string_view::npos)
      return true;
  }
  return t.size() > 1 && t[0] == '#' && t[1] >= '0' && t[1] <= '9';
}

// Exceptions that report a client or an operator going away, not a failure: a cancelled request's task, a client
// that disconnected mid-stream, Ctrl-C. Stories rooted in one are inventoried, never raised.
bool benign_type(std::string_view type) {
  auto dot = type.rfind('.');
  std::string_view name = dot == std::string_view::npos ? type : type.substr(dot + 1);
  return name == "CancelledError" || name == "ClientDisconnected" || name == "ClientDisconnect" ||
         name == "GeneratorExit" || name == "KeyboardInterrupt";
}

static bool exception_start(std::string_view t) { return !fingerprint_detail::exception_class(t).empty(); }

// Is the story's next unindented line part of it: a traceback's exception, a panic's message on its own line?
bool awaits_message(const std::vector<StoryAnchor>& anchors, std::string_view stripped) {
  for (auto a : anchors) {
    if (a == StoryAnchor::traceback || a == StoryAnchor::python_frame) return true;
    if (a == StoryAnchor::rust_panic && trim(stripped).ends_with(":")) return true;
  }
  return false;
}

bool opens_story(const std::vector<StoryAnchor>& anchors, std::string_view text, Level level) {
  std::string_view t = trim(strip_log_prefix(text));
  for (auto a : anchors) {
    switch (a) {
      case StoryAnchor::go_panic:
        if (t.starts_with("panic: ")) return true;
        break;
      case StoryAnchor::rust_panic:
        if (contains(t, "thread '")) return true;
        break;
      case StoryAnchor::errno_error:
        if (level == Level::error || level == Level::critical) return true;
        break;
      case StoryAnchor::exception_line:
        if (exception_start(t)) return true;
        break;
      case StoryAnchor::python_frame:
        // A traceback whose head is not in the log (a tail that began mid-traceback, an excerpt): its frames,
        // when a logger printed them as an error. Below that (a warning's stack_info) it is no failure.
        if (t.starts_with("File \"") && (level == Level::error || level == Level::critical)) return true;
        break;
      case StoryAnchor::go_runtime_frame:
        return true;
      default:
        return true;
    }
  }
  return false;
}


Severity story_severity(const StoryFacts& story, const FailureSignature& sig, Level level,
                      const std::vector<std::string_view>& texts) {
  // A failure the server survives: a request's traceback in the API server, a retried download.
  auto survived = [](std::string_view t) {
    return contains(t, "Exception in ASGI application") || contains(t, "Error in preprocessing prompt inputs") ||
           contains(t, "Retrying") || contains(t, "retrying") || contains(t, "will retry") ||
           contains(t, "Task exception was never retrieved");
  };
  if (survived(story.context_text)) return Severity::info;
  for (auto t : texts) {
    if (survived(t)) return Severity::info;
  }
  if (level == Level::critical) return Severity::critical;
  for (auto a : story.anchors) {
    if (fatal_anchor(a)) return Severity::critical;
    if (a == StoryAnchor::rust_panic && contains(sig.terminal, "thread 'main'")) return Severity::critical;
  }
  for (auto t : texts) {
    if (contains(t, "EngineDeadError") || contains(t, "EngineCore failed to start") ||
        contains(t, "Engine core initialization failed") || contains(t, "SystemExit") ||
        contains(t, "process has terminated") || contains(t, "died unexpectedly"))
      return Severity::critical;
  }
  // A traceback the interpreter printed itself (no logger around it) ends the process, unless a thread died.
  const bool traceback = std::find(story.anchors.begin(), story.anchors.end(), StoryAnchor::traceback) !=
                         story.anchors.end();
  if (traceback && !texts.empty() && story.first_unprefixed &&
      story.first_level == Level::unknown && !contains(story.context_text, "Exception in thread") &&
      !contains(texts.front(), "Exception in thread"))
    return Severity::critical;
  return Severity::warning;
}


}  // namespace faultline::fingerprint_detail
