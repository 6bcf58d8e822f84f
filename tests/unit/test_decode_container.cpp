// Decode room, container formats: CRI (P/F joining), docker json-file, auto-detection, ANSI and caret notation.
#include <catch2/catch.hpp>

#include <iterator>
#include <random>
#include <regex>

#include "decode/decode_internal.hpp"
#include "decode_support.hpp"

using namespace decode_test;

TEST_CASE("CRI: F lines, wrapper time wins, level comes from the message", "[decode]") {
  DecodeStats st;
  ContainerFormat fmt{};
  const std::string in = cri("2026-11-29T10:08:01.123456789Z", "stdout", 'F', "INFO 01-02 03:04:05 [a.py:1] hi") +
                         cri("2026-11-29T10:08:02Z", "stderr", 'F', "plain text") +
                         cri("2026-11-29T10:08:03Z", "stderr", 'F', "");
  const auto r = decode(in, options(), &st, &fmt);
  CHECK(fmt == ContainerFormat::cri);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == "INFO 01-02 03:04:05 [a.py:1] hi");
  CHECK(r[0].time == T("2026-11-29T10:08:01.123456789Z"));
  CHECK(r[0].from_log);
  CHECK(r[0].level == Level::info);
  CHECK(r[0].offset == 0);
  CHECK(r[1].text == "plain text");
  CHECK(r[1].level == Level::unknown);
  CHECK(r[1].line == 2);
  CHECK(st.malformed == 0);
}

TEST_CASE("CRI: P fragments join per stream, interleaved stdout and stderr", "[decode]") {
  DecodeStats st;
  const std::string in = cri("2026-11-29T10:00:01Z", "stdout", 'P', "out-a ") +   // line 1
                         cri("2026-11-29T10:00:02Z", "stderr", 'P', "err-a ") +   // line 2
                         cri("2026-11-29T10:00:03Z", "stdout", 'P', "out-b ") +   // line 3
                         cri("2026-11-29T10:00:04Z", "stderr", 'F', "err-b") +    // line 4
                         cri("2026-11-29T10:00:05Z", "stdout", 'F', "out-c") +    // line 5
                         cri("2026-11-29T10:00:06Z", "stdout", 'F', "single");    // line 6
  const std::size_t line1 = 0;
  const std::size_t line2 = in.find("2026-11-29T10:00:02Z");
  const auto r = decode(in, options(ContainerFormat::cri), &st);
  REQUIRE(texts(r) == std::vector<std::string>{"err-a err-b", "out-a out-b out-c", "single"});
  CHECK(r[0].line == 2);
  CHECK(r[0].offset == line2);
  CHECK(r[0].time == T("2026-11-29T10:00:02Z"));  // the time of the first fragment
  CHECK(r[1].line == 1);
  CHECK(r[1].offset == line1);
  CHECK(r[2].line == 6);
  CHECK(st.partials_joined == 3);
  CHECK(st.lines == 3);
}

TEST_CASE("CRI: committed_offset stays at an open P chain", "[decode]") {
  Decoder d(0, options(ContainerFormat::cri));
  RecordBatch b;
  const std::string p1 = cri("2026-11-29T10:00:01Z", "stdout", 'P', "begin ");
  const std::string e1 = cri("2026-11-29T10:00:02Z", "stderr", 'F', "err");
  const std::string f1 = cri("2026-11-29T10:00:03Z", "stdout", 'F', "end");
  d.feed(p1 + e1, kRead, b);
  REQUIRE(b.size() == 1);
  CHECK(d.committed_offset() == 0);
  CHECK(d.committed_line() == 1);
  CHECK(d.has_partial());
  d.feed(f1, kRead, b);
  REQUIRE(b.size() == 2);
  CHECK(b.text(1) == "begin end");
  CHECK(d.committed_offset() == p1.size() + e1.size() + f1.size());
  CHECK(d.committed_line() == 4);
  CHECK_FALSE(d.has_partial());
}

