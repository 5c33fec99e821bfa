// libFuzzer target: the chat server's line protocol (examples/chat_protocol.hpp)
// on arbitrary bytes, split across reads where the first byte says. Checks
// what chat_server relies on: no line handed on is longer than max_line or
// holds a '\n'; a partial line never grows past max_line
// and its buffer is given back once no line is pending; every command's
// views lie inside its line; a join or msg names a valid room; a msg's rest
// is "room text".
#include "chat_protocol.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

bool check_line(std::string_view line) {
  if (line.size() > chat::max_line || line.find('\n') != std::string_view::npos) std::abort();
  const chat::command c = chat::parse(line);
  if (!inside(c.room, line) || !inside(c.text, line) || !inside(c.rest, line)) std::abort();
  switch (c.kind) {
    case chat::command::join:
      if (!chat::valid_room(c.room)) std::abort();
      break;
    case chat::command::msg:
      if (!chat::valid_room(c.room) || c.rest.substr(0, c.room.size()) != c.room ||
          c.rest.size() != c.room.size() + 1 + c.text.size())
        std::abort();
      break;
    case chat::command::bad:
      if (!*c.error) std::abort();
      break;
    default:
      break;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = size ? data[0] * size / 256 : 0;
  chat::line_reader reader;
  for (std::string_view part : {in.substr(0, cut), in.substr(cut)}) {
    reader.feed(part, check_line, [] { return true; });
    if (reader.pending() > chat::max_line) std::abort();
    if (reader.pending() == 0 && reader.capacity() > chat::line_reader::keep_capacity) std::abort();
  }
  return 0;
}
