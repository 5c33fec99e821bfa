// An aligned text table: a header row and data rows, columns padded to their
// widest cell, numeric columns right-aligned so digits line up.
#pragma once
#include <string>
#include <vector>

namespace observer_cli {

class text_table {
 public:
  enum class align { left, right };
  struct column {
    std::string title;
    align how = align::left;
  };

  explicit text_table(std::vector<column> columns);
  void add_row(std::vector<std::string> cells);  // one cell per column, shown terminal_safe
  // The table, one '\n'-terminated line per row, columns two spaces apart.
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Pads or cuts `s` to exactly `width` columns (ASCII; the table's cells are).
std::string fit(const std::string& s, std::size_t width, text_table::align how = text_table::align::left);

}  // namespace observer_cli
