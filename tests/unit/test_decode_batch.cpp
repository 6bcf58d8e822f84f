// Decode room, batches: RecordBatch (joined texts, records found by offset, records in place beside copied ones in
// one offset space), decoding in place against copying, and deferred times inherited per stream across batches.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "decode_support.hpp"
#include "faultline/decode.hpp"

using namespace faultline;
using namespace std::chrono_literals;
using namespace decode_test;

TEST_CASE("RecordBatch joins texts with newlines and finds records by buffer offset", "[decode]") {
  RecordBatch b;
  CHECK(b.empty());
  RecordMeta m;
  m.line = 3;
  b.append(m, "alpha");
  m.line = 4;
  b.append(m, "");
  m.line = 5;
  b.append(m, "gamma");
  REQUIRE(b.size() == 3);
  CHECK(b.joined() == "alpha\n\ngamma\n");
  CHECK(b.bytes() == 13);
  CHECK(b.text(0) == "alpha");
  CHECK(b.text(1).empty());
  CHECK(b.text(2) == "gamma");
  CHECK(b[2].text_begin == 7);
  CHECK(b[2].text_size == 5);
  CHECK(b[1].line == 4);
  CHECK(b.record_at(0) == 0);
  CHECK(b.record_at(5) == 0);  // alpha's '\n'
  CHECK(b.record_at(6) == 1);  // the empty record's '\n'
  CHECK(b.record_at(7) == 2);
  CHECK(b.record_at(12) == 2);
  CHECK(b.record_at(13) == 3);  // past the end
  b.clear();
  CHECK(b.empty());
  CHECK(b.bytes() == 0);
  CHECK(b.record_at(0) == 0);
}

TEST_CASE("RecordBatch refers to records in place and copies the others, in one offset space", "[decode]") {
  const std::string src = "alpha\n\n  \t\nbeta\ngamma\n";
  RecordBatch b;
  RecordMeta m;
  m.line = 1;
  b.append_in_place(m, std::string_view(src).substr(0, 5));   // alpha
  m.line = 4;
  b.append_in_place(m, std::string_view(src).substr(11, 4));  // beta, after two blank lines: same span
  REQUIRE(b.span_count() == 1);
  CHECK(b.span(0).bytes.data() == src.data());  // nothing copied
  CHECK(b.bytes() == 16);
  CHECK(b[1].text_begin == 11);
  m.line = 9;
  b.append(m, "copied");  // a record that is not in the caller's bytes: a span of the batch's own
  m.line = 5;
  b.append_in_place(m, std::string_view(src).substr(16, 5));  // gamma: in place again, a new span
  REQUIRE(b.size() == 4);
  REQUIRE(b.span_count() == 3);
  CHECK(b.span(1).offset == 16);
  CHECK(b.span(1).bytes == "copied\n");
  CHECK(b.span(2).offset == 23);
  CHECK(b.span(2).bytes.data() == src.data() + 16);
  CHECK(b.text(0) == "alpha");
  CHECK(b.text(1) == "beta");
  CHECK(b.text(2) == "copied");
  CHECK(b.text(3) == "gamma");
  CHECK(b.joined() == "alpha\n\n  \t\nbeta\ncopied\ngamma\n");
  CHECK(b.record_at(7) == 0);   // inside the blank lines: the record before them
  CHECK(b.record_at(11) == 1);
  CHECK(b.record_at(22) == 2);
  CHECK(b.record_at(23) == 3);
  CHECK(b.record_at(29) == 4);  // past the end

  // Not contiguous with the span before it (a gap that is not blank lines): a new span.
  RecordBatch c;
  c.append_in_place(m, std::string_view(src).substr(0, 5));
  c.append_in_place(m, std::string_view(src).substr(16, 5));
  CHECK(c.span_count() == 2);
  CHECK(c.joined() == "alpha\ngamma\n");

  // materialize() copies, keeping offsets, so the caller's bytes may go.
  std::string gone = src;
  RecordBatch d;
  d.append_in_place(m, std::string_view(gone).substr(0, 5));
  d.append_in_place(m, std::string_view(gone).substr(11, 4));
  d.materialize();
  gone.assign(gone.size(), 'x');
  CHECK(d.span_count() == 1);
  CHECK(d.text(0) == "alpha");
  CHECK(d.text(1) == "beta");
  CHECK(d[1].text_begin == 11);
  CHECK(d.joined() == "alpha\n\n  \t\nbeta\n");

  // Mixed: only referred spans are copied (to the end of the buffer), owned ones stay; texts keep their offsets and
  // later records still append correctly.
  std::string mixed = src;
  RecordBatch e;
  e.append(m, "own one");
  e.append_in_place(m, std::string_view(mixed).substr(0, 5));   // alpha
  e.append(m, "own two");
  e.append_in_place(m, std::string_view(mixed).substr(16, 5));  // gamma
  REQUIRE(e.span_count() == 4);
  e.materialize();
  mixed.assign(mixed.size(), 'x');
  e.append(m, "own three");
  CHECK(e.joined() == "own one\nalpha\nown two\ngamma\nown three\n");
  const std::vector<std::string> want{"own one", "alpha", "own two", "gamma", "own three"};
  REQUIRE(e.size() == want.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    CHECK(e.text(i) == want[i]);
    CHECK(e[i].text_begin == at);
    CHECK(e.record_at(at) == i);
    at += want[i].size() + 1;
  }
  // Every span, scanned as a span, holds exactly its records' texts.
  std::string spans;
  for (std::size_t k = 0; k < e.span_count(); ++k) {
    CHECK(e.span(k).offset == spans.size());
    spans += e.span(k).bytes;
  }
  CHECK(spans == e.joined());
}

