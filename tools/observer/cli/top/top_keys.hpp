// Decoding the bytes of a raw terminal into keys: plain characters, Enter,
// Backspace, Esc, and the arrow/paging escape sequences (CSI "\x1b[A" and
// SS3 "\x1bOA" forms, as xterm and tmux send them).
#pragma once
#include <string>
#include <vector>

namespace observer_cli {

enum class key_kind { character, up, down, page_up, page_down, home, end, enter, escape, backspace };

struct key {
  key_kind kind = key_kind::character;
  char ch = 0;  // for key_kind::character
};

// Consumes the complete keys at the front of `pending`. A lone trailing ESC
// is left there (it may be the start of a sequence still on its way) unless
// `flush_escape`: then it is the Esc key.
std::vector<key> decode_keys(std::string& pending, bool flush_escape);

}  // namespace observer_cli