TEST_CASE("CRI: a P chain longer than max_line_bytes is truncated and counted", "[decode]") {
  DecodeStats st;
  std::string in;
  for (int i = 0; i < 10; ++i) in += cri("2026-11-29T10:00:01Z", "stdout", 'P', std::string(30, char('a' + i)));
  in += cri("2026-11-29T10:00:02Z", "stdout", 'F', "tail");
  in += cri("2026-11-29T10:00:03Z", "stdout", 'F', "next");
  const auto r = decode(in, options(ContainerFormat::cri, 100), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == std::string(30, 'a') + std::string(30, 'b') + std::string(30, 'c') + std::string(10, 'd'));
  CHECK(r[0].truncated);
  CHECK(r[0].line == 1);
  CHECK(r[1].text == "next");
  CHECK(r[1].line == 12);
  CHECK(st.truncated == 1);
  CHECK(st.partials_joined == 10);
}

TEST_CASE("CRI: CR inside a joined message splits records; flush emits open chains", "[decode]") {
  const std::string l1 = cri("2026-11-29T10:00:01Z", "stdout", 'P', " 10%|#\r 20%|##");
  const std::string l2 = cri("2026-11-29T10:00:02Z", "stdout", 'P', "#\r 30%");
  const auto r = decode(l1 + l2, options(ContainerFormat::cri));
  REQUIRE(texts(r) == std::vector<std::string>{" 10%|#", " 20%|###", " 30%"});
  CHECK(r[0].offset == 0);
  CHECK(r[1].offset == l1.find(" 20%"));
  CHECK(r[2].offset == l1.size() + l2.find(" 30%"));
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(r[2].time == T("2026-11-29T10:00:02Z"));
  for (const auto& x : r) CHECK(x.line == 1);
}

TEST_CASE("CRI: lines that do not fit are kept as raw text and counted", "[decode]") {
  DecodeStats st;
  const std::string in = cri("2026-11-29T10:00:01Z", "stdout", 'F', "ok") + "garbage line\n" +
                         "2026-11-29T10:00:01Z stdlog F bad stream\n" + cri("2026-11-29T10:00:02Z", "stdout", 'F', "ok2");
  const auto r = decode(in, options(), &st);
  REQUIRE(texts(r) == std::vector<std::string>{"ok", "garbage line", "2026-11-29T10:00:01Z stdlog F bad stream",
                                               "ok2"});
  CHECK(st.malformed == 2);
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));  // inherited from the previous record
  CHECK_FALSE(r[1].from_log);
  CHECK(r[2].from_log);  // the message itself starts with an RFC 3339 time
}

namespace {

// `log` fed whole and fed one byte at a time, as `format` and auto-detected, at one line bound: the same records and
// counts. It must hold malformed lines and partial entries.
void require_whole_as_bytewise_at(const std::string& log, ContainerFormat format, std::size_t max_line) {
  for (ContainerFormat f : {format, ContainerFormat::auto_detect}) {
    DecodeStats whole_stats, bytewise_stats;
    const auto whole = decode(log, options(f, max_line), &whole_stats);
    const auto bytewise = decode_chunked(log, options(f, max_line), {1}, &bytewise_stats);
    REQUIRE(whole.size() > 3000);
    REQUIRE(bytewise.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) REQUIRE(whole[i] == bytewise[i]);
    CHECK(whole_stats.lines == bytewise_stats.lines);
    CHECK(whole_stats.malformed == bytewise_stats.malformed);
    CHECK(whole_stats.partials_joined == bytewise_stats.partials_joined);
    CHECK(whole_stats.truncated == bytewise_stats.truncated);
    CHECK(whole_stats.malformed > 50);
    CHECK(whole_stats.partials_joined > 300);
  }
}

// The same at three line bounds, with each vector code this CPU runs for the one-pass paths.
void require_whole_as_bytewise(const std::string& log, ContainerFormat format) {
  for_each_vector_framing([&](decode_detail::VectorFraming framing) {
    for (std::size_t max_line : {std::size_t{64 * 1024}, std::size_t{100}, std::size_t{30}}) {
      INFO("framing " << static_cast<int>(framing) << ", max_line " << max_line);
      require_whole_as_bytewise_at(log, format, max_line);
    }
  });
}

// The message of line i of a generated log: a vLLM prefix on every third, letters of a random length (now and then
// long), and every 13th one of the `odd` pieces in the middle.
std::string message_of(std::mt19937& rng, int i, const std::string* odd, std::size_t odd_count) {
  std::uniform_int_distribution<int> len(0, i % 40 == 0 ? 400 : 120);
  std::string msg = i % 3 == 0 ? "INFO 11-29 10:08:01 [a.py:1] " : "";
  const int n = len(rng);
  for (int k = 0; k < n; ++k) msg.push_back(static_cast<char>('a' + (k * 5 + i) % 26));
  if (i % 13 == 4) msg.insert(msg.size() / 2, odd[static_cast<std::size_t>(i / 13) % odd_count]);
  return msg;
}

}  // namespace

