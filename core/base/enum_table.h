// One name table per enum: the single place that pairs each value with the word a user writes
// and a report prints. Parsing, printing and the scenario schema's `choices` all read it, so the
// three cannot drift apart, and no string compare chain falls back to a silent default.
//
// Contract:
// - A table lists every value of its enum once, in the order the names are documented (the
//   schema's choices and the generated reference show them in that order).
// - to_string() of a value missing from the table is a programmer error (std::logic_error);
//   input never reaches it.
// - parse() returns nullopt for a word that is not in the table; from_valid() is for words the
//   schema has already checked, so a miss there is a programmer error too.
// Thread safety: tables are constexpr data; every function is pure.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
struct EnumTable {
  std::array<EnumName<E>, N> entries;

  constexpr std::string_view to_string(E value) const {
    for (const auto& e : entries)
      if (e.value == value) return e.name;
    throw std::logic_error("an enum value is missing from its name table");
  }

  constexpr std::optional<E> parse(std::string_view name) const {
    for (const auto& e : entries)
      if (e.name == name) return e.value;
    return std::nullopt;
  }

  E from_valid(std::string_view name) const {
    if (auto v = parse(name)) return *v;
    throw std::logic_error("'" + std::string(name) +
                           "' passed the schema but is missing from its enum's name table");
  }

  // The names in table order, as the schema's choices list them.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(N);
    for (const auto& e : entries) out.emplace_back(e.name);
    return out;
  }

  constexpr auto begin() const { return entries.begin(); }
  constexpr auto end() const { return entries.end(); }
  constexpr std::size_t size() const { return N; }
};

// Deduces the enum and the size: make_enum_table<Topology>({{Topology::kStar, "star"}, ...}).
template <class E, std::size_t N>
constexpr EnumTable<E, N> make_enum_table(const EnumName<E> (&entries)[N]) {
  EnumTable<E, N> table{};
  for (std::size_t i = 0; i < N; ++i) table.entries[i] = entries[i];
  return table;
}

}  // namespace dtsim
