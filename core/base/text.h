// Text that crosses the boundary between users and dtsim: UTF-8 validation of input, and
// echoed values made safe to print.
//
// Contract:
// - first_invalid_utf8() finds the first byte that is not part of well-formed UTF-8 (RFC 3629:
//   no overlong forms, no surrogates U+D800..DFFF, nothing above U+10FFFF), so that JSON output,
//   which must be UTF-8, never meets a string it cannot encode.
// - printable() is what an error message may echo: control characters (terminal escape
//   sequences among them) written as \xNN, and text longer than a screenful cut in the middle
//   with the count of bytes left out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// The offset of the first byte that is not well-formed UTF-8; nullopt when all of it is.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// 1-based line and column (in bytes) of an offset in a text.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition position_of(std::string_view text, size_t offset);

// `text` with control characters other than newline and tab escaped as \xNN, and the middle of
// text longer than `max_bytes` replaced by "... (N bytes cut) ...".
std::string printable(std::string_view text, size_t max_bytes = 1000);

// The current time as ISO-8601 in UTC ("2026-12-01T22:40:00Z"), as profiles record it.
std::string utc_timestamp();

// The closest name within an edit distance that suggests a typo or, failing that, the shortest
// name the word begins ("H100" -> "H100-SXM"), case-insensitively; "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace dtsim
