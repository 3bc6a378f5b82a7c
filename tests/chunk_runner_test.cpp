// The campaign's long-lived worker (tools/kvcheck/isolate.h): chunks of cases run in
// one child process, which a crash or a failed chunk retires for a fresh one, and
// --fork-per-chunk's fresh child per chunk. Which process ran a chunk is seen from
// inside it: each case notes the class "pid <its process id>".
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "impl/cpu/cpu_backend.h"
#include "properties/classes.h"
#include "tools/kvcheck/isolate.h"

namespace kvcheck::tool {
namespace {

props::Property property(std::string name, std::function<void(const Backend&)> body) {
  props::Property p;
  p.name = std::move(name);
  p.op = "store";
  p.invariant = "test";
  p.body = std::move(body);
  return p;
}

// The process ids a chunk's cases ran in (from their classes).
std::set<std::string> pids(const props::PropertyOutcome& o) {
  std::set<std::string> out;
  for (const auto& [name, n] : o.classes)
    if (name.rfind("pid ", 0) == 0) out.insert(name);
  return out;
}

void note_pid(const Backend&) {
  (void)*rc::gen::inRange(0, 10);
  props::note_class("pid " + std::to_string(getpid()));
}

// Whether process pid (a child of this one, not reaped) has ended within `limit`: its
// /proc state reads Z.
bool becomes_zombie(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  do {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

const std::string kParent = "pid " + std::to_string(getpid());

TEST(ChunkRunner, RunsEveryChunkInOneWorkerThatIsNotThisProcess) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_pid", note_pid), q = property("prop_pid_too", note_pid);
  ChunkRunner runner({{&p, &b}, {&q, &b}}, false);
  std::set<std::string> seen;
  for (int chunk = 0; chunk < 4; ++chunk) {
    const props::PropertyOutcome o = runner.run(chunk % 2, {uint64_t(chunk + 1), 7, 10});
    EXPECT_FALSE(o.failed) << o.message;
    EXPECT_EQ(o.cases, 7);
    EXPECT_EQ(o.property, chunk % 2 ? "prop_pid_too" : "prop_pid");
    const auto ran = pids(o);
    seen.insert(ran.begin(), ran.end());
  }
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.count(kParent), 0u);
  EXPECT_EQ(runner.workers_started(), 1);
}

TEST(ChunkRunner, ACrashFailsItsChunkAndTheNextChunkGetsAFreshWorker) {
  const cpu::CpuBackend b;
  const props::Property good = property("prop_pid", note_pid);
  const props::Property crash = property("prop_crash", [](const Backend&) { std::raise(SIGKILL); });
  ChunkRunner runner({{&good, &b}, {&crash, &b}}, false);
  const auto first = pids(runner.run(0, {1, 5, 10}));
  const props::PropertyOutcome o = runner.run(1, {2, 5, 10});
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.message.find("CRASHED: signal 9"), std::string::npos) << o.message;
  // A plain body has no per-case isolation (scenario properties do): the chunk's seed.
  EXPECT_NE(o.message.find("reproduce the chunk with the seed"), std::string::npos) << o.message;
  EXPECT_EQ(o.reproduce, "seed=2");
  const props::PropertyOutcome after = runner.run(0, {3, 5, 10});
  EXPECT_FALSE(after.failed) << after.message;
  EXPECT_EQ(after.cases, 5);
  ASSERT_EQ(pids(after).size(), 1u);
  EXPECT_NE(pids(after), first);
  EXPECT_EQ(runner.workers_started(), 2);
}

TEST(ChunkRunner, AFailedChunkRetiresItsWorker) {
  const cpu::CpuBackend b;
  const props::Property good = property("prop_pid", note_pid);
  const props::Property bad = property("prop_fails", [](const Backend& be) {
    note_pid(be);
    RC_FAIL("always");
  });
  ChunkRunner runner({{&good, &b}, {&bad, &b}}, false);
  const props::PropertyOutcome failed = runner.run(1, {1, 5, 10});
  EXPECT_TRUE(failed.failed);
  EXPECT_NE(failed.message.find("always"), std::string::npos) << failed.message;
  const props::PropertyOutcome after = runner.run(0, {2, 5, 10});
  EXPECT_FALSE(after.failed) << after.message;
  EXPECT_EQ(runner.workers_started(), 2);
  EXPECT_NE(pids(after), pids(failed));
}

TEST(ChunkRunner, ForkPerChunkStartsAWorkerForEveryChunk) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_pid", note_pid);
  ChunkRunner runner({{&p, &b}}, true);
  std::set<std::string> seen;
  for (int chunk = 0; chunk < 3; ++chunk) {
    const auto ran = pids(runner.run(0, {uint64_t(chunk + 1), 4, 10}));
    EXPECT_EQ(ran.size(), 1u);
    seen.insert(ran.begin(), ran.end());
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(runner.workers_started(), 3);
}

TEST(ChunkRunner, EachBackendHasItsOwnWorker) {
  const cpu::CpuBackend a, b;
  const props::Property p = property("prop_pid", note_pid);
  ChunkRunner runner({{&p, &a}, {&p, &b}}, false);
  const auto on_a = pids(runner.run(0, {1, 4, 10}));
  const auto on_b = pids(runner.run(1, {2, 4, 10}));
  EXPECT_EQ(pids(runner.run(0, {3, 4, 10})), on_a);
  EXPECT_NE(on_a, on_b);
  EXPECT_EQ(runner.workers_started(), 2);
}

// A backend that leaves state behind: its 8th case in a process fails.
void fails_after_seven(const Backend&) {
  static int calls = 0;
  if (++calls > 7) RC_FAIL("left-over state");
}

TEST(ChunkRunner, AFailureThatNeedsEarlierChunksIsSaidToBeOne) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_leaky", fails_after_seven);
  ChunkRunner runner({{&p, &b}}, false);
  EXPECT_FALSE(runner.run(0, {1, 5, 10}).failed);
  const props::PropertyOutcome o = runner.run(0, {2, 5, 10});
  ASSERT_TRUE(o.failed);
  EXPECT_NE(o.message.find("STATE FROM EARLIER CHUNKS: the same chunk alone in a fresh process passes; before it, "
                           "this worker process ran 1 chunk (last: prop_leaky)"),
            std::string::npos)
      << o.message;
}

