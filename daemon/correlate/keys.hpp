// keys: which state machine a hit belongs to — a rule (its index in the rule set in force) and the rule's key text
// for the hit (stream, node, captured fields). Stories and open incidents are both found by it. Plain values.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace faultline::correlate {

struct StoryKey {
  std::uint32_t rule = 0;
  std::string key;

  friend bool operator==(const StoryKey& a, const StoryKey& b) { return a.rule == b.rule && a.key == b.key; }
};

// A key looked up without copying its text.
struct StoryKeyView {
  std::uint32_t rule = 0;
  std::string_view key;
};

inline StoryKeyView view(const StoryKey& k) { return {k.rule, k.key}; }
inline StoryKeyView view(StoryKeyView k) { return k; }

struct StoryKeyHash {
  using is_transparent = void;
  std::size_t operator()(StoryKeyView k) const {
    std::size_t h = std::hash<std::string_view>{}(k.key);
    return h ^ (std::size_t{k.rule} * 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  }
  std::size_t operator()(const StoryKey& k) const { return (*this)(view(k)); }
};

struct StoryKeyEqual {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    StoryKeyView x = view(a), y = view(b);
    return x.rule == y.rule && x.key == y.key;
  }
};

// The order open incidents are visited in (release at end of input, attribution of held cascades): the rule index
// compared as decimal text ("10" before "9"), then the key. It is the order of the "rule\0key" strings these keys
// replaced, kept so that incidents come out in the same order as they always have.
struct StoryKeyOrder {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    StoryKeyView x = view(a), y = view(b);
    if (x.rule != y.rule) return decimal(x.rule) < decimal(y.rule);
    return x.key < y.key;
  }

 private:
  struct Digits {
    char text[10];
    std::size_t size;
    bool operator<(const Digits& o) const { return std::string_view(text, size) < std::string_view(o.text, o.size); }
  };
  static Digits decimal(std::uint32_t v) {
    Digits d{};
    d.size = static_cast<std::size_t>(std::to_chars(d.text, d.text + sizeof d.text, v).ptr - d.text);
    return d;
  }
};

}  // namespace faultline::correlate
