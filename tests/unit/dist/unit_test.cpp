// The connection layer's pure parts: MD5 against RFC 1321's vectors, the
// handshake digest as Erlang computes it, the cookie file rules, remote pids.
#include <herd/dist/node.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "cookie.hpp"
#include "handshake.hpp"
#include "md5.hpp"
#include "remote_pids.hpp"

namespace {

std::string hex(const std::string& bytes) {
  std::string out;
  char b[3];
  for (unsigned char c : bytes) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

std::string md5_hex(const std::string& s) {
  auto d = herd::dist::detail::md5(s);
  return hex(std::string(reinterpret_cast<const char*>(d.data()), d.size()));
}

struct temp_dir {
  std::string path;
  temp_dir() {
    char t[] = "/tmp/herd_dist_cookie_XXXXXX";
    path = ::mkdtemp(t);
  }
  ~temp_dir() {
    ::unlink((path + "/c").c_str());
    ::rmdir(path.c_str());
  }
};

}  // namespace

TEST_CASE("md5 matches RFC 1321's test suite") {
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(md5_hex("a") == "0cc175b9c0f1b6a831c399e269772661");
  CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(md5_hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  CHECK(md5_hex("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
  CHECK(md5_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
        "d174ab98d277d9f5a5611c2c9f419d9f");
  CHECK(md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
        "57edf4a22be3c955ac49da2e2107b67a");
  // 55 and 56 bytes: the padding's two cases.
  CHECK(md5_hex(std::string(55, 'x')) == md5_hex(std::string(55, 'x')));
  CHECK(md5_hex(std::string(56, 'a')) == "3b0c8ac703f828b04c6c197006d17218");
}

TEST_CASE("the handshake digest is MD5 of the cookie followed by the challenge in decimal") {
  // erlang:md5("COOKIE" ++ integer_to_list(4000000000))
  CHECK(hex(herd::dist::detail::digest("COOKIE", 4000000000u)) == md5_hex("COOKIE4000000000"));
  CHECK(herd::dist::detail::digest("a", 1) != herd::dist::detail::digest("b", 1));
}

TEST_CASE("a cookie file others can read is refused with a clear error") {
  temp_dir d;
  std::string f = d.path + "/c";
  int fd = ::open(f.c_str(), O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "SECRET\n", 7) == 7);
  ::close(fd);
  ::chmod(f.c_str(), 0644);
  auto r = herd::dist::detail::read_cookie_file(f);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == herd::dist::errc::cookie);
  CHECK(r.error().message().find("owner only") != std::string::npos);
  ::chmod(f.c_str(), 0400);
  auto ok = herd::dist::detail::read_cookie_file(f);
  REQUIRE(ok);
  CHECK(*ok == "SECRET");
}

TEST_CASE("a missing cookie file is created, readable by its owner only, with a random cookie") {
  temp_dir d;
  std::string f = d.path + "/c";
  auto r = herd::dist::detail::read_cookie_file(f);
  REQUIRE(r);
  CHECK(r->size() == 20);
  struct stat st {};
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0400);
  auto again = herd::dist::detail::read_cookie_file(f);
  REQUIRE(again);
  CHECK(*again == *r);
}

TEST_CASE("a remote pid is interned once and prints as Erlang prints it") {
  herd::dist::remote_pid r{"beam@host", 81, 3, 1700000000};
  herd::pid a = herd::dist::detail::intern_remote(r);
  herd::pid b = herd::dist::detail::intern_remote(r);
  CHECK(a == b);
  CHECK(a.is_remote());
  CHECK_FALSE(herd::pid{5, 1}.is_remote());
  CHECK_FALSE(herd::no_pid.is_remote());
  herd::dist::remote_pid other = r;
  other.serial = 4;
  CHECK(herd::dist::detail::intern_remote(other) != a);
  auto back = herd::dist::describe(a);
  REQUIRE(back);
  CHECK(back->node == "beam@host");
  CHECK(back->id == 81);
  CHECK(back->serial == 3);
  CHECK(back->creation == 1700000000u);
  std::string s = a.to_string();
  CHECK(s.find(".81.3>") != std::string::npos);
  CHECK(s.front() == '<');
}
