// The register protocol driven without CAF: a harness delivers messages in random order and
// fires whichever actors are ready, checking readiness, acks, end-of-stream and the in-flight bound.
#include <doctest/doctest.h>

#include <deque>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "actors/task_protocol.hpp"

using weir::internal::ActorMsg;
using weir::internal::ConsumedEdge;
using weir::internal::MessageSink;
using weir::internal::MsgKind;
using weir::internal::ProducedEdge;
using weir::internal::TaskProtocol;

namespace {

struct Queue : MessageSink {
  std::deque<ActorMsg> messages;
  void Send(const ActorMsg& msg) override { messages.push_back(msg); }
};

// A linear chain source -> a1 -> ... -> a(n-1), register i produced by actor i.
std::vector<TaskProtocol> Chain(int actors, int register_num) {
  std::vector<TaskProtocol> chain;
  for (int i = 0; i < actors; ++i) {
    std::vector<ConsumedEdge> consumed;
    std::vector<ProducedEdge> produced;
    if (i > 0) consumed.push_back({i - 1, i - 1, register_num});
    if (i + 1 < actors) produced.push_back({i, register_num, {i + 1}});
    chain.emplace_back(i, consumed, produced, i == 0);
  }
  return chain;
}

}  // namespace

TEST_CASE("an actor fires only when every input is readable and every output has a free slot") {
  // a (0) and b (1) feed c (2) through registers 0 and 1; c produces register 2 for d (3).
  TaskProtocol c(2, {{0, 0, 1}, {1, 1, 1}}, {{2, 1, {3}}});
  Queue queue;
  CHECK_FALSE(c.CanAct());
  c.Receive({2, 0, 0, 0, MsgKind::kReadable});
  CHECK_FALSE(c.CanAct());  // b's register is not readable yet
  c.Receive({2, 1, 1, 0, MsgKind::kReadable});
  REQUIRE(c.CanAct());
  c.CompleteAct(queue);
  // readable to d, returned to a and b
  REQUIRE(queue.messages.size() == 3);
  CHECK(queue.messages[0].kind == MsgKind::kReadable);
  CHECK(queue.messages[0].dst_task == 3);
  CHECK(queue.messages[1].kind == MsgKind::kReturned);
  CHECK(queue.messages[1].dst_task == 0);
  CHECK(queue.messages[2].dst_task == 1);
  CHECK(c.InFlight(0) == 1);

  // Inputs for the next piece arrive, but the only output slot is still held by d.
  c.Receive({2, 0, 0, 0, MsgKind::kReadable});
  c.Receive({2, 1, 1, 0, MsgKind::kReadable});
  CHECK_FALSE(c.CanAct());
  c.Receive({2, 3, 2, 0, MsgKind::kReturned});
  CHECK(c.InFlight(0) == 0);
  CHECK(c.CanAct());
}

TEST_CASE("a slot read by several consumers is free only after all of them return it") {
  TaskProtocol producer(0, {}, {{0, 1, {1, 2}}}, true);
  Queue queue;
  producer.AddExternalToken();
  producer.AddExternalToken();
  producer.CompleteAct(queue);
  CHECK(queue.messages.size() == 2);
  CHECK_FALSE(producer.CanAct());
  producer.Receive({0, 1, 0, 0, MsgKind::kReturned});
  CHECK_FALSE(producer.CanAct());
  producer.Receive({0, 2, 0, 0, MsgKind::kReturned});
  CHECK(producer.CanAct());
}

TEST_CASE("protocol violations are reported, not ignored") {
  TaskProtocol task(1, {{0, 0, 1}}, {{1, 1, {2}}});
  CHECK_THROWS_AS(task.Receive({1, 2, 1, 0, MsgKind::kReturned}), std::logic_error);  // nothing was lent
  task.Receive({1, 0, 0, 0, MsgKind::kReadable});
  CHECK_THROWS_AS(task.Receive({1, 0, 0, 0, MsgKind::kReadable}), std::logic_error);  // more than register_num
  CHECK_THROWS_AS(task.Receive({1, 0, 7, 0, MsgKind::kReadable}), std::logic_error);  // unknown register
}

