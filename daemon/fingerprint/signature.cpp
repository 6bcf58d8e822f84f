// The grouping half of the room: the terminal line of a story, its type and message template, the innermost
// frames, and the fingerprint over them (prefixes and templates: normalise.cpp). Pure functions over text; no regex
// engine (linear scans by hand).
#include <algorithm>
#include <cctype>
#include <optional>

#include "exception_line.hpp"
#include "faultline/fingerprint.hpp"
#include "text_scan.hpp"

namespace faultline {

using namespace fingerprint_detail;
using namespace std::string_view_literals;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space_or_tab(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_space_or_tab(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Whether `word` occurs in t right after a space. (Searched for by its own first letter: a search for " word" stops
// at every space of the line.)
bool after_space(std::string_view t, std::string_view word) {
  for (std::size_t p = t.find(word); p != std::string_view::npos; p = t.find(word, p + 1)) {
    if (p > 0 && t[p - 1] == ' ') return true;
  }
  return false;
}

std::string_view basename(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A frame as a story's lines print it, a view into them: a Python frame's file and function, or a native or Go
// function. Its text ("model_runner.py:capture", "ray::gcs::Client::Connect") is made only for the frames a
// signature keeps.
struct FrameRef {
  std::string_view file;      // Python frames only
  std::string_view function;
  bool python = false;
  std::string text() const {
    return python ? std::string(file).append(":").append(function) : std::string(function);
  }
};

// `  File "/x/y/model_runner.py", line 782, in capture` (traceback) or `  File "...", line 77 in capture_begin`
// (faulthandler) → "model_runner.py:capture".
std::optional<FrameRef> python_frame(std::string_view t) {
  if (!t.starts_with("File \"")) return std::nullopt;
  auto close = t.find('"', 6);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view file = basename(t.substr(6, close - 6));
  auto in = t.find(" in "sv, close);
  std::string_view func = in == std::string_view::npos ? std::string_view() : trim(t.substr(in + 4));
  return FrameRef{file, func, true};
}

// Native frames: "@     0x7f1b5f90339a  ray::gcs::Client::Connect()", "#3 0x... in foo (libx.so)",
// "frame #2: c10::Error::Error(...) + 0x..". Logging and runtime frames are skipped.
std::optional<FrameRef> native_frame(std::string_view t) {
  std::string_view sym;
  if (t.starts_with("@ ")) {
    t = trim(t.substr(2));
    auto sp = t.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    t = trim(t.substr(sp));
    if (t.starts_with("(unknown)") || t.starts_with("...")) return std::nullopt;
    // "1247139872  (unknown)": a size column, then the symbol.
    if (!t.empty() && is_digit(t[0])) {
      auto sp2 = t.find(' ');
      if (sp2 == std::string_view::npos) return std::nullopt;
      t = trim(t.substr(sp2));
    }
    sym = next_word(t);
  } else if (t.starts_with("frame #")) {
    auto colon = t.find(": "sv);
    if (colon == std::string_view::npos) return std::nullopt;
    sym = t.substr(colon + 2);
    auto cut = sym.find_first_of("(+ ");
    sym = sym.substr(0, cut);
  } else if (t.size() > 2 && t[0] == '#' && is_digit(t[1])) {
    auto in = t.find(" in "sv);
    if (in == std::string_view::npos) return std::nullopt;
    sym = next_word(t.substr(in + 4));
    auto cut = sym.find('(');
    sym = sym.substr(0, cut);
  } else {
    return std::nullopt;
  }
  if (sym.empty() || sym.starts_with("(unknown)") || sym.starts_with("google::") || sym.starts_with("absl::") ||
      sym.starts_with("c10::Error") || sym.starts_with("c10::detail::") || sym.starts_with("_Py") ||
      sym.starts_with("Py") || sym.starts_with("__libc") || sym.starts_with("_start") ||
      sym.find("RayLog"sv) != std::string_view::npos || sym.find("LogMessage"sv) != std::string_view::npos)
    return std::nullopt;
  return FrameRef{{}, sym};
}

// A Go frame's function line, "net/http.(*Server).Serve(0xc000320700, {...})" → "http.(*Server).Serve": the name
// before the argument list, without its package path.
std::optional<FrameRef> go_function(std::string_view t) {
  if (t.size() < 3 || t.back() != ')' || t.find(' ') < t.find('(')) return std::nullopt;
  // The argument list is the last top-level parenthesis group.
  int depth = 0;
  std::size_t open = std::string_view::npos;
  for (std::size_t k = t.size(); k-- > 0;) {
    if (t[k] == ')') ++depth;
    else if (t[k] == '(' && --depth == 0) {
      open = k;
      break;
    }
  }
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  std::string_view name = basename(t.substr(0, open));
  if (name.find('.') == std::string_view::npos) return std::nullopt;
  return FrameRef{{}, name};
}

// "RuntimeError: CUDA error: ..." → ("RuntimeError", "CUDA error: ..."); "KeyboardInterrupt" → (it, "").
std::optional<std::pair<std::string_view, std::string_view>> exception_line(std::string_view t) {
  std::size_t i = 0;
  while (i < t.size() && (is_word(t[i]) || t[i] == '.')) ++i;
  if (i == 0 || !is_alpha(t[0])) return std::nullopt;
  std::string_view type = t.substr(0, i);
  if (i == t.size()) {
    // A bare class: "KeyboardInterrupt", "asyncio.exceptions.CancelledError", "uvicorn.protocols.utils.ClientDisconnected".
    const auto dot = type.rfind('.');
    bool looks = type.ends_with("Error") || type.ends_with("Exception") || type.ends_with("Interrupt") ||
                 type.ends_with("Exit") || type.ends_with("Warning") || type.ends_with("Disconnected") ||
                 (dot != std::string_view::npos && dot + 1 < type.size() && std::isupper(static_cast<unsigned char>(type[dot + 1])));
    return looks ? std::optional(std::pair(type, std::string_view())) : std::nullopt;
  }
  if (t[i] != ':') return std::nullopt;
  return std::pair(type, trim(t.substr(i + 1)));
}

std::string type_key(std::string_view type) {
  // The same exception class moves between modules across versions (torch.cuda.OutOfMemoryError,
  // torch.OutOfMemoryError): group on its own name.
  if (!type.empty() && is_alpha(type[0]) && type.find(' ') == std::string_view::npos) {
    auto dot = type.rfind('.');
    if (dot != std::string_view::npos) return std::string(type.substr(dot + 1));
  }
  return std::string(type);
}

struct Candidate {
  int rank = -1;
  std::size_t index = 0;
  std::string type;
  std::string message;
  std::vector<FrameRef> frames;
};

}  // namespace

FailureSignature signature_of(const std::vector<std::string_view>& raw) {
  std::vector<std::string_view> lines;
  lines.reserve(raw.size());
  for (auto l : raw) lines.push_back(strip_log_prefix(l));
  return fingerprint_detail::signature_of_stripped(raw, lines);
}

FailureSignature fingerprint_detail::signature_of_stripped(const std::vector<std::string_view>& raw,
                                                           const std::vector<std::string_view>& lines) {

  Candidate best;
  // (Its strings are made only for the candidate that wins over the best so far.)
  auto offer = [&best](int rank, std::size_t index, std::string_view type, std::string_view message,
                       std::vector<FrameRef> frames) {
    if (rank <= best.rank) return;
    best.rank = rank;
    best.index = index;
    best.type.assign(type);
    best.message.assign(message);
    best.frames = std::move(frames);
  };

  std::vector<FrameRef> py_frames;     // of the traceback being read, outermost first
  std::vector<FrameRef> native;        // native frames seen so far, innermost first (as dumps print them)
  bool in_traceback = false;
  bool in_stack_first = false;         // faulthandler's "Stack (most recent call first):"
  std::vector<FrameRef> stack_first;
  std::string pending_terminate;       // the type of a "terminate called after throwing" awaiting its what()
  std::size_t last_py_frame = 0;       // index of the latest Python frame line
  std::vector<FrameRef> go_frames;     // a Go runtime dump's functions, in the order printed (innermost first)
  std::optional<std::size_t> go_dump;  // index of its first frame line ("file.go:N +0x.. fp=0x.. sp=.. pc=..")
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = trim(lines[i]);
    const bool indented = !lines[i].empty() && is_space_or_tab(lines[i][0]);
    if (t.empty()) continue;
    if (after_space(t, "fp=0x"sv) && after_space(t, "sp=0x"sv)) {
      if (!go_dump) go_dump = i;
      continue;
    }
    if (!indented && i + 1 < lines.size()) {
      // A Go frame: the function line, then its location line ("runtime/proc.go:435 +0xce ...").
      std::string_view next = trim(lines[i + 1]);
      auto colon = next.find(':');
      if (colon != std::string_view::npos && (next.substr(0, colon).ends_with(".go") ||
                                              next.starts_with("<autogenerated>:"))) {
        if (auto f = go_function(t)) {
          go_frames.push_back(*f);
          continue;
        }
      }
    }
    if (auto f = python_frame(t)) {
      if (in_stack_first) stack_first.push_back(*f);
      else py_frames.push_back(*f);
      last_py_frame = i;
      continue;
    }
    if (auto f = native_frame(t)) {
      if (native.size() < 3) native.push_back(*f);
      continue;
    }
    if (t.find("Traceback (most recent call last):"sv) != std::string_view::npos) {
      in_traceback = true;
      in_stack_first = false;
      py_frames.clear();
      continue;
    }
    if (t.starts_with("Stack (most recent call first)") || t.starts_with("Current thread ") ||
        t.starts_with("Thread 0x")) {
      in_stack_first = true;
      continue;
    }
    if (in_traceback && !indented) {
      if (auto ex = exception_line(t)) {
        std::vector<FrameRef> frames;
        for (auto it = py_frames.rbegin(); it != py_frames.rend() && frames.size() < 3; ++it) frames.push_back(*it);
        offer(3, i, ex->first, ex->second, std::move(frames));
        in_traceback = false;
        continue;
      }
    }
    if (in_traceback && indented) continue;  // source lines and carets of a frame
    if (!in_traceback && !indented) {
      // An exception's last line whose traceback was not logged (or was cut from an excerpt).
      if (auto ex = exception_line(t);
          ex && (!ex->second.empty() || t.back() == ':') && !fingerprint_detail::exception_class(t).empty()) {
        offer(2, i, ex->first, ex->second, {});
        continue;
      }
    }
    if (auto p = t.find("Fatal Python error: "sv); p != std::string_view::npos) {
      // Its frames follow ("Stack (most recent call first):"): fixed up below.
      offer(3, i, "Fatal Python error", t.substr(p + 20), {});
      continue;
    }
    if (auto p = t.find("terminate called after throwing an instance of "sv); p != std::string_view::npos) {
      pending_terminate = "terminate " + std::string(trim(t.substr(p + 47)));
      pending_terminate.erase(std::remove(pending_terminate.begin(), pending_terminate.end(), '\''),
                              pending_terminate.end());
      offer(2, i, pending_terminate, "", {});
      continue;
    }
    if (auto p = t.find("terminate called"sv); p != std::string_view::npos) {
      offer(2, i, "terminate", t.substr(p), {});
      continue;
    }
    if (auto p = t.find("what():"sv); p != std::string_view::npos) {
      offer(3, i, pending_terminate.empty() ? "terminate" : pending_terminate, trim(t.substr(p + 7)), {});
      continue;
    }
    if (auto p = t.find("Check failed: "sv); p != std::string_view::npos) {
      offer(3, i, "Check failed", t.substr(p + 14), {});
      continue;
    }
    if (auto p = t.find("Assertion"sv); p != std::string_view::npos &&
                                        (t.find("Assertion failed"sv) != std::string_view::npos ||
                                         t.find("' failed"sv) != std::string_view::npos)) {
      const auto colon = t.find("Assertion failed: "sv);
      offer(3, i, "Assertion failed", colon == std::string_view::npos ? t : trim(t.substr(colon + 18)), {});
      continue;
    }
    if (auto p = t.find("' panicked at "sv);
        p != std::string_view::npos && t.find("thread '"sv) != std::string_view::npos) {
      std::string_view where = t.substr(p + 14);
      auto sp = where.find(' ');
      std::string_view loc = sp == std::string_view::npos ? where : where.substr(0, sp);
      while (!loc.empty() && (loc.back() == ':' || loc.back() == ',')) loc.remove_suffix(1);
      // The location's file, without line and column: "server.rs".
      std::string_view file = basename(loc.substr(0, loc.find(':')));
      std::string_view message = sp == std::string_view::npos ? std::string_view() : trim(where.substr(sp));
      if (message.empty() && i + 1 < lines.size()) message = trim(lines[i + 1]);
      offer(3, i, "panic", message, {FrameRef{{}, file}});
      continue;
    }
    if (t.starts_with("panic: ")) {
      offer(3, i, "panic", t.substr(7), {});
      continue;
    }
    if (t.find("CUDA error: "sv) != std::string_view::npos || t.find("CUDA error "sv) != std::string_view::npos ||
        t.find("CUBLAS_STATUS_"sv) != std::string_view::npos || t.find("CUDNN_STATUS_"sv) != std::string_view::npos ||
        t.find("cudaError"sv) != std::string_view::npos || t.find("CUDA_ERROR_"sv) != std::string_view::npos) {
      if (auto ex = exception_line(t)) offer(2, i, ex->first, ex->second, {});
      else offer(2, i, "CUDA error", t, {});
      continue;
    }
    if (glog_head(next_word(raw[i])) && raw[i].starts_with("F")) {
      offer(2, i, "fatal", t, {});
      continue;
    }
    if (t.find("[Errno "sv) != std::string_view::npos) {
      if (auto ex = exception_line(t)) offer(1, i, ex->first, ex->second, {});
      else offer(1, i, "Errno", t, {});
      continue;
    }
    if (t.find("Segmentation fault"sv) != std::string_view::npos || t.find("SIGSEGV"sv) != std::string_view::npos) {
      offer(1, i, "signal", "Segmentation fault", {});
      continue;
    }
    if (t.find("SIGABRT"sv) != std::string_view::npos || t.find("Aborted"sv) != std::string_view::npos) {
      offer(1, i, "signal", "Aborted", {});
      continue;
    }
    if (t.find("SIGBUS"sv) != std::string_view::npos || t.find("Bus error"sv) != std::string_view::npos) {
      offer(1, i, "signal", "Bus error", {});
      continue;
    }
    if (t.find("SIGILL"sv) != std::string_view::npos || t.find("Illegal instruction"sv) != std::string_view::npos) {
      offer(1, i, "signal", "Illegal instruction", {});
      continue;
    }
    if (t.find("exit status"sv) != std::string_view::npos || t.find("exited with code"sv) != std::string_view::npos ||
        t.find("exitcode"sv) != std::string_view::npos || t.find("exit code"sv) != std::string_view::npos ||
        t.find("The program will terminate"sv) != std::string_view::npos) {
      offer(0, i, "exit", t, {});
      continue;
    }
  }
  if (best.type == "Fatal Python error") {
    for (std::size_t k = 0; k < stack_first.size() && best.frames.size() < 3; ++k) best.frames.push_back(stack_first[k]);
  }
  if (best.frames.empty() && best.rank >= 2) best.frames = native;

  FailureSignature sig;
  if (best.rank < 0 && go_dump) {
    // The Go runtime's crash dump without its panic or fatal error line: grouped by the first functions that are
    // not the runtime's own (the runtime's when there are no others).
    best = Candidate{0, *go_dump, "go runtime traceback", "", {}};
    for (const auto& f : go_frames) {
      if (!f.function.starts_with("runtime.") && best.frames.size() < 3) best.frames.push_back(f);
    }
    if (best.frames.empty()) {
      for (std::size_t k = 0; k < go_frames.size() && k < 3; ++k) best.frames.push_back(go_frames[k]);
    }
  } else if (best.rank < 0 && !py_frames.empty()) {
    // A traceback without its exception line (cut off, or its head and end not logged): grouped by its innermost
    // frames, the last printed.
    best = Candidate{0, last_py_frame, "traceback without its exception line", "", {}};
    for (auto it = py_frames.rbegin(); it != py_frames.rend() && best.frames.size() < 3; ++it) best.frames.push_back(*it);
  }
  if (best.rank < 0) {
    // No terminal line recognised: the story's first line stands for it.
    best.rank = 0;
    best.index = 0;
    best.type = "failure";
    best.message = lines.empty() ? std::string() : std::string(trim(lines[0]));
  }
  sig.rank = best.rank;
  sig.type = best.type;
  sig.message = best.message;
  sig.message_template = message_template(best.message);
  sig.frames.reserve(best.frames.size());
  for (const auto& f : best.frames) sig.frames.push_back(f.text());
  sig.terminal_index = std::min(best.index, lines.empty() ? 0 : lines.size() - 1);
  sig.terminal = lines.empty() ? std::string() : std::string(trim(lines[sig.terminal_index]));
  std::uint64_t h = kFnv1a64Offset;
  auto mix = [&h](std::string_view part) { h = fnv1a64(std::string_view("\0", 1), fnv1a64(part, h)); };
  mix(type_key(sig.type));
  mix(sig.message_template);
  for (const auto& f : sig.frames) mix(f);
  sig.fingerprint = hex16(h);
  return sig;
}

}  // namespace faultline
