// termbench: the cost of herd's term codec on a typical small message,
// {push, <<"user42">>, <<"hello ...">>, 12345}, against erl_interface's ei
// — and how much stack each recursive term operation takes per level of
// nesting (what bounds decode_options::max_depth on a 64 KiB actor stack).
//
//   termbench [ITERATIONS=1000000]
//
// One line per result:
//   termbench op=<what> ns_per_msg=<n> iterations=<n>
//   termbench stack op=<what> depth=<n> bytes=<n> bytes_per_level=<n>
//
// The ei rows: "ei_decode_fields" reads the message into C variables (what
// a hand-written ei decoder does, no term built); "ei_to_term" builds the
// same herd::term through ei's decode calls; "ei_encode" writes the message
// with ei_x_encode_*. herd's rows build or read a herd::term.
#include <herd/dist/term_codec.hpp>

#include <ei.h>
#include <pthread.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using herd::atom;
using herd::term;

namespace {

using clk = std::chrono::steady_clock;
volatile std::size_t sink;

const std::string text = "hello, this is a short chat line";

template <class F>
void timed(const char* op, long iters, F&& f) {
  for (long i = 0; i < iters / 10; ++i) f();  // warm up
  auto t0 = clk::now();
  for (long i = 0; i < iters; ++i) f();
  double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / double(iters);
  std::printf("termbench op=%s ns_per_msg=%.1f iterations=%ld\n", op, ns, iters);
}

// A term through ei's decode calls (enough of them for this message).
bool to_term_via_ei(const char* b, int* at, term& out) {
  int type = 0, size = 0;
  if (ei_get_type(b, at, &type, &size) != 0) return false;
  switch (type) {
    case ERL_SMALL_TUPLE_EXT: case ERL_LARGE_TUPLE_EXT: {
      int n = 0;
      if (ei_decode_tuple_header(b, at, &n) != 0) return false;
      std::vector<term> es(static_cast<std::size_t>(n));
      for (auto& e : es)
        if (!to_term_via_ei(b, at, e)) return false;
      out = term::tuple(std::move(es));
      return true;
    }
    case ERL_ATOM_EXT: case ERL_SMALL_ATOM_EXT: case ERL_ATOM_UTF8_EXT: case ERL_SMALL_ATOM_UTF8_EXT: {
      char a[MAXATOMLEN_UTF8];
      if (ei_decode_atom_as(b, at, a, sizeof a, ERLANG_UTF8, nullptr, nullptr) != 0) return false;
      out = term(atom(a));
      return true;
    }
    case ERL_BINARY_EXT: {
      std::string s(std::size_t(size), '\0');
      long len = 0;
      if (ei_decode_binary(b, at, s.data(), &len) != 0) return false;
      out = term::binary(s);
      return true;
    }
    case ERL_SMALL_INTEGER_EXT: case ERL_INTEGER_EXT: {
      long v = 0;
      if (ei_decode_long(b, at, &v) != 0) return false;
      out = term(int64_t(v));
      return true;
    }
    default: return false;
  }
}

// The deepest stack `op` touches, found by painting a thread's stack.
std::size_t stack_used(const std::function<void()>& op) {
  constexpr std::size_t size = 8 << 20;
  auto* mem = static_cast<unsigned char*>(std::aligned_alloc(4096, size));
  std::memset(mem, 0xA5, size);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, mem, size);
  pthread_t th;
  auto run = [](void* p) -> void* {
    (*static_cast<const std::function<void()>*>(p))();
    return nullptr;
  };
  pthread_create(&th, &attr, run, const_cast<std::function<void()>*>(&op));
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  std::size_t untouched = 0;
  while (untouched < size && mem[untouched] == 0xA5) ++untouched;
  std::free(mem);
  return size - untouched;
}

void stack_rows() {
  // [{1, [{1, ...}]}]: two levels of nesting a round, as the decoder counts them.
  auto nested = [](int levels) {
    term t;
    for (int i = 0; i < levels / 2; ++i) t = term::list({term::tuple({1, std::move(t)})});
    return t;
  };
  auto row = [](const char* op, int depth, const std::function<void(const term&)>& f, const term& t, std::size_t base) {
    std::size_t used = stack_used([&] { f(t); });
    std::printf("termbench stack op=%s depth=%d bytes=%zu bytes_per_level=%.0f\n", op, depth, used,
                double(used - base) / double(depth));
  };
  for (int depth : {256}) {
    term deep = nested(depth);
    std::string bytes = herd::term_to_binary(deep);
    herd::decode_options deep_ok;
    deep_ok.max_depth = uint32_t(depth);
    term copy = *herd::binary_to_term(bytes, deep_ok);
    term shallow = nested(2);
    std::string shallow_bytes = herd::term_to_binary(shallow);
    auto base = [&](const std::function<void(const term&)>& f) { return stack_used([&] { f(shallow); }); };
    std::function<void(const term&)> ops[] = {
        [&](const term& t) { sink = std::size_t(t == copy || t == shallow); },
        [&](const term& t) { sink = t.hash(); },
        [&](const term& t) { sink = herd::to_string(t).size(); },
        [&](const term& t) { sink = herd::term_to_binary(t).size(); },
        [&](const term& t) { sink = herd::binary_to_term(&t == &shallow ? shallow_bytes : bytes, deep_ok)->size(); },
    };
    const char* names[] = {"compare", "hash", "print", "encode", "decode"};
    for (int i = 0; i < 5; ++i) row(names[i], depth, ops[i], deep, base(ops[i]));
  }
}

}  // namespace

int main(int argc, char** argv) {
  long iters = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  if (iters <= 0) {
    std::fprintf(stderr, "usage: termbench [ITERATIONS=1000000]\n");
    return 2;
  }
  ei_init();
  term msg = term::tuple({term(atom("push")), term::binary("user42"), term::binary(text), 12345});
  std::string bytes = herd::term_to_binary(msg);

  timed("herd_encode", iters, [&] { sink = herd::term_to_binary(msg).size(); });
  timed("herd_decode", iters, [&] { sink = herd::binary_to_term(bytes)->size(); });
  timed("ei_encode", iters, [&] {
    ei_x_buff x;
    ei_x_new_with_version(&x);
    ei_x_encode_tuple_header(&x, 4);
    ei_x_encode_atom(&x, "push");
    ei_x_encode_binary(&x, "user42", 6);
    ei_x_encode_binary(&x, text.data(), int(text.size()));
    ei_x_encode_long(&x, 12345);
    sink = std::size_t(x.index);
    ei_x_free(&x);
  });
  timed("ei_decode_fields", iters, [&] {
    int at = 0, version = 0, arity = 0;
    char a[MAXATOMLEN_UTF8];
    char user[64], body[256];
    long ulen = 0, blen = 0, seq = 0;
    ei_decode_version(bytes.data(), &at, &version);
    ei_decode_tuple_header(bytes.data(), &at, &arity);
    ei_decode_atom_as(bytes.data(), &at, a, sizeof a, ERLANG_UTF8, nullptr, nullptr);
    ei_decode_binary(bytes.data(), &at, user, &ulen);
    ei_decode_binary(bytes.data(), &at, body, &blen);
    ei_decode_long(bytes.data(), &at, &seq);
    sink = std::size_t(seq + ulen + blen);
  });
  timed("ei_to_term", iters, [&] {
    int at = 0, version = 0;
    term t;
    ei_decode_version(bytes.data(), &at, &version);
    if (!to_term_via_ei(bytes.data(), &at, t)) std::abort();
    sink = t.size();
  });
  stack_rows();
  return 0;
}