TEST_CASE("with register_num = k never more than k pieces are in flight on an edge") {
  for (int register_num : {1, 2, 3, 5}) {
    CAPTURE(register_num);
    constexpr int kActors = 6;
    constexpr int kPieces = 200;
    std::vector<TaskProtocol> chain = Chain(kActors, register_num);
    for (int i = 0; i < kPieces; ++i) chain[0].AddExternalToken();
    chain[0].CloseExternal();

    Queue queue;
    std::mt19937 random(static_cast<unsigned>(register_num));
    int max_in_flight = 0;
    std::vector<std::int64_t> acts(kActors, 0);
    std::deque<ActorMsg> pending;  // delivered in a random order to stress the protocol
    for (int step = 0; step < 1'000'000; ++step) {
      // Fire a random ready actor, or deliver a random pending message.
      std::vector<int> ready;
      for (int a = 0; a < kActors; ++a) {
        if (chain[static_cast<std::size_t>(a)].CanAct()) ready.push_back(a);
      }
      const bool fire = !ready.empty() && (pending.empty() || random() % 2 == 0);
      if (fire) {
        const int a = ready[random() % ready.size()];
        chain[static_cast<std::size_t>(a)].CompleteAct(queue);
        ++acts[static_cast<std::size_t>(a)];
      } else if (!pending.empty()) {
        // Random across channels, FIFO within one (sender, receiver) channel, as with CAF.
        std::size_t pick = random() % pending.size();
        for (std::size_t i = 0; i < pick; ++i) {
          if (pending[i].src_task == pending[pick].src_task && pending[i].dst_task == pending[pick].dst_task) {
            pick = i;
            break;
          }
        }
        const ActorMsg msg = pending[pick];
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(pick));
        chain[static_cast<std::size_t>(msg.dst_task)].Receive(msg);
      }
      for (TaskProtocol& task : chain) {
        if (task.ShouldEndStream()) task.EndStream(queue);
      }
      while (!queue.messages.empty()) {
        pending.push_back(queue.messages.front());
        queue.messages.pop_front();
      }
      for (int a = 0; a + 1 < kActors; ++a) {
        const int in_flight = chain[static_cast<std::size_t>(a)].InFlight(0);
        REQUIRE(in_flight <= register_num);
        max_in_flight = std::max(max_in_flight, in_flight);
      }
      bool all_finished = true;
      for (const TaskProtocol& task : chain) all_finished = all_finished && task.Finished();
      if (all_finished && pending.empty()) break;
    }
    for (int a = 0; a < kActors; ++a) {
      CHECK(acts[static_cast<std::size_t>(a)] == kPieces);
      CHECK(chain[static_cast<std::size_t>(a)].Finished());
    }
    CHECK(max_in_flight == register_num);  // the bound is reached, so it is what limits the flow
  }
}

TEST_CASE("end of stream waits for queued pieces and for outstanding slots") {
  std::vector<TaskProtocol> chain = Chain(2, 2);
  Queue queue;
  chain[0].AddExternalToken();
  chain[0].CloseExternal();
  CHECK_FALSE(chain[0].ShouldEndStream());  // a launched piece is still to be emitted
  chain[0].CompleteAct(queue);
  REQUIRE(chain[0].ShouldEndStream());
  chain[0].EndStream(queue);
  CHECK_FALSE(chain[0].Finished());  // its slot is still being read
  chain[1].Receive(queue.messages[0]);
  chain[1].Receive(queue.messages[1]);  // the end-of-stream marker
  CHECK_FALSE(chain[1].ShouldEndStream());  // one readable piece remains
  REQUIRE(chain[1].CanAct());
  queue.messages.clear();
  chain[1].CompleteAct(queue);
  CHECK(chain[1].ShouldEndStream());
  chain[1].EndStream(queue);
  CHECK(chain[1].Finished());
  chain[0].Receive(queue.messages[0]);  // the return
  CHECK(chain[0].Finished());
  CHECK(chain[0].DescribeWaiting().find("ended") != std::string::npos);
}

