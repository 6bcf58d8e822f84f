// The Detector: per stream, at most one open story. An anchor opens it; the stream's following lines continue it
// while they are part of a failure story (frames, chained tracebacks, what(), stack dumps, further anchors) and for
// `linger_lines` more; then it closes and is fingerprinted. Only anchor lines and the lines of streams with an open
// story are looked at: while no story is open, the lines between anchor and rule hits are skipped. What a story's lines
// are and its severity: story_shape.cpp; the signature: signature.cpp.
//
// Why one file of about 650 lines: Detector::Impl is one state machine — a story's close counts it, inventories it,
// decides whether it is claimed, a consequence or raised, and updates the incident book, in one step that must
// happen exactly once per story. Its parts share the per-stream state and the book; spread over files they would
// need Impl in a header of its own, for no reader's gain.
#include <algorithm>
#include <cctype>
#include <deque>
#include <unordered_map>

#include "exception_line.hpp"
#include "faultline/fingerprint.hpp"
#include "story_shape.hpp"

namespace faultline {

using namespace fingerprint_detail;

namespace {

struct StoryLine {
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  Time time{};
  Level level = Level::unknown;
  // Its text: a view into the batch being processed, copied (own) only when the story is still open as the batch
  // ends — most stories open and close inside one batch and copy nothing.
  std::string_view view;
  std::string owned;
  bool is_owned = false;
  std::string_view text() const { return is_owned ? std::string_view(owned) : view; }
  void own() {
    if (is_owned) return;
    owned = std::string(view);
    is_owned = true;
  }
  std::uint32_t record = 0;  // its index in the batch being processed
  bool meta = false;         // time and level known: a lingering line's are read only if it joins the story
  std::uint32_t prefix = 0;  // length of its logger prefix (strip_log_prefix), found once as the line is read
  std::string_view event;  // the anchor it hit (to_string(StoryAnchor), static); empty for other lines
  std::int32_t claimed_by = -1;  // the non-cascade rule whose event hit the line
  bool consequence = false;      // a cascade rule's event hit the line (engine dead, worker died, ...)
};

struct OpenStory {
  std::vector<StoryLine> lines;
  std::size_t relevant_end = 0;  // lines before it are the story; the rest linger
  std::uint32_t lingering = 0;
  bool awaiting_exception = false;  // inside a traceback: the next unindented line is its exception
  std::vector<StoryAnchor> anchors;
  Level context_level = Level::unknown;  // of the line before the story
  std::string context_text;
  std::string instance;
  Time last_time{};
  std::chrono::steady_clock::time_point last_read{};  // when its last line was read (options.clock)
  std::uint64_t prior_claim = 0;  // the stream's last claimed line when the story opened
  std::int32_t prior_claim_rule = -1;
};

// A typed rule's line this close before a story is part of it: the library's own message printed just before the
// exception or the abort it causes.
constexpr std::uint64_t kClaimLookback = 8;
// How long after a typed failure a cascade rule's wrapper story is still its consequence (the cascade rules' window).
constexpr Duration kConsequenceTime = std::chrono::minutes(2);

struct StreamState {
  StreamIdentity identity;
  std::optional<OpenStory> story;
  // The line before the next one: its level and text (a traceback printed under a DEBUG record inherits DEBUG).
  Level prev_level = Level::unknown;
  std::string prev_text;
  std::uint64_t last_story_end = 0;  // line number where the last story (claimed or not) ended; 0: none
  std::uint64_t last_claim = 0;      // line number of the last line a non-cascade rule matched; 0: none
  std::int32_t last_claim_rule = -1;
  Time last_claim_time{};
  std::string last_incident;         // the book key of the incident the last story raised
};

}  // namespace

struct Detector::Impl {
  std::shared_ptr<const CompiledRules> rules;
  DetectorOptions options;
  DetectorStats stats;
  std::vector<StreamState> streams;
  std::unordered_map<std::string, FingerprintOverride> overrides;
  // The inventory and the incident book, bounded, oldest first.
  std::unordered_map<std::string, FingerprintEntry> inventory;
  std::deque<std::string> inventory_order;
  std::unordered_map<std::string, Incident> book;  // logical stream + fingerprint → latest revision
  std::deque<std::string> book_order;
  // A previous run's incidents (restore_book), by book key: the next story of one continues it.
  std::unordered_map<std::string, UnclassifiedContinuation> continued;
  std::optional<OpenStory> spare;  // the last story closed, emptied: the next one to open takes its capacity
  std::vector<std::string_view> close_texts, close_stripped;  // a closing story's lines, whole and without prefix
  std::size_t open_stories = 0;  // streams with an open story: while none, only anchor and hit records are read
  std::chrono::steady_clock::time_point read_now{};  // when the lines being processed were read (once a batch)
  const RecordBatch* batch_ = nullptr;  // the batch being processed (its lines' times and levels are read from it)
  std::uint64_t inventory_version = 0;

