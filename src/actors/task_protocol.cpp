#include "actors/task_protocol.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace weir::internal {

TaskProtocol::TaskProtocol(int task_id, std::vector<ConsumedEdge> consumed, std::vector<ProducedEdge> produced,
                           bool external_trigger)
    : task_id_(task_id), external_trigger_(external_trigger) {
  for (ConsumedEdge& edge : consumed) {
    if (edge.register_num < 1) throw std::invalid_argument("[protocol] register_num must be at least 1");
    Consumed c{edge, std::vector<int>(static_cast<std::size_t>(edge.register_num), 0)};
    consumed_.push_back(std::move(c));
  }
  for (ProducedEdge& edge : produced) {
    if (edge.register_num < 1) throw std::invalid_argument("[protocol] register_num must be at least 1");
    Produced p{edge, std::vector<int>(static_cast<std::size_t>(edge.register_num), 0)};
    p.holding.assign(static_cast<std::size_t>(edge.register_num), std::vector<bool>(edge.consumers.size(), false));
    p.free = edge.register_num;
    produced_.push_back(std::move(p));
  }
}

TaskProtocol::Consumed* TaskProtocol::FindConsumed(int register_id) {
  for (Consumed& c : consumed_) {
    if (c.edge.register_id == register_id) return &c;
  }
  return nullptr;
}

TaskProtocol::Produced* TaskProtocol::FindProduced(int register_id) {
  for (Produced& p : produced_) {
    if (p.edge.register_id == register_id) return &p;
  }
  return nullptr;
}

// Protocol violations are runtime bugs, not user errors; they surface as logic_error, which the
// executor turns into a failed job rather than a crash.
void TaskProtocol::Receive(const ActorMsg& msg) {
  switch (msg.kind) {
    case MsgKind::kReadable: {
      Consumed* c = FindConsumed(msg.register_id);
      if (c == nullptr || c->ended || c->count == c->edge.register_num) {
        throw std::logic_error(fmt::format("[protocol] task {} got an unexpected readable for register {}", task_id_,
                                           msg.register_id));
      }
      c->ready[static_cast<std::size_t>((c->head + c->count) % c->edge.register_num)] = msg.slot;
      ++c->count;
      return;
    }
    case MsgKind::kReturned: {
      Produced* p = FindProduced(msg.register_id);
      if (p == nullptr || msg.slot < 0 || msg.slot >= p->edge.register_num ||
          p->reading[static_cast<std::size_t>(msg.slot)] == 0) {
        throw std::logic_error(fmt::format("[protocol] task {} got an unexpected return of register {} slot {}",
                                           task_id_, msg.register_id, msg.slot));
      }
      std::vector<bool>& holding = p->holding[static_cast<std::size_t>(msg.slot)];
      for (std::size_t i = 0; i < holding.size(); ++i) {
        if (holding[i] && p->edge.consumers[i] == msg.src_task) {
          holding[i] = false;
          break;
        }
      }
      if (--p->reading[static_cast<std::size_t>(msg.slot)] == 0) ++p->free;
      --total_reading_;
      return;
    }
    case MsgKind::kEndOfStream: {
      Consumed* c = FindConsumed(msg.register_id);
      if (c == nullptr) {
        throw std::logic_error(fmt::format("[protocol] task {} got end-of-stream for unknown register {}", task_id_,
                                           msg.register_id));
      }
      c->ended = true;
      return;
    }
  }
}

bool TaskProtocol::CanAct() const {
  if (stream_ended_) return false;
  if (external_trigger_ && external_tokens_ == 0) return false;
  for (const Consumed& c : consumed_) {
    if (c.count == 0) return false;
  }
  for (const Produced& p : produced_) {
    if (p.free == 0) return false;
  }
  return true;
}

int TaskProtocol::ConsumedSlot(std::size_t i) const {
  const Consumed& c = consumed_[i];
  return c.ready[static_cast<std::size_t>(c.head)];
}

int TaskProtocol::ProducedSlot(std::size_t j) const { return produced_[j].head; }

void TaskProtocol::CompleteAct(MessageSink& sink) {
  ++act_count_;
  if (external_trigger_) --external_tokens_;
  for (Produced& p : produced_) {
    const int slot = p.head;
    const int consumers = static_cast<int>(p.edge.consumers.size());
    p.head = (p.head + 1) % p.edge.register_num;
    if (consumers == 0) continue;  // nobody reads it: the slot is free again at once
    --p.free;
    p.reading[static_cast<std::size_t>(slot)] = consumers;
    p.holding[static_cast<std::size_t>(slot)].assign(static_cast<std::size_t>(consumers), true);
    total_reading_ += consumers;
    for (int consumer : p.edge.consumers) {
      sink.Send({consumer, task_id_, p.edge.register_id, slot, MsgKind::kReadable});
    }
  }
  for (Consumed& c : consumed_) {
    const int slot = c.ready[static_cast<std::size_t>(c.head)];
    c.head = (c.head + 1) % c.edge.register_num;
    --c.count;
    sink.Send({c.edge.producer, task_id_, c.edge.register_id, slot, MsgKind::kReturned});
  }
}

bool TaskProtocol::ShouldEndStream() const {
  if (stream_ended_) return false;
  if (external_trigger_) return external_closed_ && external_tokens_ == 0;
  for (const Consumed& c : consumed_) {
    if (!c.ended || c.count > 0) return false;
  }
  return true;
}

void TaskProtocol::EndStream(MessageSink& sink) {
  stream_ended_ = true;
  for (const Produced& p : produced_) {
    for (int consumer : p.edge.consumers) {
      sink.Send({consumer, task_id_, p.edge.register_id, 0, MsgKind::kEndOfStream});
    }
  }
}

BlockedOn TaskProtocol::Blocked() const {
  BlockedOn blocked;
  if (stream_ended_) return blocked;
  blocked.waits_for_launch = external_trigger_ && external_tokens_ == 0;
  for (const Consumed& c : consumed_) {
    if (c.count == 0) blocked.empty_inputs.push_back(c.edge.register_id);
  }
  for (const Produced& p : produced_) {
    if (p.free > 0) continue;
    BlockedOn::FullOutput full{p.edge.register_id, p.edge.register_num, {}};
    for (const std::vector<bool>& slot : p.holding) {
      for (std::size_t i = 0; i < slot.size(); ++i) {
        const int consumer = p.edge.consumers[i];
        if (slot[i] && std::find(full.holders.begin(), full.holders.end(), consumer) == full.holders.end()) {
          full.holders.push_back(consumer);
        }
      }
    }
    blocked.full_outputs.push_back(std::move(full));
  }
  return blocked;
}

int TaskProtocol::InFlight(std::size_t j) const { return produced_[j].edge.register_num - produced_[j].free; }

std::string TaskProtocol::DescribeWaiting() const {
  std::string out = fmt::format("task {}:", task_id_);
  if (external_trigger_) out += fmt::format(" launches={}{}", external_tokens_, external_closed_ ? " (closed)" : "");
  for (const Consumed& c : consumed_) {
    out += fmt::format(" in[r{} from t{}]={}{}", c.edge.register_id, c.edge.producer, c.count, c.ended ? " (ended)" : "");
  }
  for (const Produced& p : produced_) {
    out += fmt::format(" out[r{}] free={}/{}", p.edge.register_id, p.free, p.edge.register_num);
  }
  if (stream_ended_) out += fmt::format(" ended, {} slots out", total_reading_);
  return out;
}

}  // namespace weir::internal