TEST_CASE("CRI: lines taken whole from the bytes fed give the records that taking them piece by piece gives",
          "[decode]") {
  // Fed in one piece, whole plain 'F' lines take the one-pass path; fed one byte at a time no line is ever whole, so
  // every line takes the general one. Lines of every kind the one-pass path must leave to the general path: 'P'
  // chains open on one stream while the other writes, CR, ESC and caret codes in the message and in a tag, empty
  // messages, tags ("F:x"), malformed headers and times, messages over max_line and lines over the wrapper's bound.
  std::mt19937 rng(20261203);
  const std::string times[] = {"2026-11-29T10:08:01.123456789Z", "2026-11-29T10:08:01Z", "2026-11-29T10:08:02.5Z",
                               "2026-11-29T10:08:03+01:00", "2026-11-29T10:08:0xZ", "2026-11-30T00:00:00.000000001Z"};
  const std::string odd[] = {"\r", "\x1b[31m", "^[[0m", "^M", "^Mixtral", "   ", "\t", std::string("\0", 1), "\xc3\xa9"};
  std::string log = cri("2026-11-29T10:08:00Z", "stdout", 'F', "the first line tells the format");
  for (int i = 0; i < 4000; ++i) {
    std::string msg = message_of(rng, i, odd, std::size(odd));
    const char* stream = i % 5 == 0 ? "stderr" : "stdout";
    const char tag = i % 11 == 7 ? 'P' : 'F';
    const std::string& time = times[i % 29 == 0 ? 4 : (i / 3) % 6 == 4 ? 0 : (i / 3) % 6];
    if (i % 37 == 9) log += time + " " + stream + " F:x^y " + msg + "\n";  // a tag with a special byte
    else if (i % 41 == 8) log += "garbage " + msg + "\n";
    else if (i % 43 == 2) log += time + " " + stream + " F\n";  // no message, no space
    else if (i % 47 == 6) log += "\n";
    else log += cri(time, stream, tag, msg);
  }
  log += cri("2026-11-29T10:09:00Z", "stdout", 'F', std::string(70000, 'z'));  // over the wrapper's bound
  log += cri("2026-11-29T10:09:01Z", "stdout", 'F', "after the long one");
  log += cri("2026-11-29T10:09:02Z", "stderr", 'P', "open at the end");
  require_whole_as_bytewise(log, ContainerFormat::cri);
}

// ---- docker json-file ------------------------------------------------------------------------------------------------

TEST_CASE("docker: escapes decode to UTF-8, stream and time are read", "[decode]") {
  const std::string in =
      R"({"log":"a\tb \"q\" back\\slash \/ caf\u00e9 \ud83d\ude00 lone\ud800x \u001b[31mred\u001b[0m\n","stream":"stderr","time":"2026-11-29T10:08:01.123456789Z"})"
      "\n";
  ContainerFormat fmt{};
  DecodeStats st;
  const auto r = decode(in, options(), &st, &fmt);
  CHECK(fmt == ContainerFormat::docker);
  REQUIRE(r.size() == 1);
  CHECK(r[0].text == "a\tb \"q\" back\\slash / caf\xC3\xA9 \xF0\x9F\x98\x80 lone\xEF\xBF\xBDx red");
  CHECK(r[0].time == T("2026-11-29T10:08:01.123456789Z"));
  CHECK(r[0].from_log);
  CHECK(st.malformed == 0);
}

