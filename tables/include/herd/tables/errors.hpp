// What the tables layer reports. An ordinary outcome is a value: a creation
// whose name is taken, a give_away to a process that has ended. A broken
// contract throws herd::table_error (ETS's badarg): using a deleted table,
// writing a protected table from another process, update_counter on a bag.
#pragma once
#include <herd/actors/result.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace herd {

struct table_error : std::logic_error {
  using std::logic_error::logic_error;
};

namespace tables {

enum class errc : uint8_t {
  name_taken,   // create: a live table has that name
  not_alive,    // give_away / heir: the process has ended (or never was)
  already_owner,  // give_away to the owner itself
  not_joined,   // pg::leave: a pid was not in the group
};

const char* to_string(errc e) noexcept;

struct error {
  errc code;
  std::string detail{};
  std::string message() const;
};

template <class T = herd::ok>
using result = herd::result<T, error>;

}  // namespace tables
}  // namespace herd
