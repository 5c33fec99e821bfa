#include "text_table.hpp"

#include "terminal_text.hpp"

#include <algorithm>

namespace observer_cli {

text_table::text_table(std::vector<column> columns) : columns_(std::move(columns)) {}

void text_table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  // Escaped before the widths are measured, so the columns stay aligned.
  for (auto& c : cells) c = terminal_safe(c);
  rows_.push_back(std::move(cells));
}

std::string fit(const std::string& s, std::size_t width, text_table::align how) {
  if (s.size() >= width) return s.substr(0, width);
  std::string pad(width - s.size(), ' ');
  return how == text_table::align::left ? s + pad : pad + s;
}

std::string text_table::render() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].title.size();
    for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  auto line = [&](auto cell_of) {
    std::string l;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (c) l += "  ";
      // The last left-aligned column is not padded: no trailing blanks.
      bool last = c + 1 == columns_.size();
      l += last && columns_[c].how == align::left ? cell_of(c) : fit(cell_of(c), width[c], columns_[c].how);
    }
    out += l + "\n";
  };
  line([&](std::size_t c) { return columns_[c].title; });
  for (const auto& r : rows_) line([&](std::size_t c) { return r[c]; });
  return out;
}

}  // namespace observer_cli
