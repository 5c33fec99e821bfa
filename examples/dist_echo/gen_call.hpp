// The parts of OTP's gen_server protocol dist_echo needs, on raw external
// term format bytes (with ei; herd::term will replace this):
//   a call arrives as {'$gen_call', {From, Tag}, Request} and is answered by
//   sending {Tag, Reply} to From — Tag as it came (OTP 25: [alias | Ref]).
#pragma once
#include <herd/actors/pid.hpp>

#include <optional>
#include <string>

namespace dist_echo {

struct gen_call {
  herd::pid from;
  std::string tag;      // the term, without 131
  std::string request;  // the term, without 131
};

// nullopt when etf is not a '$gen_call'.
std::optional<gen_call> parse_gen_call(const std::string& etf);
// {From, T} with From a pid: From and T (with 131).
std::optional<std::pair<herd::pid, std::string>> parse_from_pair(const std::string& etf);
// {Tag, Reply}, Reply given as a term without 131.
std::string reply(const gen_call& c, const std::string& reply_term);
// The term (without 131) for an atom / an integer.
std::string atom_term(const char* a);
std::string integer_term(long long v);
// The atom a request term (without 131) is, or "".
std::string request_atom(const std::string& term);

}  // namespace dist_echo