  StreamState& stream(std::uint32_t index) {
    if (index >= streams.size()) streams.resize(index + 1);
    return streams[index];
  }

  // Per rule, per event: does a hit of it claim a story? Events of a required step of a rule that is not a cascade
  // do; context events (a phase marker, optional evidence) and cascade rules do not.
  std::vector<std::vector<bool>> decisive;

  void index_rules() {
    decisive.clear();
    for (const Rule& r : rules->rule_set().rules) {
      std::vector<bool> d(r.events.size(), r.sequence.empty() && !r.cascade.enabled);
      if (!r.cascade.enabled) {
        for (const Step& step : r.sequence) {
          if (step.optional || step.absent_for) continue;
          for (const auto& name : step.events) {
            int e = r.event_index(name);
            if (e >= 0) d[static_cast<std::size_t>(e)] = true;
          }
        }
      }
      decisive.push_back(std::move(d));
    }
  }

  bool claims(const Hit& h) const { return decisive[h.event.rule][h.event.event]; }
  bool cascade(const Hit& h) const { return rules->rule(h.event.rule).cascade.enabled; }

  // A line of the batch. Its time and level (which the decoder parses on first access) only when `meta`: an anchor
  // line needs them at once; another waits until it is part of a story (resolve).
  StoryLine make_line(const RecordBatch& batch, std::size_t i, bool meta) const {
    const RecordMeta& m = batch.records()[i];
    StoryLine l;
    l.line = m.line;
    l.offset = m.offset;
    l.record = static_cast<std::uint32_t>(i);
    l.view = batch.text(i).substr(0, kMaxEvidenceText);
    if (meta) resolve(l);
    return l;
  }

  void resolve(StoryLine& l) const {
    if (l.meta) return;
    const RecordMeta& m = (*batch_)[l.record];
    l.time = m.time;
    l.level = m.level;
    l.meta = true;
  }

  void append(OpenStory& story, StoryLine&& line, bool relevant) {
    story.last_read = read_now;
    if (story.lines.size() >= options.max_story_lines) {
      // Keep the beginning (the first traceback's head) and the latest lines.
      story.lines.erase(story.lines.begin() + 32);
      if (story.relevant_end > 32) --story.relevant_end;
    }
    story.lines.push_back(std::move(line));
    if (relevant) {
      // The lines that lingered since the last story line are part of the story now, with this one.
      for (std::size_t k = std::min(story.relevant_end, story.lines.size() - 1); k < story.lines.size(); ++k) {
        resolve(story.lines[k]);
        story.last_time = std::max(story.last_time, story.lines[k].time);
      }
      story.relevant_end = story.lines.size();
      story.lingering = 0;
    } else {
      ++story.lingering;
    }
  }

  // One line of a stream whose story is open. `anchors`: the anchors that hit it. Returns false when the story
  // closed before this line (the caller may open a new one with it).
  bool continue_story(StreamState& st, StoryLine&& line, const std::vector<StoryAnchor>& anchors,
                      std::vector<Incident>& out) {
    OpenStory& story = *st.story;
    std::string_view stripped = strip_log_prefix(line.text());
    line.prefix = static_cast<std::uint32_t>(line.text().size() - stripped.size());
    bool relevant = !anchors.empty() || story_line(stripped);
    if (story.awaiting_exception && !stripped.empty() && !is_blank(stripped[0]) && !trim(stripped).empty() &&
        !trim(stripped).starts_with("File \"")) {
      relevant = true;  // the traceback's exception line (or a panic's message)
      story.awaiting_exception = false;
    }
    if (!anchors.empty()) {
      if (awaits_message(anchors, stripped)) story.awaiting_exception = true;
      // A frame inside a story is part of its body: it neither names the line nor counts as one of its anchors.
      for (auto a : anchors) {
        if (frame_anchor(a)) continue;
        story.anchors.push_back(a);
        if (line.event.empty()) line.event = to_string(a);
      }
    }
    append(story, std::move(line), relevant);
    if (story.lingering > options.linger_lines) close(st, out);
    return true;
  }

