#include "top/top_keys.hpp"

namespace observer_cli {

std::vector<key> decode_keys(std::string& pending, bool flush_escape) {
  std::vector<key> keys;
  std::size_t i = 0;
  while (i < pending.size()) {
    char c = pending[i];
    if (c != '\x1b') {
      if (c == '\r' || c == '\n')
        keys.push_back({key_kind::enter});
      else if (c == 0x7f || c == 0x08)
        keys.push_back({key_kind::backspace});
      else
        keys.push_back({key_kind::character, c});
      ++i;
      continue;
    }
    if (i + 1 >= pending.size()) {
      if (!flush_escape) break;
      keys.push_back({key_kind::escape});
      ++i;
      continue;
    }
    char intro = pending[i + 1];
    if (intro != '[' && intro != 'O') {  // ESC then another key: Esc, then that key
      keys.push_back({key_kind::escape});
      ++i;
      continue;
    }
    // A sequence ends at its first byte in 0x40..0x7e after the introducer.
    std::size_t end = i + 2;
    while (end < pending.size() && !(pending[end] >= 0x40 && pending[end] <= 0x7e)) ++end;
    if (end >= pending.size()) {
      if (!flush_escape) break;
      i = pending.size();  // a cut-off sequence: drop it
      continue;
    }
    std::string seq = pending.substr(i + 2, end - i - 1);  // parameters + final byte
    if (seq == "A")
      keys.push_back({key_kind::up});
    else if (seq == "B")
      keys.push_back({key_kind::down});
    else if (seq == "5~")
      keys.push_back({key_kind::page_up});
    else if (seq == "6~")
      keys.push_back({key_kind::page_down});
    else if (seq == "H" || seq == "1~" || seq == "7~")
      keys.push_back({key_kind::home});
    else if (seq == "F" || seq == "4~" || seq == "8~")
      keys.push_back({key_kind::end});
    // Other sequences (function keys, left/right) are ignored.
    i = end + 1;
  }
  pending.erase(0, i);
  return keys;
}

}  // namespace observer_cli