TEST_CASE("docker: a log without a final newline joins the next entry (16 KiB splits)", "[decode]") {
  DecodeStats st;
  const std::string a(16 * 1024, 'A');
  const std::string b2(16 * 1024, 'B');
  const std::string in = docker(a, "stdout", "2026-11-29T10:00:01Z") + docker("other\n", "stderr", "2026-11-29T10:00:02Z") +
                         docker(b2, "stdout", "2026-11-29T10:00:03Z") + docker("end\n", "stdout", "2026-11-29T10:00:04Z");
  const auto r = decode(in, options(), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == "other");
  CHECK(r[1].text == a + b2 + "end");
  CHECK(r[1].line == 1);
  CHECK(r[1].offset == 0);
  CHECK(r[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(st.partials_joined == 2);
}

TEST_CASE("docker: key order, extra attributes and CRLF output", "[decode]") {
  const std::string in =
      R"({"time":"2026-11-29T10:00:01Z","attrs":{"tag":"x","n":[1,{"a":"}"}]},"stream":"stdout","log":"WARNING 11-29 10:00:00 [a.py:1] w\r\n"})"
      "\n";
  DecodeStats st;
  const auto r = decode(in, options(ContainerFormat::docker), &st);
  REQUIRE(r.size() == 1);
  CHECK(r[0].text == "WARNING 11-29 10:00:00 [a.py:1] w");
  CHECK(r[0].level == Level::warning);
  CHECK(r[0].time == T("2026-11-29T10:00:01Z"));
  CHECK(st.malformed == 0);
}

TEST_CASE("docker: malformed JSON is kept as raw text", "[decode]") {
  DecodeStats st;
  const std::string good = docker("fine\n", "stdout", "2026-11-29T10:00:01Z");
  const std::string in = good + "{\"log\":\"unterminated\n" + "{\"log\":\"bad escape \\q\",\"stream\":\"stdout\"}\n" +
                         "{\"stream\":\"stdout\",\"time\":\"2026-11-29T10:00:01Z\"}\n" + "plain\n" + good;
  const auto r = decode(in, options(), &st);
  REQUIRE(r.size() == 6);
  CHECK(r[0].text == "fine");
  CHECK(r[1].text == "{\"log\":\"unterminated");
  CHECK(r[4].text == "plain");
  CHECK(r[5].text == "fine");
  CHECK(st.malformed == 4);
}

TEST_CASE("docker: a JSON line over its buffer bound is cut but its log prefix kept", "[decode]") {
  DecodeStats st;
  const std::string huge(600 * 1024, 'q');
  const std::string in = docker(huge + "\n", "stdout", "2026-11-29T10:00:01Z") + docker("after\n", "stdout", "2026-11-29T10:00:02Z");
  const auto r = decode(in, options(ContainerFormat::docker, 1000), &st);
  REQUIRE(r.size() == 2);
  CHECK(r[0].text == std::string(1000, 'q'));
  CHECK(r[0].truncated);
  CHECK(r[1].text == "after");
  CHECK(r[1].line == 2);
  CHECK(st.truncated == 1);
}

TEST_CASE("docker: lines taken whole from the bytes fed give the records that taking them piece by piece gives",
          "[decode]") {
  // As for CRI: fed whole, plain lines in the driver's layout take the one-pass path; fed byte by byte, none does.
  // Between them, every line the one-pass path must leave to parse_docker: escapes (quote, tab, \u, a "\n" inside),
  // raw CR, ESC and '^' in the text, entries without the final "\n" (partials, open while the other stream writes),
  // other key orders and extra keys, a time with an escape, times that do not parse, text over max_line, malformed
  // JSON and a line over the wrapper's bound.
  std::mt19937 rng(20261204);
  const char* times[] = {"2026-11-29T10:08:01.123456789Z", "2026-11-29T10:08:01Z", "2026-11-29T10:08:02.5Z",
                         "2026-11-29T10:08:03+01:00", "not a time", "2026-11-30T00:00:00.000000001Z"};
  const std::string odd[] = {"\"", "\t", "\x1b[31m", "^[[0m", "\r", "\n", "\\", "\xc3\xa9", "^M", std::string("\0", 1)};
  std::string log = docker("the first line tells the format\n", "stdout", "2026-11-29T10:08:00Z");
  for (int i = 0; i < 4000; ++i) {
    std::string msg = message_of(rng, i, odd, std::size(odd));
    if (i % 11 != 7) msg += "\n";  // else a partial entry
    const char* stream = i % 5 == 0 ? "stderr" : "stdout";
    const char* time = times[i % 29 == 0 ? 4 : (i / 3) % 6 == 4 ? 0 : (i / 3) % 6];
    std::string line = docker(msg, stream, time);
    if (i % 37 == 9) line = "{\"stream\":\"" + std::string(stream) + "\",\"log\":" + json_quote(msg) + ",\"time\":\"" + time + "\"}\n";
    else if (i % 41 == 8) line = "{\"log\":" + json_quote(msg) + ",\"stream\":\"stdout\",\"time\":\"" + time + "\",\"attrs\":{}}\n";
    else if (i % 43 == 2) line = "{\"log\":" + json_quote(msg) + ",\"stream\":\"stdout\",\"time\":\"2026-11-29T10:08:0\\u0031Z\"}\n";
    else if (i % 47 == 6) line = "{\"log\":\"broken " + msg.substr(0, 5) + "\n";
    else if (i % 59 == 3) line = "{\"log\":\"a\\/b\\bc\\fd\\\\e\\\"f\\n\",\"stream\":\"stderr\",\"time\":\"" + std::string(time) + "\"}\n";
    else if (i % 53 == 1) line = "{\"log\":\"raw CR\rinside\\n\",\"stream\":\"stdout\",\"time\":\"" + std::string(time) + "\"}\n";
    log += line;
  }
  log += docker(std::string(140000, 'z') + "\n", "stdout", "2026-11-29T10:09:00Z");  // over the wrapper's bound
  log += docker("after the long one\n", "stdout", "2026-11-29T10:09:01Z");
  log += docker("open at the end", "stderr", "2026-11-29T10:09:02Z");
  require_whole_as_bytewise(log, ContainerFormat::docker);
}

TEST_CASE("docker: the driver's own layout reads as the general JSON reader reads it", "[decode]") {
  // Each entry once in the layout docker writes (read as a view into the line) and once with a space after '{'
  // (read by the general reader): the records must be the same but for their offsets.
  const std::vector<std::string> entries = {
      R"({"log":"plain line\n","stream":"stdout","time":"2026-11-29T10:00:01.5Z"})",
      R"({"log":"first half ","stream":"stderr","time":"2026-11-29T10:00:02Z"})",
      R"({"log":"second half\n","stream":"stderr","time":"2026-11-29T10:00:03Z"})",
      R"({"log":"ends in a backslash-n \\n","stream":"stdout","time":"2026-11-29T10:00:04Z"})",
      R"({"log":"tail\n","stream":"stdout","time":"2026-11-29T10:00:05Z"})",
      R"({"log":"quote \" inside\n","stream":"stdout","time":"2026-11-29T10:00:06Z"})",
      R"({"log":"two\n\n","stream":"stdout","time":"2026-11-29T10:00:07Z"})",
      R"({"log":"","stream":"stdout","time":"2026-11-29T10:00:08Z"})",
      R"({"log":"bad time\n","stream":"stdout","time":"yesterday"})",
      R"({"log":"cr at the end\n","stream":"stdout","time":"2026-11-29T10:00:09Z"})" "\r",
      R"({"log":"no stream\n","stream":"other","time":"2026-11-29T10:00:10Z"})",
      R"({"log":"escapes \"q\" back\\slash \/ tab\t ff\f bs\b cr\r mid\nline\n","stream":"stdout","time":"2026-11-29T10:00:12Z"})",
      R"({"log":"quoted then partial \"","stream":"stderr","time":"2026-11-29T10:00:13Z"})",
      R"({"log":" and the rest \"\n","stream":"stderr","time":"2026-11-29T10:00:14Z"})",
      R"({"log":"unicode caf\u00e9 \"x\"\n","stream":"stdout","time":"2026-11-29T10:00:15Z"})",
      R"({"log":"ends in a backslash \\","stream":"stdout","time":"2026-11-29T10:00:17Z"})",
      R"({"log":"last\n","stream":"stdout","time":"2026-11-29T10:00:11Z"})",
  };
  std::string plain, spaced;
  for (const auto& e : entries) {
    plain += e + "\n";
    spaced += "{ " + e.substr(1) + "\n";
  }
  DecodeStats st_plain, st_spaced;
  const auto a = decode(plain, options(ContainerFormat::docker), &st_plain);
  const auto b = decode(spaced, options(ContainerFormat::docker), &st_spaced);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    Rec x = a[i];
    x.offset = b[i].offset;
    CHECK(x == b[i]);
  }
  CHECK(st_plain.malformed == st_spaced.malformed);
  CHECK(st_plain.partials_joined == st_spaced.partials_joined);
  CHECK(texts(a) == std::vector<std::string>{"plain line", "first half second half",
                                             "ends in a backslash-n \\ntail", "quote \" inside", "two",
                                             "bad time", "cr at the end", "no stream", "escapes \"q\" back\\slash / tab\t ff\f bs\b cr",
                                             " mid", "line", "quoted then partial \" and the rest \"",
                                             "unicode caf\xC3\xA9 \"x\"",
                                             "ends in a backslash \\last"});
  CHECK(a[0].time == T("2026-11-29T10:00:01.5Z"));
  CHECK(a[1].stream == b[1].stream);
  CHECK(st_plain.partials_joined == 5);
  CHECK(st_plain.malformed == 0);
  // A bad escape in the driver's layout is malformed, as anywhere else: the line is kept as it is.
  const std::string bad = R"({"log":"bad \"escape\" \q\n","stream":"stdout","time":"2026-11-29T10:00:16Z"})";
  DecodeStats st_bad;
  const auto c = decode(bad + "\n", options(ContainerFormat::docker), &st_bad);
  REQUIRE(c.size() == 1);
  CHECK(c[0].text == bad);
  CHECK(st_bad.malformed == 1);
}