  void open_story(StreamState& st, StoryLine&& line, const std::vector<StoryAnchor>& anchors) {
    OpenStory story = fresh_story();
    story.context_level = st.prev_level;
    story.context_text = st.prev_text;
    story.prior_claim = st.last_claim;
    story.prior_claim_rule = st.last_claim_rule;
    story.instance = st.identity.instance;
    story.anchors = anchors;
    const std::string_view stripped = strip_log_prefix(line.text());
    line.prefix = static_cast<std::uint32_t>(line.text().size() - stripped.size());
    story.awaiting_exception = awaits_message(anchors, stripped);
    line.event = to_string(anchors.front());
    st.story = std::move(story);
    ++open_stories;
    append(*st.story, std::move(line), true);
  }

  Severity severity_of(const OpenStory& story, const FailureSignature& sig, Level level,
                       const std::vector<std::string_view>& texts) const {
    const StoryFacts facts{story.anchors, story.context_text, story.lines.front().prefix == 0,
                           story.lines.front().level};
    return story_severity(facts, sig, level, texts);
  }

  template <class Map>
  void bound(Map& map, std::deque<std::string>& order) {
    while (order.size() > options.max_fingerprints) {
      map.erase(order.front());
      order.pop_front();
      ++stats.fingerprints_dropped;
    }
  }

  void close(StreamState& st, std::vector<Incident>& out) {
    OpenStory story = std::move(*st.story);
    st.story.reset();
    --open_stories;
    ++stats.stories;
    conclude(st, story, out);
    story.lines.clear();  // the lines' own copies go now; the vector's capacity stays for the next story
    spare = std::move(story);
  }

  // A story that opens takes the last closed one's vectors and strings (their capacity: stories open and close
  // all the time on a busy stream, each with lines for a traceback).
  OpenStory fresh_story() {
    OpenStory story;
    if (spare) {
      story.lines = std::move(spare->lines);
      story.anchors = std::move(spare->anchors);
      story.context_text = std::move(spare->context_text);
      story.instance = std::move(spare->instance);
      spare.reset();
    } else {
      story.lines.reserve(48);  // a traceback and the lines that linger after it, without regrowing
    }
    return story;
  }

  // What a closed story is: claimed by a typed rule, a consequence, below error, or an unclassified incident.
  void conclude(StreamState& st, OpenStory& story, std::vector<Incident>& out) {
    // Claimed: a typed rule matched a line of the story, or of the lines that followed it closely.
    std::int32_t claimed = -1;
    for (const auto& l : story.lines) {
      if (l.claimed_by >= 0) {
        claimed = l.claimed_by;
        break;
      }
    }
    if (claimed < 0 && story.prior_claim != 0 && story.lines.front().line > story.prior_claim &&
        story.lines.front().line - story.prior_claim <= kClaimLookback)
      claimed = story.prior_claim_rule;
    story.lines.resize(std::max<std::size_t>(story.relevant_end, 1));
    st.last_story_end = story.lines.back().line;

    std::vector<std::string_view>& texts = close_texts;
    std::vector<std::string_view>& stripped = close_stripped;
    texts.clear();
    stripped.clear();
    for (const auto& l : story.lines) {
      texts.push_back(l.text());
      stripped.push_back(texts.back().substr(l.prefix));
    }
    FailureSignature sig = fingerprint_detail::signature_of_stripped(texts, stripped);

    // The level the story was printed at: its first line's, else the highest its lines carry, else the record it
    // continues (a traceback under "DEBUG ... exc_info") when that was below error.
    Level level = story.lines.front().level;
    if (level == Level::unknown) {
      for (const auto& l : story.lines) level = std::max(level, l.level);
    }
    if (level == Level::unknown && (story.context_level == Level::debug || story.context_level == Level::trace))
      level = story.context_level;
    const bool quiet = below_error(level) || benign_type(sig.type);

    // A story with no exception message of its own (an exit, a signal, a traceback cut off before its exception)
    // right after a typed incident's lines: that failure's consequence.
    const bool weak = sig.rank <= 1;
    if (claimed < 0 && weak && st.last_claim != 0 && story.lines.front().line > st.last_claim &&
        story.lines.front().line - st.last_claim <= options.consequence_lines) {
      ++stats.consequences;
      return;
    }

    // A story a cascade rule reports (EngineDeadError in the API server, "worker died") shortly after a typed
    // failure on the stream: the wrapper of that failure, printed again by the process that saw it end.
    const bool reported_consequence =
        std::any_of(story.lines.begin(), story.lines.end(), [](const StoryLine& l) { return l.consequence; });
    if (claimed < 0 && reported_consequence && st.last_claim != 0 &&
        (story.lines.front().line - st.last_claim <= options.consequence_lines ||
         story.lines.front().time - st.last_claim_time <= kConsequenceTime)) {
      ++stats.consequences;
      return;
    }

    FingerprintEntry& entry = record(sig, story, st, claimed, quiet);
    if (options.on_story) report(st, story, sig, claimed, quiet, level, texts);
    if (claimed >= 0) {
      ++stats.claimed;
      return;
    }
    if (quiet) {
      ++stats.below_error;
      return;
    }
    Severity severity = severity_of(story, sig, level, texts);
    if (auto it = overrides.find(sig.fingerprint); it != overrides.end()) {
      if (it->second.silence) {
        ++stats.silenced;
        return;
      }
      if (it->second.severity) severity = *it->second.severity;
    }
    entry.severity = std::max(entry.severity, severity);
    ++inventory_version;
    ++stats.raised;
    raise(st, story, sig, severity, out);
  }

