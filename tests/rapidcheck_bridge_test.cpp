// Pins what kvcheck relies on in RapidCheck's private API (properties/rapidcheck_bridge.h):
// a quiet run's result as data (counterexample, shrinking, reproduce token), discards
// and giving up, and the case results the public macros throw. A RapidCheck upgrade
// that changes any of it fails here, not silently in the runner or case isolation.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <vector>
#include <string>

#include "properties/rapidcheck_bridge.h"

namespace kvcheck::props {
namespace {

RcRunParams params(const std::string& id, int cases = 100) {
  RcRunParams p;
  p.id = id;
  p.description = id;
  p.seed = 42;
  p.max_success = cases;
  return p;
}

// Fails for every x >= 10 of 0..1000: the minimal counterexample is exactly 10.
void fails_from_ten() {
  const int x = *rc::gen::inRange(0, 1000);
  if (x >= 10) RC_FAIL("x = " + std::to_string(x));
}

// "x = 10" and not "x = 100" / "x = 104": the message names the minimal case.
bool says_x_is_ten(const std::string& message) {
  const size_t at = message.find("x = 10");
  return at != std::string::npos && (at + 6 == message.size() || !std::isdigit(static_cast<unsigned char>(message[at + 6])));
}

// Everything `fn` writes to stderr and stdout (fds 1 and 2). RapidCheck reads its
// configuration (and echoes "Using configuration: seed=...") once per process, on the
// first run: that is not a run's output, so it happens before.
template <class F>
std::string captured_output(F fn) {
  run_rapidcheck(params("bridge/warm-up", 1), [] {});
  std::fflush(nullptr);
  char path[] = "/tmp/kvcheck_bridge_XXXXXX";
  const int fd = mkstemp(path);
  const int saved_out = dup(1), saved_err = dup(2);
  dup2(fd, 1);
  dup2(fd, 2);
  fn();
  std::fflush(nullptr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  std::string text;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return text;
}

TEST(RapidcheckBridge, PassingRunCountsItsCasesAndPrintsNothing) {
  int calls = 0;
  RcRunResult r;
  const std::string out = captured_output([&] { r = run_rapidcheck(params("bridge/pass", 37), [&] { ++calls; }); });
  EXPECT_EQ(r.kind, RcRunResult::Kind::kPassed);
  EXPECT_EQ(r.num_success, 37);
  EXPECT_EQ(calls, 37);
  EXPECT_TRUE(r.reproduce.empty());
  EXPECT_EQ(out, "") << "the run must be quiet";
}

TEST(RapidcheckBridge, FailureShrinksToTheMinimalCaseAndItsTokenReplaysIt) {
  RcRunResult r;
  const std::string out = captured_output([&] { r = run_rapidcheck(params("bridge/shrink"), fails_from_ten); });
  EXPECT_EQ(out, "");
  ASSERT_EQ(r.kind, RcRunResult::Kind::kFailed);
  EXPECT_NE(r.message.find("Falsifiable after"), std::string::npos) << r.message;
  EXPECT_TRUE(says_x_is_ten(r.message)) << "shrunk to the minimal case:\n" << r.message;
  ASSERT_EQ(r.reproduce.rfind("reproduce=", 0), 0u) << r.reproduce;
  // The token replays exactly the minimal case, and only for its own test id.
  RcRunParams again = params("bridge/shrink");
  again.seed = 7;  // the token, not the seed, decides the case
  again.rc_params = r.reproduce;
  std::vector<int> seen;
  const RcRunResult replay = run_rapidcheck(again, [&] {
    seen.push_back(*rc::gen::inRange(0, 1000));
    if (seen.back() >= 10) RC_FAIL("x = " + std::to_string(seen.back()));
  });
  EXPECT_EQ(replay.kind, RcRunResult::Kind::kFailed);
  EXPECT_TRUE(says_x_is_ten(replay.message)) << replay.message;
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 10);
  RcRunParams other = params("bridge/other-id", 5);
  other.rc_params = r.reproduce;
  const RcRunResult skipped = run_rapidcheck(other, [] {});  // RapidCheck: tokens given, none for this id
  EXPECT_EQ(skipped.kind, RcRunResult::Kind::kPassed);
  EXPECT_EQ(skipped.num_success, 0) << "a run with reproduce tokens but none for its id runs no case";
  // Same seed, same result: the campaign's reproducibility.
  EXPECT_EQ(run_rapidcheck(params("bridge/shrink"), fails_from_ten).reproduce, r.reproduce);
}

TEST(RapidcheckBridge, NoShrinkingKeepsTheFirstFailingCase) {
  RcRunParams p = params("bridge/no-shrink");
  p.disable_shrinking = true;
  const RcRunResult r = run_rapidcheck(p, fails_from_ten);
  ASSERT_EQ(r.kind, RcRunResult::Kind::kFailed);
  EXPECT_NE(r.message.find("Falsifiable after"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("shrinks"), std::string::npos) << r.message;
  EXPECT_FALSE(r.reproduce.empty());
}

TEST(RapidcheckBridge, DiscardsAreNotCasesAndTooManyGiveUp) {
  int n = 0;
  const RcRunResult some = run_rapidcheck(params("bridge/some-discards", 50), [&] {
    if (++n % 2 == 0) RC_DISCARD("every other case");
  });
  EXPECT_EQ(some.kind, RcRunResult::Kind::kPassed);
  EXPECT_EQ(some.num_success, 50);
  EXPECT_EQ(n, 99);  // 50 successes, 49 discards between them
  RcRunParams all = params("bridge/all-discards", 20);
  all.max_discard_ratio = 3;
  int tried = 0;
  const RcRunResult gave_up = run_rapidcheck(all, [&] {
    ++tried;
    RC_DISCARD("never");
  });
  EXPECT_EQ(gave_up.kind, RcRunResult::Kind::kGaveUp);
  EXPECT_EQ(gave_up.num_success, 0);
  EXPECT_NE(gave_up.message.find("Gave up"), std::string::npos) << gave_up.message;
  EXPECT_EQ(tried, 3 * 20 + 2);  // RapidCheck gives up once discards exceed ratio x max_success (+1)
}

// Case isolation relays these across a fork: what the public macros throw is what the
// bridge recognises, and what it throws back RapidCheck takes as the same result.
TEST(RapidcheckBridge, PublicMacrosThrowTheCaseResultsTheBridgeReads) {
  const auto result_of = [](auto fn) -> std::optional<RcCaseResult> {
    try {
      fn();
    } catch (...) {
      return rapidcheck_case_result(std::current_exception());
    }
    return RcCaseResult{RcCaseType::kSuccess, "returned"};
  };
  const auto failed = result_of([] { RC_FAIL("boom"); });
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->type, RcCaseType::kFailure);
  EXPECT_NE(failed->description.find("boom"), std::string::npos);
  const auto asserted = result_of([] { RC_ASSERT(1 + 1 == 3); });
  ASSERT_TRUE(asserted);
  EXPECT_EQ(asserted->type, RcCaseType::kFailure);
  const auto discarded = result_of([] { RC_DISCARD("skip"); });
  ASSERT_TRUE(discarded);
  EXPECT_EQ(discarded->type, RcCaseType::kDiscard);
  const auto succeeded = result_of([] { RC_SUCCEED("early"); });
  ASSERT_TRUE(succeeded);
  EXPECT_EQ(succeeded->type, RcCaseType::kSuccess);
  EXPECT_FALSE(result_of([] { throw std::runtime_error("not RapidCheck's"); }));
  // Thrown back verbatim, each is that result to RapidCheck.
  const auto relayed = result_of([] { throw_rapidcheck_case_result(RcCaseType::kDiscard, "d"); });
  ASSERT_TRUE(relayed);
  EXPECT_EQ(relayed->type, RcCaseType::kDiscard);
  EXPECT_EQ(relayed->description, "d");
  const RcRunResult r = run_rapidcheck(params("bridge/relayed-failure"), [] {
    throw_rapidcheck_case_result(RcCaseType::kFailure, "relayed: the backend crashed");
  });
  ASSERT_EQ(r.kind, RcRunResult::Kind::kFailed);
  EXPECT_NE(r.message.find("relayed: the backend crashed"), std::string::npos) << r.message;
  int n = 0;
  const RcRunResult ok = run_rapidcheck(params("bridge/relayed-success", 10), [&] {
    if (++n > 0) throw_rapidcheck_case_result(RcCaseType::kSuccess, "");
  });
  EXPECT_EQ(ok.kind, RcRunResult::Kind::kPassed);
  EXPECT_EQ(ok.num_success, 10);
}

}  // namespace
}  // namespace kvcheck::props
