#include "core/base/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

namespace dtsim {

std::optional<size_t> first_invalid_utf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: the sequence length and the range its second byte must fall in (RFC 3629,
    // section 4), which excludes overlong forms, surrogates and code points above U+10FFFF.
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    i += len;
  }
  return std::nullopt;
}

TextPosition position_of(std::string_view text, size_t offset) {
  TextPosition p;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  auto append = [&](std::string_view part) {
    for (char ch : part) {
      const auto c = static_cast<unsigned char>(ch);
      if ((c < 0x20 && ch != '\n' && ch != '\t') || c == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02X", c);
        out += buf;
      } else {
        out += ch;
      }
    }
  };
  if (text.size() <= max_bytes) {
    append(text);
    return out;
  }
  // Keep the start, where the location and key are, and the end, where hints are.
  const size_t head = max_bytes * 3 / 4, tail = max_bytes / 4;
  append(text.substr(0, head));
  out += " ... (" + std::to_string(text.size() - head - tail) + " bytes cut) ... ";
  append(text.substr(text.size() - tail));
  return out;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      size_t sub = prev[j - 1] + (same ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  // A word that begins a name is a short form of it ("H100" for "H100-SXM", "A100-PCIe" for
  // "A100-PCIe-40GB", "gpus" for "gpus_per_node"), whatever a closer typo of another name would
  // say ("A100-PCIe" is one letter from "H100-PCIe"); the shortest such name is the likeliest.
  std::string best;
  if (word.size() >= 2) {
    const std::string w = lower(word);
    for (const auto& c : candidates)
      if (c.size() > w.size() && lower(c).rfind(w, 0) == 0 &&
          (best.empty() || c.size() < best.size()))
        best = c;
    if (!best.empty()) return best;
  }
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: skip what cannot win, so a megabyte
    // of text costs nothing here.
    const size_t gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap >= best_d) continue;
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace dtsim