  void report(const StreamState& st, const OpenStory& story, const FailureSignature& sig, std::int32_t claimed,
              bool quiet, Level level, const std::vector<std::string_view>& texts) const {
    ClosedStory closed;
    closed.signature = sig;
    for (std::size_t k = 0; k < story.lines.size(); ++k) closed.lines.push_back(evidence_line(st, story, sig, k));
    if (claimed >= 0) closed.claimed_by = rules->rule(static_cast<std::uint32_t>(claimed)).id;
    closed.below_error = quiet;
    closed.severity = severity_of(story, sig, level, texts);
    options.on_story(closed);
  }

  FingerprintEntry& record(const FailureSignature& sig, const OpenStory& story, const StreamState& st,
                           std::int32_t claimed, bool quiet) {
    auto [it, first] = inventory.try_emplace(sig.fingerprint);
    FingerprintEntry& e = it->second;
    ++inventory_version;
    if (first) {
      inventory_order.push_back(sig.fingerprint);
      e.fingerprint = sig.fingerprint;
      e.type = sig.type;
      e.message_template = sig.message_template;
      e.first_seen = story.lines.front().time;
      e.severity = Severity::info;
      e.below_error = quiet;
      for (std::size_t k = 0; k < story.lines.size() && e.example.size() < kMaxEvidenceLines; ++k)
        e.example.push_back(std::string(story.lines[k].text()));
    }
    ++e.count;
    e.last_seen = std::max(e.last_seen, story.last_time);
    e.below_error = e.below_error && quiet;
    if (claimed >= 0 && e.claimed_by.empty()) e.claimed_by = rules->rule(static_cast<std::uint32_t>(claimed)).id;
    if (e.streams.size() < 8 && std::find(e.streams.begin(), e.streams.end(), st.identity.name) == e.streams.end())
      e.streams.push_back(st.identity.name);
    bound(inventory, inventory_order);  // drops the oldest: never the entry just touched while the bound is > 0
    return inventory[sig.fingerprint];
  }

  std::vector<EvidenceLine> evidence_of(const StreamState& st, const OpenStory& story,
                                        const FailureSignature& sig) const {
    // The story's head and the lines that end at its terminal line, within the evidence cap.
    std::vector<std::size_t> keep;
    const std::size_t n = story.lines.size();
    if (n <= kMaxEvidenceLines) {
      for (std::size_t k = 0; k < n; ++k) keep.push_back(k);
    } else {
      const std::size_t head = 6;
      const std::size_t tail = kMaxEvidenceLines - head;
      std::size_t end = std::min(n, std::max(sig.terminal_index + 3, tail + head));
      for (std::size_t k = 0; k < head; ++k) keep.push_back(k);
      for (std::size_t k = std::max(head, end - tail); k < end; ++k) keep.push_back(k);
    }
    std::vector<EvidenceLine> ev;
    for (std::size_t k : keep) ev.push_back(evidence_line(st, story, sig, k));
    return ev;
  }