namespace {
// A log with timed and untimed lines (tracebacks inherit the time before them), blank lines, CRLF, ANSI, carets and
// lines longer than a small max_line_bytes; raw, or wrapped in CRI (its own times, and P/F chains).
std::string mixed_log(bool cri) {
  std::string raw;
  for (int i = 0; i < 40; ++i) {
    raw += "INFO 11-29 10:08:" + std::to_string(10 + i) + " [a.py:1] line " + std::to_string(i) + "\n";
    if (i % 7 == 0) raw += "\n   \n";
    if (i % 9 == 0) raw += "with CR\r\n";
    if (i % 11 == 0) raw += "\x1b[31mERROR\x1b[0m coloured ^ caret\n";
    if (i % 13 == 0) raw += std::string(300, 'z') + "\n";
    if (i % 5 == 0) raw += "Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n";
    if (i % 6 == 0) raw += "[2026-11-29 10:09:" + std::to_string(10 + i) + " TP0] Decode batch\n";
  }
  if (!cri) return raw;
  std::string out;
  std::size_t n = 0, pos = 0;
  while (pos < raw.size()) {
    const std::size_t nl = raw.find('\n', pos);
    const std::string line = raw.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string stamp = "2026-11-29T10:10:" + std::to_string(10 + (n++ % 40)) + ".5Z ";
    const std::string stream = n % 3 == 0 ? "stderr " : "stdout ";
    if (line.size() > 20 && n % 4 == 0) {  // split into a P and an F fragment
      out += stamp + stream + "P " + line.substr(0, 12) + "\n" + stamp + stream + "F " + line.substr(12) + "\n";
    } else {
      out += stamp + stream + "F " + line + "\n";
    }
  }
  return out;
}
}  // namespace

