// Field transforms a rule can ask for on a captured field: GPU architectures written as numbers become sm_NN names.
#include <array>
#include <cctype>

#include "faultline/rules.hpp"

namespace faultline {

namespace {

struct Family {
  std::string_view arch;
  std::string_view name;
};

// Families by architecture; sm_101 is the Jetson Thor part CUDA 13 renamed sm_110.
constexpr std::array<Family, 22> kFamilies{{
    {"sm_35", "Kepler"},
    {"sm_37", "Kepler"},
    {"sm_50", "Maxwell"},
    {"sm_52", "Maxwell"},
    {"sm_53", "Maxwell (Jetson)"},
    {"sm_60", "Pascal"},
    {"sm_61", "Pascal"},
    {"sm_62", "Pascal (Jetson)"},
    {"sm_70", "Volta"},
    {"sm_72", "Volta (Jetson Xavier)"},
    {"sm_75", "Turing"},
    {"sm_80", "Ampere datacenter"},
    {"sm_86", "Ampere"},
    {"sm_87", "Ampere (Jetson Orin)"},
    {"sm_89", "Ada"},
    {"sm_90", "Hopper"},
    {"sm_100", "Blackwell datacenter"},
    {"sm_101", "Blackwell (Jetson Thor)"},
    {"sm_103", "Blackwell datacenter"},
    {"sm_110", "Blackwell (Jetson Thor)"},
    {"sm_120", "Blackwell consumer"},
    {"sm_121", "Blackwell DGX Spark"},
}};

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Reads the digits at `i` (at most `max` of them); returns how many were read.
std::size_t digits(std::string_view s, std::size_t i, std::size_t max, unsigned& value) {
  std::size_t n = 0;
  value = 0;
  while (i + n < s.size() && n < max && digit(s[i + n])) value = value * 10 + static_cast<unsigned>(s[i + n++] - '0');
  return n;
}

std::optional<std::string> arch(unsigned major, unsigned minor) {
  if (major < 1 || major > 19 || minor > 9) return std::nullopt;
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace

std::optional<FieldTransform> parse_field_transform(std::string_view name) {
  if (name == "sm_arch") return FieldTransform::sm_arch;
  return std::nullopt;
}

std::string_view to_string(FieldTransform t) {
  switch (t) {
    case FieldTransform::sm_arch:
      return "sm_arch";
  }
  return "";
}

std::optional<std::string> normalise_sm_arch(std::string_view text) {
  // The first number in the text, and what follows it: "(12, 0)" / "12,0", "12.0", "120", "sm_120a".
  std::size_t i = 0;
  while (i < text.size() && !digit(text[i])) ++i;
  if (i == text.size()) return std::nullopt;
  if (i >= 1 && text[i - 1] == '-') return std::nullopt;  // a negative number is no architecture
  unsigned first = 0;
  std::size_t n = digits(text, i, 4, first);
  if (i + n < text.size() && digit(text[i + n])) return std::nullopt;  // five digits or more: a version, a byte count
  std::size_t j = i + n;
  // A pair: major, then '.' or ',' (spaces allowed after a comma), then the one-digit minor.
  if (n <= 2 && j < text.size() && (text[j] == '.' || text[j] == ',')) {
    std::size_t k = j + 1;
    while (text[j] == ',' && k < text.size() && text[k] == ' ') ++k;
    unsigned minor = 0;
    std::size_t m = digits(text, k, 2, minor);
    if (m == 1) return arch(first, minor);
    return std::nullopt;  // "12.01": not a capability
  }
  // A compact number: the last digit is the minor version ("90", "120").
  if (n == 2 || n == 3) return arch(first / 10, first % 10);
  return std::nullopt;
}

std::string_view gpu_family(std::string_view sm_arch) {
  for (const auto& f : kFamilies) {
    if (f.arch == sm_arch) return f.name;
  }
  return "";
}

void apply_field_transforms(const std::vector<std::pair<std::string, FieldTransform>>& transforms, Fields& fields) {
  for (const auto& [name, transform] : transforms) {
    const std::string* value = find_field(fields, name);
    if (value == nullptr) continue;
    switch (transform) {
      case FieldTransform::sm_arch: {
        std::string shown = *value;
        if (auto sm = normalise_sm_arch(*value)) {
          shown = *sm;
          if (auto family = gpu_family(*sm); !family.empty()) shown += " (" + std::string(family) + ")";
          set_field(fields, name, *sm);
        }
        set_field(fields, name + "_gpu", shown);
        break;
      }
    }
  }
}

}  // namespace faultline