  // Line k of a story as evidence: named by the anchor it hit, or "terminal" where the signature ends.
  static EvidenceLine evidence_line(const StreamState& st, const OpenStory& story, const FailureSignature& sig,
                                    std::size_t k) {
    const StoryLine& l = story.lines[k];
    return EvidenceLine{st.identity.name, l.line, l.offset, l.time,
                        std::string(k == sig.terminal_index ? "terminal" : l.event), std::string(l.text()),
                        l.text().size() >= kMaxEvidenceText};
  }

  void raise(StreamState& st, const OpenStory& story, const FailureSignature& sig, Severity severity,
             std::vector<Incident>& out) {
    const std::string& logical = st.identity.logical.empty() ? st.identity.name : st.identity.logical;
    std::string key = logical + '\0' + sig.fingerprint;
    auto [it, first] = book.try_emplace(key);
    Incident& inc = it->second;
    if (first) {
      book_order.push_back(key);
      inc.id = make_incident_id(kUnclassifiedRule, logical, sig.fingerprint);
      inc.rule = std::string(kUnclassifiedRule);
      std::string title = sig.type;
      if (!sig.message_template.empty()) title += ": " + sig.message_template;
      if (title.size() > 200) title = title.substr(0, 197) + "...";
      inc.title = title;
      inc.severity = severity;
      inc.stream = st.identity.name;
      inc.stream_labels = st.identity.labels;
      inc.first_seen = story.lines.front().time;
      inc.fingerprint = sig.fingerprint;
      inc.message_template = sig.message_template;
      inc.fields = {{"type", sig.type}};
      if (!sig.frames.empty()) {
        std::string frames;
        for (const auto& f : sig.frames) frames += (frames.empty() ? "" : " < ") + f;
        inc.fields.emplace_back("frames", frames);
      }
      inc.summary = "A failure that no rule of the catalog knows ended with: " + sig.terminal.substr(0, 300);
      inc.remediation =
          "Read the story in the evidence. `faultline fingerprints` lists every unclassified failure seen; a rule "
          "for this one makes it a typed incident, and a known-harmless one can be silenced by its fingerprint in "
          "the config (fingerprints.overrides).";
      inc.labels = {{"category", "unclassified"}};
      inc.evidence = evidence_of(st, story, sig);
      if (auto c = continued.find(key); c != continued.end()) {  // seen before a restart: its next revision
        inc.id = c->second.id;
        inc.revision = c->second.revision + 1;
        inc.count = c->second.count + 1;
        inc.severity = std::max(inc.severity, c->second.severity);
        inc.first_seen = std::min(inc.first_seen, c->second.first_seen);
        continued.erase(c);
      }
    } else {
      ++inc.revision;
      ++inc.count;
      inc.severity = std::max(inc.severity, severity);
    }
    inc.last_seen = std::max(inc.first_seen, story.last_time);
    inc.read_at = options.clock->steady();
    st.last_incident = key;
    ++stats.incidents[static_cast<std::size_t>(inc.severity)];
    out.push_back(inc);
    bound(book, book_order);
  }

  // Raises an incident of the book to `severity` (a new revision) when it is lower; the inventory follows.
  void escalate(Incident& inc, Severity severity, Time at, std::vector<Incident>& out) {
    inc.severity = severity;
    ++inc.revision;
    inc.last_seen = std::max(inc.last_seen, at);
    inc.read_at = options.clock->steady();
    ++stats.incidents[static_cast<std::size_t>(severity)];
    if (auto e = inventory.find(inc.fingerprint); e != inventory.end()) {
      e->second.severity = std::max(e->second.severity, severity);
      ++inventory_version;
    }
    out.push_back(inc);
  }

  bool escalate(std::string_view id, Severity severity, std::vector<Incident>& out) {
    for (auto& [key, inc] : book) {
      if (inc.id != id) continue;
      if (inc.severity < severity) escalate(inc, severity, inc.last_seen, out);
      return true;
    }
    return false;
  }

  // An exit or signal line that follows a story closely: the process ended with it. Raises the story's incident to
  // critical (a new revision) when it was not already.
  bool consequence(StreamState& st, const StoryLine& line, std::vector<Incident>& out) {
    const bool after_story = st.last_story_end != 0 && line.line > st.last_story_end &&
                             line.line - st.last_story_end <= options.consequence_lines;
    const bool after_claim = st.last_claim != 0 && line.line >= st.last_claim &&
                             line.line - st.last_claim <= options.consequence_lines;
    if (!after_story && !after_claim) return false;
    ++stats.consequences;
    if (after_story && !st.last_incident.empty()) {
      auto it = book.find(st.last_incident);
      if (it != book.end() && it->second.severity != Severity::critical)
        escalate(it->second, Severity::critical, line.time, out);
    }
    return true;
  }

