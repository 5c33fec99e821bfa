// The loader's ELF inspection (actors/src/code/elf_check.hpp), which reads an
// untrusted file before dlopen: what it finds in a real module, and that
// truncated or corrupted images are refused or accepted without reading out
// of bounds (run under ASan to mean something).
#include "code/elf_check.hpp"

#include <herd/actors/module_handler.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("ELF inspection reads a module's needed libraries and its descriptor's ABI from the file", "[modules]") {
  std::string img = file_bytes(std::string(HERD_TEST_MODULES_DIR) + "/greeter_v1.so");
  REQUIRE(img.size() > 64);
  auto ins = herd::detail::elf::inspect(img);
  INFO(ins.why);
  REQUIRE(ins.ok);
  CHECK(ins.has_descriptor);
  CHECK(ins.descriptor_size == sizeof(herd::detail::module_descriptor));
  CHECK(ins.abi_hash == herd::detail::module_abi_hash);
  CHECK(ins.abi_text == HERD_MODULE_ABI_TEXT);
  CHECK(std::any_of(ins.needed.begin(), ins.needed.end(),
                    [](const std::string& n) { return n.rfind("libstdc++.so", 0) == 0; }));
  auto plain = herd::detail::elf::inspect(file_bytes(std::string(HERD_TEST_MODULES_DIR) + "/no_descriptor.so"));
  CHECK(plain.ok);
  CHECK_FALSE(plain.has_descriptor);
}

TEST_CASE("ELF inspection of truncated and corrupted modules stays within the image", "[modules]") {
  const std::string img = file_bytes(std::string(HERD_TEST_MODULES_DIR) + "/greeter_v1.so");
  REQUIRE(img.size() > 64);
  int accepted = 0;
  for (std::size_t n = 0; n < img.size(); n += 97) {
    // A copy of exactly n bytes: ASan sees a read past its end.
    std::string cut(img.data(), n);
    cut.shrink_to_fit();
    accepted += herd::detail::elf::inspect(cut).ok;
  }
  std::mt19937 rng(20261202);
  for (int round = 0; round < 2000; ++round) {
    std::string bad = img;
    for (int k = 0; k < 8; ++k) {
      // Mostly the headers and tables near the start and the end (section
      // headers), where offsets and sizes live.
      const std::size_t edge = std::min<std::size_t>(bad.size(), 4096);
      std::size_t at = rng() % bad.size();
      if (round % 3 == 0) at = rng() % edge;
      if (round % 3 == 1) at = bad.size() - 1 - rng() % edge;
      bad[at] = static_cast<char>(rng());
    }
    accepted += herd::detail::elf::inspect(bad).ok;
  }
  SUCCEED("accepted " << accepted);
}
