// Who owns a table, ETS's way: the owner's end deletes it unless an heir
// takes it; give_away; protection; named tables.
#include <herd/tables/table.hpp>

#include "support/node_fixture.hpp"

#include <string>
#include <vector>

using herd::table;
using herd::table_access;
using herd::test::opts;
using herd::test::run_node;

namespace {
using tab = table<int, int>;

// Spawns a process that creates a table with `o`, sends it to `to` and
// waits for a message (any int) before it returns.
herd::pid owner_of(herd::table_options o, herd::pid to) {
  return herd::spawn([o, to]() mutable {
    auto t = tab::create(std::move(o));
    herd::send(to, *t);
    herd::receive([](int) {});
  });
}
}  // namespace

TEST_CASE("the owner's end deletes its table, before a monitor of the owner hears of it") {
  bool deleted_at_down = false, threw_after = false, name_free = false;
  run_node(opts(2), [&] {
    herd::pid o = owner_of({.name = "mine"}, herd::self());
    auto t = herd::receive([](tab t) { return t; });
    auto m = herd::monitor(o);
    herd::send(o, 1);
    herd::receive([&](const herd::down&) { deleted_at_down = t.deleted(); });
    try {
      (void)t.lookup(1);
    } catch (const herd::table_error& e) {
      threw_after = std::string(e.what()).find("deleted") != std::string::npos;
    }
    name_free = !tab::whereis("mine").has_value() && tab::create({.name = "mine"}).ok();
    (void)m;
  });
  CHECK(deleted_at_down);
  CHECK(threw_after);
  CHECK(name_free);
}

TEST_CASE("an heir takes the table over with a table_transfer and the data, a dead heir means deletion") {
  bool got = false, owner_is_me = false, objects_kept = false, data_ok = false, from_ok = false;
  bool dead_heir_deletes = false;
  run_node(opts(2), [&] {
    herd::pid o = owner_of({.heir = herd::self(), .heir_data = std::string("yours")}, herd::self());
    auto t = herd::receive([](tab t) { return t; });
    herd::send(o, 1);
    herd::receive([&](herd::table_transfer<int, int>& tr) {
      got = tr.table == t;
      from_ok = tr.from == o;
      data_ok = std::any_cast<std::string>(tr.data) == "yours";
    });
    owner_is_me = t.owner() == herd::self();
    t.insert(1, 1);  // protected: only the owner writes — that is us now
    objects_kept = t.size() == 1;

    herd::pid heir = herd::spawn([] {});
    auto hm = herd::monitor(heir);
    herd::receive([](const herd::down&) {});
    herd::pid o2 = owner_of({.heir = heir}, herd::self());
    auto t2 = herd::receive([](tab t) { return t; });
    auto m2 = herd::monitor(o2);
    herd::send(o2, 1);
    herd::receive([&](const herd::down&) { dead_heir_deletes = t2.deleted(); });
    (void)hm, (void)m2;
  });
  CHECK(got);
  CHECK(from_ok);
  CHECK(data_ok);
  CHECK(owner_is_me);
  CHECK(objects_kept);
  CHECK(dead_heir_deletes);
}

TEST_CASE("give_away hands the table on, to a dead process or to the owner it is an error value") {
  bool moved = false, msg = false, dead = false, self_err = false, old_owner_refused = false;
  run_node(opts(2), [&] {
    auto t = *tab::create();
    herd::pid me = herd::self();
    herd::pid taker = herd::spawn([me] {
      herd::receive([&](herd::table_transfer<int, int>& tr) { herd::send(me, tr.table.owner() == herd::self()); });
    });
    auto r = t.give_away(taker, 42);
    moved = r.ok();
    msg = herd::receive([](bool b) { return b; });
    try {
      t.insert(1, 1);
    } catch (const herd::table_error&) {
      old_owner_refused = true;
    }
    auto mine = *tab::create();
    herd::pid gone = herd::spawn([] {});
    auto m = herd::monitor(gone);
    herd::receive([](const herd::down&) {});
    dead = mine.give_away(gone).code() == herd::tables::errc::not_alive;
    self_err = mine.give_away(me).code() == herd::tables::errc::already_owner;
    (void)m;
  });
  CHECK(moved);
  CHECK(msg);
  CHECK(old_owner_refused);
  CHECK(dead);
  CHECK(self_err);
}

TEST_CASE("protection: protected lets all read and only the owner write, private refuses every other process") {
  std::vector<std::string> errors;
  bool public_write = false, protected_read = false;
  run_node(opts(2), [&] {
    auto prot = *tab::create();
    auto priv = *tab::create({.access = table_access::private_});
    auto pub = *tab::create({.access = table_access::public_});
    prot.insert(1, 1);
    herd::pid me = herd::self();
    herd::spawn([=]() mutable {
      std::vector<std::string> errs;
      auto attempt = [&](auto f) {
        try {
          f();
        } catch (const herd::table_error& e) {
          errs.push_back(e.what());
        }
      };
      attempt([&] { prot.insert(2, 2); });
      attempt([&] { (void)priv.lookup(1); });
      attempt([&] { priv.insert(2, 2); });
      pub.insert(3, 3);
      herd::send(me, std::make_pair(errs, prot.lookup(1).has_value()));
    });
    herd::receive([&](std::pair<std::vector<std::string>, bool>& r) {
      errors = r.first;
      protected_read = r.second;
    });
    public_write = pub.member(3);
  });
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].find("herd::table::insert") != std::string::npos);
  CHECK(errors[0].find("protected") != std::string::npos);
  CHECK(errors[1].find("private") != std::string::npos);
  CHECK(protected_read);
  CHECK(public_write);
}

TEST_CASE("named tables: a taken name is an error value, whereis finds the table, other types are refused") {
  bool taken = false, found = false, wrong_types = false, outside = false;
  run_node(opts(1), [&] {
    auto a = *tab::create({.name = "scores"});
    auto b = tab::create({.name = "scores"});
    taken = !b && b.code() == herd::tables::errc::name_taken;
    found = tab::whereis("scores") == std::optional<tab>(a);
    try {
      (void)table<std::string, int>::whereis("scores");
    } catch (const herd::table_error&) {
      wrong_types = true;
    }
  });
  try {
    (void)tab::create();
  } catch (const herd::not_in_process& e) {
    outside = std::string(e.call()) == "herd::table::create";
  }
  CHECK(taken);
  CHECK(found);
  CHECK(wrong_types);
  CHECK(outside);
}