namespace {

// Times the wrapper clock must read as parse_rfc3339 does: the runtimes' forms, texts of their lengths that are not
// them, and one to eight digits with one byte that is no digit at every place.
std::vector<std::string> wrapper_times() {
  const std::vector<std::string> times = {
      "2026-11-29T10:08:01.0015Z", "2026-11-29T10:08:01.9Z", "2026-11-29T10:08:01Z", "2026-11-29T10:08:01,25z",
      "2026-11-29T10:08:01.123456789123Z", "2026-11-29T10:08:01.Z", "2026-11-29T10:08:01.5+02:00",
      "2026-11-29T10:08:01.5", "2026-11-29T10:08:01.5Zx", "2026-11-29T10:08:01", "2026-11-29T10:08:02.000000001Z",
      "2026-11-29T10:08:01.5Z", "2026-02-30T10:08:01.5Z", "2026-02-30T10:08:01.6Z", "2016-12-31T23:59:60.5Z",
      "2026-11-29 10:08:03.25Z", "2026-11-29T10:08:0x.5Z", "2026-11-29T10:08:01.5Z", "x", "",
      // Nine digits and 'Z' (read eight digits at once), and texts of that length that are not it.
      "2026-11-29T10:08:01.123456789Z", "2026-11-29T10:08:01,987654321z", "2026-11-29T10:08:01.000000000Z",
      "2026-11-29T10:08:01.999999999Z", "2026-11-29T10:08:01.900000001Z", "2026-11-29T10:08:01.12345678xZ",
      "2026-11-29T10:08:01.1234/6789Z", "2026-11-29T10:08:01.1234:6789Z", "2026-11-29T10:08:01.x23456789Z",
      "2026-11-29T10:08:01.1234567\xff" "9Z", "2026-11-29T10:08:01.123456789+", "2026-11-29T10:08:01 123456789Z",
      "2026-11-29T10:08:01.12345678Z", "2026-11-29T10:08:01.1234567890Z"};
  // One to eight digits (read at once, with the bytes before them set aside), and those with one byte that is no
  // digit, at every place.
  std::vector<std::string> cut = times;
  for (std::size_t n = 1; n <= 8; ++n) {
    const std::string digits = std::string("98765432").substr(0, n);
    cut.push_back("2026-11-29T10:08:01." + digits + "Z");
    cut.push_back("2026-11-29T10:08:01," + std::string(n, '0') + "z");
    cut.push_back("2026-11-29T10:08:01." + std::string(n - 1, '0') + "1Z");
    for (std::size_t at = 0; at < n; ++at) {
      for (const char bad : {'/', ':', 'a', ' ', '\xff', '\0'}) {
        std::string d = digits;
        d[at] = bad;
        cut.push_back("2026-11-29T10:08:01." + d + "Z");
      }
    }
  }
  return cut;
}

}  // namespace