  // The line of stream `s` before record `i` of the batch: the batch's earlier record of the stream, else the
  // stream's last line of the previous batch (kept in st.prev_*).
  void line_before(StreamState& st, std::uint32_t s, const RecordBatch& batch, std::size_t i) {
    const auto& records = batch.records();
    for (std::size_t k = i; k-- > 0;) {
      if (records[k].stream != s) continue;
      st.prev_level = batch[k].level;
      st.prev_text = std::string(batch.text(k).substr(0, 512));
      return;
    }
  }

  void process(const RecordBatch& batch, const std::vector<AnchorHit>& anchors, const std::vector<Hit>& hits,
               std::vector<Incident>& out) {
    const auto& records = batch.records();
    const std::size_t n = records.size();
    read_now = options.clock->steady();
    batch_ = &batch;
    std::size_t a = 0, h = 0;
    std::vector<StoryAnchor> here;
    for (std::size_t i = 0; i < n; ++i) {
      if (open_stories == 0) {
        // No story open: only the records an anchor or a rule's event hit matter. Jump to the next one.
        const std::size_t next_anchor = a < anchors.size() ? anchors[a].record : n;
        const std::size_t next_hit = h < hits.size() ? hits[h].record : n;
        i = std::max(i, std::min(next_anchor, next_hit));
        if (i >= n) break;
      }
      const std::uint32_t s = records[i].stream;
      StreamState& st = stream(s);
      here.clear();
      while (a < anchors.size() && anchors[a].record < i) ++a;
      while (a < anchors.size() && anchors[a].record == i) here.push_back(anchors[a++].anchor);
      std::int32_t claimed = -1;
      bool consequence_hit = false;
      while (h < hits.size() && hits[h].record < i) ++h;
      for (; h < hits.size() && hits[h].record == i; ++h) {
        if (claims(hits[h])) claimed = static_cast<std::int32_t>(hits[h].event.rule);
        consequence_hit = consequence_hit || cascade(hits[h]);
      }
      if (claimed >= 0) {
        st.last_claim = records[i].line;
        st.last_claim_rule = claimed;
        st.last_claim_time = batch[i].time;
      }
      if (!here.empty() || st.story) {
        StoryLine line = make_line(batch, i, !here.empty());
        line.claimed_by = claimed;
        line.consequence = consequence_hit;
        if (st.story) {
          continue_story(st, std::move(line), here, out);
        } else if (opens_story(here, line.text(), line.level) &&
                   !(std::all_of(here.begin(), here.end(), consequence_anchor) && consequence(st, line, out))) {
          line_before(st, s, batch, i);
          open_story(st, std::move(line), here);
        }
      }
    }
    // The lines of stories still open refer to the batch, which goes: they keep copies. Only a stream of the batch
    // can have lines in it (a story's earlier lines were copied at the end of their own batch).
    for (std::uint32_t k : batch.streams_present()) {
      if (open_stories == 0) break;
      if (k < streams.size() && streams[k].story) {
        for (auto& l : streams[k].story->lines) {
          resolve(l);
          l.own();
        }
      }
    }
    // Each stream's last line of the batch: what a story opening in the next batch continues.
    for (const auto& [s, k] : batch.last_records()) {
      if (s >= streams.size()) continue;
      streams[s].prev_level = batch[k].level;
      streams[s].prev_text = std::string(batch.text(k).substr(0, 512));
    }
  }

  void advance(Time now, std::vector<Incident>& out) {
    for (auto& st : streams) {
      if (st.story && st.story->last_time + options.linger_time < now) close(st, out);
    }
  }

  // Wall-clock silence: a story whose stream printed nothing more for linger_time is closed, whatever the times its
  // lines carry (a process that died with its traceback prints nothing after it).
  void tick(std::vector<Incident>& out) {
    const auto now = options.clock->steady();
    for (auto& st : streams) {
      if (st.story && st.story->last_read + options.linger_time < now) close(st, out);
    }
  }

