// The part of a table that does not depend on its key and value types: who
// owns it, its name, its heir, and the registry that deletes it (or hands it
// to the heir) when the owner ends. ownership.cpp has the design.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/tables/errors.hpp>
#include <herd/tables/detail/store.hpp>

#include <any>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace herd {
enum class table_access : uint8_t { public_, protected_, private_ };
}

namespace herd::tables::detail {

struct table_base {
  table_base(std::string n, table_kind k, table_access a, const std::type_info& kt, const std::type_info& vt)
      : name(std::move(n)), kind(k), access(a), key_type(kt), value_type(vt) {}
  virtual ~table_base() = default;
  table_base(const table_base&) = delete;
  table_base& operator=(const table_base&) = delete;

  uint64_t id = 0;            // set by adopt: unique in this OS process
  const std::string name;     // empty: not a named table
  const table_kind kind;
  const table_access access;
  const std::type_info& key_type;
  const std::type_info& value_type;
  std::atomic<pid> owner{no_pid};
  std::atomic<bool> deleted{false};

  virtual std::size_t size() const = 0;
  virtual std::size_t memory() const = 0;
  virtual void clear() = 0;
  // Sends the typed herd::table_transfer<K, V> message.
  virtual void send_transfer(pid to, pid from, std::any data) = 0;

  // "table 'sessions' (#3)" / "table #3", for errors.
  std::string label() const;
  // Throws table_error unless the calling process may read / write it.
  void check_read(const char* op) const;
  void check_write(const char* op) const;
  [[noreturn]] void refuse(const char* op, const char* why) const;
};

// The calling process becomes the owner (it must be a process); the name, if
// any, is taken. heir: no_pid for none.
result<> adopt(const std::shared_ptr<table_base>& t, pid heir, std::any heir_data);
// The owner only (checked by the caller). Deletes now: later calls throw.
void destroy(table_base& t);
result<> give_away(table_base& t, pid to, std::any data);
void set_heir(table_base& t, pid heir, std::any data);
std::shared_ptr<table_base> find(std::string_view name);

struct table_info {
  uint64_t id;
  std::string name;
  table_kind kind;
  table_access access;
  pid owner;
  pid heir;
  std::size_t size;
  std::size_t memory;
  std::string key_type, value_type;
};
std::vector<table_info> list();

}  // namespace herd::tables::detail