TEST_CASE("the wrapper clock reads every time as parse_rfc3339 does, in any order", "[decode]") {
  const std::vector<std::string> cut = wrapper_times();
  decode_detail::WrapperClock clock;
  for (int round = 0; round < 2; ++round) {
    for (const auto& t : cut) {
      INFO(t);
      const auto want = parse_rfc3339(t);
      Time got{};
      REQUIRE(clock.parse(t, got) == want.has_value());
      if (want) CHECK(got == *want);
    }
  }
  Time got{};
  CHECK(clock.parse("2026-11-29T10:08:01.0015Z", got));
  CHECK(got == T("2026-11-29T10:08:01.0015Z"));
  CHECK(clock.parse("2026-11-29T10:08:01.123456789Z", got));
  CHECK(got == T("2026-11-29T10:08:01Z") + std::chrono::nanoseconds(123456789));
}

TEST_CASE("the runtimes' usual times and CRI headers read with no search as the general reader reads them",
          "[decode]") {
  // usual_time and usual_cri_header read only what the clock's second and the runtimes' layout allow, and leave the
  // rest (0) to the general reader; what they read must be what parse_rfc3339 and a clock-less parse_cri read. Each
  // text is read with the clock in its own second (as after the line before it) and in another.
  const std::string heads[] = {" stdout F ", " stderr F ", " stdout P ", " stderr P ", " stdout F:x ", " stdout X ",
                               " stdoutF ",  " stdin F ",  "  stdout F ", " stdout F",  " stderr Fx ", "\tstdout F "};
  const std::string messages[] = {"", "m", "a message long enough for every load [x.py:1]"};
  const std::regex usual_time(R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,9}Z)");
  int usual = 0;
  for (const auto& t : wrapper_times()) {
    for (const char* other : {"", "2026-11-29T10:08:02Z"}) {
      decode_detail::WrapperClock clock;
      Time seen{};
      const std::string clock_text = *other != '\0' ? std::string(other) : t;
      (void)clock.parse(clock_text, seen);
      // The clock knows a second when the text it read starts with one.
      const bool clock_second = clock_text.size() >= 19 && parse_rfc3339(clock_text.substr(0, 19) + "Z").has_value();
      INFO(t << " clock at " << (*other != '\0' ? other : "its own second"));
      // The time alone, with bytes after it to read.
      const std::string padded = t + std::string(decode_detail::WrapperClock::kUsualTimeReads, '#');
      Time got{};
      const std::size_t n = clock.usual_time(padded.data(), got);
      if (n != 0) {
        REQUIRE(n <= t.size());
        const auto want = parse_rfc3339(t.substr(0, n));
        REQUIRE(want.has_value());
        CHECK(got == *want);
      }
      const bool is_usual =
          std::regex_match(t, usual_time) && clock_second && t.compare(0, 19, clock_text, 0, 19) == 0;
      CHECK((n != 0 && n == t.size()) == is_usual);
      // Whole CRI lines.
      for (const auto& head : heads) {
        for (const auto& message : messages) {
          const std::string line = t + head + message;
          INFO(line);
          decode_detail::CriLine a, b;
          const bool read_a = decode_detail::parse_cri(line, a, &clock);
          const bool read_b = decode_detail::parse_cri(line, b);
          REQUIRE(read_a == read_b);
          if (read_a) {
            CHECK(a.time == b.time);
            CHECK(a.is_stderr == b.is_stderr);
            CHECK(a.partial == b.partial);
            CHECK(a.message == b.message);
          }
          // The usual lines take the usual path: a usual time and head, and bytes enough for its loads.
          const bool usual_head = &head - heads < 4;
          if (is_usual && usual_head && line.size() >= decode_detail::WrapperClock::kUsualTimeReads + 10) {
            decode_detail::CriLine c;
            CHECK(clock.usual_cri_header(line, c) == t.size() + 9);
            ++usual;
          }
        }
      }
    }
  }
  CHECK(usual > 100);
}