TEST_CASE("lines appended in place many at a time make the batch that appending them one by one makes", "[decode]") {
  // Blank and white-space lines at the start, inside and at the end of a run, a run that continues the span before
  // it, one that follows a copied record, and one of blank lines only.
  const std::string src = "\n  \nalpha\nbeta\n\n\t \ngamma\n \n\ndelta\nepsilon\n\n \n";
  std::vector<std::uint32_t> ends;
  for (std::size_t i = 0; i < src.size(); ++i)
    if (src[i] == '\n') ends.push_back(static_cast<std::uint32_t>(i));
  const auto line_at = [&](std::size_t k) { return k == 0 ? std::size_t{0} : std::size_t{ends[k - 1]} + 1; };
  // Lines [from, to) of src, both ways.
  const auto by_one = [&](RecordBatch& b, std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to; ++k) {
      const std::string_view text(src.data() + line_at(k), ends[k] - line_at(k));
      if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
      RecordMeta m;
      m.stream = 2;
      m.line = 10 + k;
      m.offset = 100 + line_at(k);
      m.deferred = 1;
      b.append_in_place(m, text);
    }
  };
  const auto by_run = [&](RecordBatch& b, std::size_t from, std::size_t to) {
    std::vector<std::uint32_t> rel;
    for (std::size_t k = from; k < to; ++k) rel.push_back(static_cast<std::uint32_t>(ends[k] - line_at(from)));
    RecordMeta m;
    m.stream = 2;
    m.line = 10 + from;
    m.offset = 100 + line_at(from);
    m.deferred = 1;
    return b.append_lines_in_place(m, src.data() + line_at(from), rel.data(), rel.size());
  };
  const std::vector<std::vector<std::size_t>> cuts = {{0, ends.size()}, {0, 3, ends.size()}, {0, 1, 2, 6, 9, ends.size()},
                                                      {0, 4, 5, ends.size()}, {12, ends.size()}};
  for (const auto& cut : cuts) {
    for (bool copied_first : {false, true}) {
      INFO("cut at " << cut.size() << " places, a copied record first: " << copied_first);
      RecordBatch one, run;
      if (copied_first) {
        RecordMeta m;
        m.line = 1;
        one.append(m, "copied");
        run.append(m, "copied");
      }
      std::size_t added = 0;
      for (std::size_t c = 0; c + 1 < cut.size(); ++c) {
        by_one(one, cut[c], cut[c + 1]);
        added += by_run(run, cut[c], cut[c + 1]);
      }
      REQUIRE(run.size() == one.size());
      CHECK(added == one.size() - (copied_first ? 1 : 0));
      CHECK(run.bytes() == one.bytes());
      CHECK(run.span_count() == one.span_count());
      CHECK(run.joined() == one.joined());
      for (std::size_t i = 0; i < one.size(); ++i) {
        const RecordMeta& a = one.records()[i];
        const RecordMeta& r = run.records()[i];
        CHECK(r.stream == a.stream);
        CHECK(r.line == a.line);
        CHECK(r.offset == a.offset);
        CHECK(r.text_begin == a.text_begin);
        CHECK(r.text_size == a.text_size);
        CHECK(r.deferred == a.deferred);
        CHECK(run.text(i) == one.text(i));
      }
      for (std::size_t pos = 0; pos <= one.bytes(); ++pos) CHECK(run.record_at(pos) == one.record_at(pos));
    }
  }
}

TEST_CASE("decoding in place, and looking at records out of order, gives the same records as copying", "[decode]") {
  for (const bool cri : {false, true}) {
    const std::string input = mixed_log(cri);
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{37}, std::size_t{4096}, input.size()}) {
      for (const std::size_t max_line : {std::size_t{64}, std::size_t{64 * 1024}}) {
        std::vector<Rec> modes[3];  // copied; in place; in place with the last record looked at first
        for (int mode = 0; mode < 3; ++mode) {
          auto o = options(cri ? ContainerFormat::cri : ContainerFormat::raw, max_line);
          Decoder d(1, o);
          RecordBatch b;
          for (std::size_t pos = 0; pos < input.size(); pos += chunk) {
            d.feed(std::string_view(input).substr(pos, chunk), kRead, b, mode > 0);
            if (mode > 0) {
              // Spans lie in `input` or in the batch; texts are where the offsets say.
              const std::string all = b.joined();
              for (std::size_t i = 0; i < b.size(); ++i) {
                CHECK(all.substr(b[i].text_begin, b[i].text_size) == b.text(i));
              }
            }
            if (mode == 2 && b.size() > 2) {
              // Looked at out of order: the last record first, then the rest (inheritance walks back on its own).
              (void)b[b.size() - 1];
            }
            collect(b, modes[mode]);
            b.clear();
          }
          d.flush(kRead, b);
          collect(b, modes[mode]);
        }
        INFO("cri " << cri << ", chunk " << chunk << ", max line " << max_line);
        for (int mode = 1; mode < 3; ++mode) {
          const auto& want = modes[0];
          const auto& got = modes[mode];
          INFO("mode " << mode);
          REQUIRE(want.size() == got.size());
          for (std::size_t i = 0; i < want.size(); ++i) {
            CHECK(want[i].text == got[i].text);
            CHECK(want[i].line == got[i].line);
            CHECK(want[i].offset == got[i].offset);
            CHECK(want[i].time == got[i].time);
            CHECK(want[i].from_log == got[i].from_log);
            CHECK(want[i].level == got[i].level);
            CHECK(want[i].truncated == got[i].truncated);
          }
        }
      }
    }
  }
}