namespace {

// A register from task `from` to each of `to`.
void AddEdge(weir::internal::Plan& plan, int from, std::vector<int> to) {
  weir::internal::RegisterDesc reg;
  reg.id = static_cast<int>(plan.registers.size());
  reg.producer = from;
  reg.consumers = std::move(to);
  plan.tasks[static_cast<std::size_t>(from)].produced.push_back(reg.id);
  for (int consumer : reg.consumers) plan.tasks[static_cast<std::size_t>(consumer)].consumed.push_back(reg.id);
  plan.registers.push_back(std::move(reg));
}

}  // namespace

TEST_CASE("a plan whose tasks wait on each other is refused, naming the loop") {
  weir::internal::Plan plan;
  plan.job_name = "loop";
  for (const char* name : {"source", "a", "b", "c"}) {
    weir::internal::TaskDesc task;
    task.id = static_cast<int>(plan.tasks.size());
    task.name = name;
    plan.tasks.push_back(task);
  }
  // source -> a -> b -> c, then c -> a: a register from each producer to its consumer.
  auto edge = [&](int from, int to) { AddEdge(plan, from, {to}); };
  edge(0, 1);
  edge(1, 2);
  edge(2, 3);
  plan.CheckAcyclic();  // a chain is fine
  edge(3, 1);
  try {
    plan.CheckAcyclic();
    FAIL("a loop was not found");
  } catch (const std::logic_error& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(message.find("job 'loop': its plan waits on itself") != std::string::npos);
    CHECK((message.find("'a' -> 'b' -> 'c' -> 'a'") != std::string::npos ||
           message.find("'b' -> 'c' -> 'a' -> 'b'") != std::string::npos ||
           message.find("'c' -> 'a' -> 'b' -> 'c'") != std::string::npos));
  }
}

TEST_CASE("a task that does not lead to the sink is refused, naming it; removing tasks renumbers the rest") {
  weir::internal::Plan plan;
  plan.job_name = "dangling";
  for (const char* name : {"source", "input", "unread", "sink"}) {
    weir::internal::TaskDesc task;
    task.id = static_cast<int>(plan.tasks.size());
    task.name = name;
    task.kind = weir::internal::TaskKind::kInput;
    plan.tasks.push_back(task);
  }
  plan.tasks[0].kind = weir::internal::TaskKind::kSourceTick;
  plan.tasks[3].kind = weir::internal::TaskKind::kSink;
  plan.source_task = 0;
  plan.sink_task = 3;
  auto edge = [&](int from, std::vector<int> to) { AddEdge(plan, from, std::move(to)); };
  edge(0, {1, 2});  // the tick, read by both inputs
  edge(1, {3});     // the input the sink reads
  edge(2, {});      // a piece nobody reads
  CHECK_THROWS_WITH_AS(plan.CheckEveryTaskReachesSink(),
                       "[compile] job 'dangling': actor 'unread' (input) does not lead to the sink, so it could act for "
                       "a call that already completed",
                       std::logic_error);
  plan.RemoveTasks({false, false, true, false}, {false, false, true});
  plan.CheckEveryTaskReachesSink();
  REQUIRE(plan.tasks.size() == 3);
  REQUIRE(plan.registers.size() == 2);
  CHECK(plan.tasks[2].name == "sink");
  CHECK(plan.sink_task == 2);
  CHECK(plan.registers[0].consumers == std::vector<int>{1});  // the tick, no longer read by 'unread'
  CHECK(plan.registers[1].consumers == std::vector<int>{2});
  CHECK(plan.tasks[2].consumed == std::vector<int>{1});
}