// ---- auto-detection --------------------------------------------------------------------------------------------------

TEST_CASE("auto-detection looks at the first non-empty line", "[decode]") {
  ContainerFormat fmt{};
  decode("\n\n" + cri("2026-11-29T10:00:01Z", "stdout", 'F', "x"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::cri);
  decode("\r\n  \n" + docker("x\n", "stdout", "2026-11-29T10:00:01Z"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::docker);
  decode("INFO 11-29 10:08:01 [a.py:1] x\n" + cri("2026-11-29T10:00:01Z", "stdout", 'F', "x"), options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);
  decode("{\"msg\":\"structured app log\"}\n", options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);
  decode("2026-11-29T10:08:01.123Z some CI line\n", options(), nullptr, &fmt);
  CHECK(fmt == ContainerFormat::raw);

  Decoder d(0, options());
  CHECK(d.format() == ContainerFormat::auto_detect);
  RecordBatch b;
  d.feed("\n\n2026-11-29T10:00", kRead, b);
  CHECK(d.format() == ContainerFormat::auto_detect);  // not enough bytes yet
  d.feed(":01Z stderr F detected\n", kRead, b);
  CHECK(d.format() == ContainerFormat::cri);
  REQUIRE(b.size() == 1);
  CHECK(b.text(0) == "detected");
  CHECK(b[0].line == 3);
  CHECK(b[0].offset == 2);

  // A raw first line shorter than the detection window, flushed without newline.
  Decoder d2(0, options());
  RecordBatch b2;
  d2.feed("short", kRead, b2);
  CHECK(b2.empty());
  d2.flush(kRead, b2);
  CHECK(d2.format() == ContainerFormat::raw);
  REQUIRE(b2.size() == 1);
  CHECK(b2.text(0) == "short");
}

// ---- ANSI and caret notation -----------------------------------------------------------------------------------------

TEST_CASE("strip_ansi removes escape sequences and their caret-notation copies", "[decode]") {
  const auto strip = [](std::string s) {
    strip_ansi(s);
    return s;
  };
  CHECK(strip("\x1b[1;36m(APIServer pid=1)\x1b[0;0m ERROR x") == "(APIServer pid=1) ERROR x");
  CHECK(strip("^[[1;36m(APIServer pid=1)^[[0;0m ERROR x") == "(APIServer pid=1) ERROR x");
  CHECK(strip("\x1b]0;window title\x07text") == "text");
  CHECK(strip("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link");
  CHECK(strip("^[]0;title^Gtext") == "text");
  CHECK(strip("a\x1b[2Kb\x1b[1Gc") == "abc");
  CHECK(strip("\x1b(Bplain\x1b" "7saved\x1b" "8") == "plainsaved");
  CHECK(strip("cut off at the end \x1b[1;3") == "cut off at the end ");
  CHECK(strip("lone escape\x1b") == "lone escape");
  CHECK(strip("x^2 and ^[ alone and ^[[ incomplete") == "x^2 and ^[ alone and ^[[ incomplete");
  CHECK(strip("no escapes at all") == "no escapes at all");
  CHECK(strip("") == "");
}

TEST_CASE("the decoder strips ANSI before records and splits on caret-notation CR", "[decode]") {
  const auto r = decode(
      "\x1b[32mINFO\x1b[0m 11-29 10:08:01 [a.py:1] green\n"
      "^[[1;36m(APIServer pid=9)^[[0;0m ERROR 08-22 21:36:14 [s.py:250] first^M^[[1;36m(APIServer pid=9)^[[0;0m "
      "ERROR 08-22 21:36:14 [s.py:250] second^M\n"
      "trailing caret CRs^M^M\n"
      "regex ^Mixtral.* is text^M\n"
      "\x1b[0m\n");
  REQUIRE(texts(r) == std::vector<std::string>{"INFO 11-29 10:08:01 [a.py:1] green",
                                               "(APIServer pid=9) ERROR 08-22 21:36:14 [s.py:250] first",
                                               "(APIServer pid=9) ERROR 08-22 21:36:14 [s.py:250] second",
                                               "trailing caret CRs", "regex ^Mixtral.* is text"});
  CHECK(r[0].level == Level::info);
  CHECK(r[1].level == Level::error);
  CHECK(r[2].level == Level::error);
  CHECK(r[1].line == 2);
  CHECK(r[2].line == 2);
  const std::size_t line2 = r[1].offset;
  CHECK(r[2].offset > line2);
  CHECK(r[1].time == T("2026-08-22T21:36:14Z"));
}

// ---- time and level shapes -------------------------------------------------------------------------------------------