TEST_CASE("deferred times are inherited per stream across batches; a new instance starts over", "[decode]") {
  auto o = options(ContainerFormat::raw);
  Decoder a(0, o), b(1, o);
  RecordBatch batch;
  a.feed("INFO 11-29 10:00:01 [a.py:1] a first\n", kRead, batch);
  b.feed("untimed b\n", kRead, batch);
  a.feed("untimed a\n", kRead, batch);
  REQUIRE(batch.size() == 3);
  CHECK(batch.records()[2].deferred == 1);  // not worked out until looked at
  CHECK(batch[2].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[2].time_inherited);
  CHECK_FALSE(batch[2].time_from_log);
  CHECK(batch[1].time == kRead);  // stream 1 has printed no time
  CHECK_FALSE(batch[1].time_inherited);
  batch.clear();
  // The next batch: stream 0's untimed lines still inherit 10:00:01, through a chain of untimed lines.
  a.feed("still untimed\nand again\n", kRead, batch);
  b.feed("WARNING 11-29 10:00:07 [b.py:2] b timed\n", kRead, batch);
  b.feed("b after\n", kRead, batch);
  REQUIRE(batch.size() == 4);
  CHECK(batch[1].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[0].time == T("2026-11-29T10:00:01Z"));
  CHECK(batch[3].time == T("2026-11-29T10:00:07Z"));
  CHECK(batch[2].level == Level::warning);
  batch.clear();
  batch.forget_stream(0);
  a = Decoder(0, o);
  a.feed("a new instance\n", kRead, batch);
  CHECK(batch[0].time == kRead);
  CHECK_FALSE(batch[0].time_inherited);
}

TEST_CASE("a batch knows the streams it holds; a forgotten stream's entry goes and the others keep their times",
          "[decode]") {
  auto o = options(ContainerFormat::raw);
  // Streams far apart in index, as in a scan of thousands of files or a node's thousandth pod.
  Decoder s3(3, o), s70k(70000, o), s9(9, o);
  RecordBatch batch;
  s70k.feed("INFO 11-29 10:00:07 [a.py:1] seventy thousand\n", kRead, batch);
  s3.feed("INFO 11-29 10:00:03 [a.py:1] three\n", kRead, batch);
  s9.feed("INFO 11-29 10:00:09 [a.py:1] nine\n", kRead, batch);
  s3.feed("three again\n", kRead, batch);
  CHECK(batch.streams_present() == std::vector<std::uint32_t>{70000, 3, 9});
  batch.clear();
  CHECK(batch.streams_present().empty());
  // Stream 3 ends: its entry goes (the last entry takes its place); the others' latest times stay theirs.
  batch.forget_stream(3);
  s9.feed("untimed nine\n", kRead, batch);
  s70k.feed("untimed seventy thousand\n", kRead, batch);
  s3 = Decoder(3, o);
  s3.feed("three anew\n", kRead, batch);
  CHECK(batch.streams_present() == std::vector<std::uint32_t>{9, 70000, 3});
  REQUIRE(batch.size() == 3);
  CHECK(batch[0].time == T("2026-11-29T10:00:09Z"));
  CHECK(batch[1].time == T("2026-11-29T10:00:07Z"));
  CHECK(batch[2].time == kRead);  // inherits nothing from before it ended
  CHECK_FALSE(batch[2].time_inherited);
  // A batch taken up again for other input keeps nothing of any stream.
  batch.reset();
  CHECK(batch.streams_present().empty());
  s9.feed("untimed nine once more\n", kRead, batch);
  REQUIRE(batch.size() == 1);
  CHECK(batch[0].time == kRead);
}

TEST_CASE("a batch decoded apart takes the latest times of its own streams from the batch before it", "[decode]") {
  auto o = options(ContainerFormat::raw);
  Decoder a(5, o), b(6, o);
  RecordBatch first, second, third;
  a.feed("INFO 11-29 10:00:05 [a.py:1] five\n", kRead, first);
  b.feed("INFO 11-29 10:00:06 [a.py:1] six\n", kRead, first);
  first.clear();  // carries 5's and 6's times
  Decoder a2(5, o);
  a2.feed("untimed five\n", kRead, second);  // decoded apart (scan -j)
  second.continue_after(first);
  REQUIRE(second.size() == 1);
  CHECK(second[0].time == T("2026-11-29T10:00:05Z"));
  CHECK(second[0].time_inherited);
  second.clear();
  // Then the batch after it in order takes what that one's clear() carried (stream 5), and 6's from before.
  third.continue_after(first);
  third.continue_after(second);
  Decoder b2(6, o);
  b2.feed("untimed six\n", kRead, third);
  third.continue_after(first);
  REQUIRE(third.size() == 1);
  CHECK(third[0].time == T("2026-11-29T10:00:06Z"));
}