  void finish(std::vector<Incident>& out) {
    for (auto& st : streams) {
      if (st.story) close(st, out);
    }
  }
};

Detector::Detector(std::shared_ptr<const CompiledRules> rules, DetectorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->rules = std::move(rules);
  impl_->index_rules();
  impl_->options = std::move(options);
  for (const auto& o : impl_->options.overrides) impl_->overrides[o.fingerprint] = o;
}
Detector::~Detector() = default;
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;

void Detector::set_stream(std::uint32_t index, StreamIdentity identity) {
  impl_->stream(index).identity = std::move(identity);
}

void Detector::new_instance(std::uint32_t index, std::vector<Incident>& out) {
  StreamState& st = impl_->stream(index);
  if (st.story) impl_->close(st, out);
  st.prev_level = Level::unknown;
  st.prev_text.clear();
  st.last_story_end = 0;
  st.last_claim = 0;
  st.last_claim_rule = -1;
  st.last_claim_time = Time{};
}

void Detector::end_stream(std::uint32_t index, std::vector<Incident>& out) {
  StreamState& st = impl_->stream(index);
  if (st.story) impl_->close(st, out);
  st = StreamState{};
}

void Detector::replace_rules(std::shared_ptr<const CompiledRules> rules) {
  impl_->rules = std::move(rules);
  impl_->index_rules();
}

void Detector::process(const RecordBatch& batch, const std::vector<AnchorHit>& anchors, const std::vector<Hit>& hits,
                       std::vector<Incident>& out) {
  if (!impl_->options.enabled || batch.empty()) return;
  impl_->process(batch, anchors, hits, out);
}

void Detector::advance(Time now, std::vector<Incident>& out) {
  if (impl_->options.enabled) impl_->advance(now, out);
}
void Detector::tick(std::vector<Incident>& out) {
  if (impl_->options.enabled) impl_->tick(out);
}
void Detector::finish(std::vector<Incident>& out) {
  if (impl_->options.enabled) impl_->finish(out);
}

bool Detector::escalate(std::string_view id, Severity severity, std::vector<Incident>& out) {
  return impl_->options.enabled && impl_->escalate(id, severity, out);
}

std::vector<FingerprintEntry> Detector::inventory() const {
  std::vector<FingerprintEntry> out;
  for (const auto& fp : impl_->inventory_order) {
    if (auto it = impl_->inventory.find(fp); it != impl_->inventory.end()) out.push_back(it->second);
  }
  return out;
}
void Detector::restore_inventory(std::vector<FingerprintEntry> entries) {
  Impl& m = *impl_;
  m.inventory.clear();
  m.inventory_order.clear();
  for (auto& e : entries) {
    if (e.fingerprint.empty() || m.inventory.count(e.fingerprint)) continue;
    m.inventory_order.push_back(e.fingerprint);
    m.inventory.emplace(e.fingerprint, std::move(e));
  }
  m.bound(m.inventory, m.inventory_order);
  ++m.inventory_version;
}

std::vector<UnclassifiedContinuation> Detector::book_state() const {
  const Impl& m = *impl_;
  std::vector<UnclassifiedContinuation> out;
  // Those of a previous run not seen again yet come first (older), then the book in its order.
  for (const auto& [key, c] : m.continued) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first_seen < b.first_seen; });
  for (const auto& key : m.book_order) {
    auto it = m.book.find(key);
    if (it == m.book.end()) continue;
    const Incident& inc = it->second;
    const auto nul = key.find('\0');
    out.push_back(UnclassifiedContinuation{key.substr(0, nul), inc.fingerprint, inc.id, inc.revision, inc.count,
                                           inc.severity, inc.first_seen});
  }
  return out;
}

void Detector::restore_book(std::vector<UnclassifiedContinuation> entries) {
  Impl& m = *impl_;
  m.continued.clear();
  const std::size_t skip =
      entries.size() > m.options.max_fingerprints ? entries.size() - m.options.max_fingerprints : 0;
  for (std::size_t i = skip; i < entries.size(); ++i) {
    auto& c = entries[i];
    if (c.id.empty() || c.fingerprint.empty()) continue;
    m.continued[c.stream + '\0' + c.fingerprint] = std::move(c);
  }
}

std::size_t Detector::distinct() const { return impl_->inventory.size(); }
std::uint64_t Detector::inventory_version() const { return impl_->inventory_version; }
const DetectorStats& Detector::stats() const { return impl_->stats; }

}  // namespace faultline
