// Catch2 matchers over JSON output, read with core's JSON reader (never searched as text):
//   CHECK_THAT(out, HasMember("quant", "\"Q4_K_M\"") && !HasMember("quant", "\"Q2_K\""));
#pragma once

#include <catch2/catch.hpp>

#include <string>

namespace vramsim::test {

// Some member named `key`, anywhere in the document, whose value is written as `written` in
// JSON: "\"text\"" for a string, "4096" for a number (as written), "true", "null", "[]" for an
// empty list. Text that is not JSON matches nothing.
class HasMemberMatcher : public Catch::MatcherBase<std::string> {
 public:
  HasMemberMatcher(std::string key, std::string written) : key_(std::move(key)), written_(std::move(written)) {}
  bool match(const std::string& json) const override;
  std::string describe() const override { return "has a member \"" + key_ + "\": " + written_; }

 private:
  std::string key_, written_;
};

inline HasMemberMatcher HasMember(std::string key, std::string written) { return {std::move(key), std::move(written)}; }

}  // namespace vramsim::test
