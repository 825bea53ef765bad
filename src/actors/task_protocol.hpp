#pragma once
// The register protocol of one actor (OneFlow's, see docs/runtime.md), as a plain class that tests
// drive without CAF. An actor may fire when every consumed register has a readable slot and every
// produced register has a free slot. Firing tells each consumer "readable" and each producer
// "returned"; a produced slot is free again once all of its consumers have returned it, so
// register_num bounds the pieces in flight on an edge.
#include <cstdint>
#include <string>
#include <vector>

namespace weir::internal {

enum class MsgKind : std::uint8_t { kReadable, kReturned, kEndOfStream };

/// One protocol message; plain data, index-based.
struct ActorMsg {
  std::int32_t dst_task = 0;
  std::int32_t src_task = 0;
  std::int32_t register_id = 0;
  std::int32_t slot = 0;
  MsgKind kind = MsgKind::kReadable;
};

/// Where a protocol sends its messages (an executor, or a test harness).
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual void Send(const ActorMsg& msg) = 0;
};

struct ConsumedEdge {
  int register_id = 0;
  int producer = 0;
  int register_num = 1;  // the producer's slot count: bounds this edge's readable queue
};

struct ProducedEdge {
  int register_id = 0;
  int register_num = 1;
  std::vector<int> consumers;
};

/// Why an actor cannot fire now (the watchdog's report): consumed registers with no readable
/// slot, and produced registers with no free slot with the consumers still holding their slots.
struct BlockedOn {
  bool waits_for_launch = false;  // the source tick: no call to emit
  std::vector<int> empty_inputs;  // register ids
  struct FullOutput {
    int register_id = 0;
    int register_num = 0;
    std::vector<int> holders;  // consumer task ids that have not returned a slot
  };
  std::vector<FullOutput> full_outputs;
  bool Any() const { return waits_for_launch || !empty_inputs.empty() || !full_outputs.empty(); }
};

class TaskProtocol {
 public:
  /// `external_trigger`: the actor has no consumed registers and fires once per external token
  /// (the source tick, fed by call launches).
  TaskProtocol(int task_id, std::vector<ConsumedEdge> consumed, std::vector<ProducedEdge> produced,
               bool external_trigger = false);

  int TaskId() const { return task_id_; }

  /// Handles a readable, returned or end-of-stream message addressed to this actor.
  void Receive(const ActorMsg& msg);
  /// Source actors: one more piece to emit / no more pieces will come.
  void AddExternalToken() { ++external_tokens_; }
  void CloseExternal() { external_closed_ = true; }

  /// Read-ready and write-ready, and the stream has not ended.
  bool CanAct() const;
  /// Slot the current act reads from consumed edge `i` / writes to produced edge `j`.
  int ConsumedSlot(std::size_t i) const;
  int ProducedSlot(std::size_t j) const;
  /// Finishes an act: marks produced slots readable (sending to consumers) and returns consumed
  /// slots (sending to producers).
  void CompleteAct(MessageSink& sink);

  /// All inputs have ended and are drained: the actor should end its own outputs.
  bool ShouldEndStream() const;
  /// Sends end-of-stream on every produced register; afterwards only returns are accepted.
  void EndStream(MessageSink& sink);
  bool StreamEnded() const { return stream_ended_; }
  /// Ended and every produced slot has come back: the actor may be destroyed.
  bool Finished() const { return stream_ended_ && total_reading_ == 0; }

  /// Slots of produced edge `j` that are written and not yet returned by every consumer.
  int InFlight(std::size_t j) const;
  std::int64_t ActCount() const { return act_count_; }
  /// What the actor waits for, for the watchdog and for test failures.
  std::string DescribeWaiting() const;
  /// The same, as ids for a report with names.
  BlockedOn Blocked() const;

 private:
  struct Consumed {
    ConsumedEdge edge;
    std::vector<int> ready;  // ring of readable slot indices
    int head = 0;
    int count = 0;
    bool ended = false;
  };
  struct Produced {
    ProducedEdge edge;
    std::vector<int> reading;  // consumers still holding each slot
    std::vector<std::vector<bool>> holding;  // [slot][i]: edge.consumers[i] has not returned it
    int head = 0;              // next slot to write
    int free = 0;
  };
  Consumed* FindConsumed(int register_id);
  Produced* FindProduced(int register_id);

  int task_id_;
  std::vector<Consumed> consumed_;
  std::vector<Produced> produced_;
  bool external_trigger_;
  std::int64_t external_tokens_ = 0;
  bool external_closed_ = false;
  int total_reading_ = 0;
  bool stream_ended_ = false;
  std::int64_t act_count_ = 0;
};

}  // namespace weir::internal