// The worker's thread waits on this pipe: the test says when it kills the worker.
int g_kill_pipe[2] = {-1, -1};

TEST(ChunkRunner, AWorkerThatDiesWhileIdleFailsTheRowOfItsLastChunk) {
  const cpu::CpuBackend b;
  const props::Property good = property("prop_pid", note_pid);
  const props::Property late = property("prop_late_crash", [](const Backend& backend) {
    static bool started = false;
    note_pid(backend);
    if (!std::exchange(started, true))
      std::thread([] {
        char go = 0;
        if (read(g_kill_pipe[0], &go, 1) == 1) std::raise(SIGKILL);
      }).detach();
  });
  ASSERT_EQ(pipe(g_kill_pipe), 0);
  ChunkRunner runner({{&good, &b}, {&late, &b}}, false);
  const props::PropertyOutcome first = runner.run(1, {1, 3, 10});
  EXPECT_FALSE(first.failed) << first.message;
  const auto worker = pids(first);
  ASSERT_EQ(worker.size(), 1u);
  // The idle worker's thread kills it now; the test waits for the death itself, not a
  // fixed time (a 500 ms sleep once lost the race on a loaded 2-core machine under ASan).
  ASSERT_EQ(write(g_kill_pipe[1], "k", 1), 1);
  ASSERT_TRUE(becomes_zombie(std::stoi(worker.begin()->substr(4)), std::chrono::seconds(60)));
  EXPECT_TRUE(runner.take_idle_deaths().empty());  // not looked at yet
  EXPECT_FALSE(runner.run(0, {2, 3, 10}).failed);
  const auto deaths = runner.take_idle_deaths();
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].pair, 1u);
  EXPECT_NE(deaths[0].message.find("CRASHED after its chunk had passed: the cpu's worker process ended with signal 9"),
            std::string::npos)
      << deaths[0].message;
  EXPECT_EQ(runner.workers_started(), 2);
  close(g_kill_pipe[0]);
  close(g_kill_pipe[1]);
}

// A worker that stops itself (or a run paused with Ctrl-Z and resumed) is continued:
// the run neither hangs nor fails a chunk.
TEST(ChunkRunner, AStoppedWorkerIsContinued) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_stops", [](const Backend&) { std::raise(SIGSTOP); });
  ChunkRunner runner({{&p, &b}}, false);
  const props::PropertyOutcome o = runner.run(0, {1, 3, 10});
  EXPECT_FALSE(o.failed) << o.message;
  EXPECT_EQ(o.cases, 3);
  EXPECT_EQ(runner.workers_started(), 1);
}

TEST(ChunkRunner, AStopRequestEndsTheChunkAtOnce) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_slow", [](const Backend&) { std::this_thread::sleep_for(std::chrono::seconds(30)); });
  const auto start = std::chrono::steady_clock::now();
  ChunkRunner runner({{&p, &b}}, false, [&] { return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(200); });
  bool interrupted = false;
  const props::PropertyOutcome o = runner.run(0, {1, 3, 10}, &interrupted);
  EXPECT_TRUE(interrupted);
  EXPECT_FALSE(o.failed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(runner.take_idle_deaths().empty());
}

// The class table counts the cases a run drew, not the candidates of the shrink after a
// failure (which once made a class 714 % of a row's cases).
TEST(RunProperty, ClassesCountTheCasesBeforeAFailureOnly) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_fails_high", [](const Backend&) {
    const int x = *rc::gen::inRange(0, 1000);
    props::note_class("drawn");
    if (x >= 900) RC_FAIL("x = " + std::to_string(x));
  });
  const props::PropertyOutcome o = props::run_property(p, b, {7, 200, 100});
  ASSERT_TRUE(o.failed);
  ASSERT_GT(o.cases, 1);
  // cases counts the failing case too (cases run); the classes only the cases that held.
  EXPECT_EQ(o.classes.at("drawn"), o.cases - 1);
}

// A row that fails on its first case ran one case (it read "cases 0, failures 1").
TEST(RunProperty, AFailureOnTheFirstCaseCountsOneCase) {
  const cpu::CpuBackend b;
  const props::Property p = property("prop_fails_always", [](const Backend&) { RC_FAIL("always"); });
  const props::PropertyOutcome o = props::run_property(p, b, {7, 50, 100});
  ASSERT_TRUE(o.failed);
  EXPECT_EQ(o.cases, 1);
}

}  // namespace
}  // namespace kvcheck::tool
