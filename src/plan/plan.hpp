#pragma once
// A compiled job as plain data: tasks (each becomes an actor), the registers between them, and the
// streams (executors) that host the tasks. The graph layer writes it; the runtime executes it and
// knows nothing else about the job.
#include <any>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/stream.hpp"
#include "common/tensor_meta.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

enum class TaskKind : std::uint8_t {
  kSourceTick,  // fires once per launched call; its zero-byte tick starts inputs and constants
  kInput,       // copies one call input into its register
  kKernel,      // runs one op's kernel
  kSink,        // the final actor: hands the outputs of a call to the dispatcher
  kVariable,    // presents a session variable (its register's memory is the variable) once per call
  kBarrier,     // a zero-byte join on the host: acts once all it consumes is ready, passing a failure on
};

std::string_view Name(TaskKind kind);

struct RegisterDesc {
  int id = 0;
  std::string name;
  int producer = -1;            // task id
  std::vector<int> consumers;   // task ids, each once
  int register_num = 1;         // slots: how many pieces may be in flight on this edge
  TensorMeta meta;              // of one slot; ticks and control registers have 0 bytes
  std::size_t slot_bytes = 0;
  /// Non-empty: the one slot is this session variable's storage, not planned memory.
  std::string variable;
  /// Where the slot starts in the variable's storage: a device's rows of a split variable.
  std::size_t variable_offset = 0;
  /// Where the slots' memory is: its producer's device (a CUDA device's memory for its kernels'
  /// results and variables), the host otherwise.
  Device device = Device::Cpu();
  /// Host memory that a device copies from or into (page-locked, so the copy runs asynchronously):
  /// a call input bound for a device is copied into it instead of borrowed.
  bool pinned = false;
};

struct TaskDesc {
  int id = 0;
  TaskKind kind = TaskKind::kKernel;
  std::string name;
  int stream = 0;                        // index into Plan::streams
  std::vector<int> consumed;             // register ids, each once
  std::vector<int> produced;             // register ids
  // Kernel tasks: the op and its kernel; inputs map kernel input i to consumed[input_slots[i]].
  std::string op_type;
  const std::any* attrs = nullptr;       // owned by the job graph, which outlives the plan
  std::vector<int> input_slots;
  std::vector<TensorMeta> input_metas;
  std::vector<TensorMeta> output_metas;
  KernelFactory kernel_factory = nullptr;
  // Input tasks: which call input to copy. Sink: output i is consumed[input_slots[i]].
  int input_index = -1;
  /// Input tasks: where this piece starts in the call input (a consistent input split along axis 0).
  std::size_t input_offset = 0;
  /// Threads the kernel may split its work over (its device's share of the cores); 0: every core.
  int intra_op_threads = 0;
  /// A collective or transfer actor (its attrs are CollectiveAttrs): traces and profiles mark it.
  bool collective = false;
  /// Kernel tasks: which of the op's parallel copies this is, over every process (KernelSetup::shard).
  int shard = 0;
  int shards = 1;
  /// Kernel tasks whose outputs are a function of these session variables alone, which the job never
  /// writes (graph/planner/constant_results.hpp): each slot keeps its results across calls, and the
  /// kernel runs again only once one of the variables has changed (VariableVersion). Empty: every call.
  std::vector<std::string> constant_over;
};

struct Plan {
  std::string job_name;
  std::vector<TaskDesc> tasks;
  std::vector<RegisterDesc> registers;
  std::vector<StreamId> streams;
  int source_task = -1;
  int sink_task = -1;
  std::vector<std::string> output_names;
  /// Pieces of each placeholder's input (one per device for a mirrored placeholder, else 1); a
  /// call's inputs are every placeholder's pieces, placeholder after placeholder.
  std::vector<int> input_pieces;
  /// Pieces of each output: the sink writes them one after the other (concatenated along axis 0).
  /// Output metas are a mirrored job's per-device metas, a consistent job's logical ones.
  std::vector<int> output_pieces;
  /// Devices of the session the plan was compiled for.
  int devices = 1;
  /// Its f32 matmuls and convolutions on CUDA devices may use TF32 tensor cores (KernelSetup).
  bool tensor_float_32 = false;
  /// A mirrored job: outputs of several pieces are per-device results (Outputs::Pieces); in a
  /// consistent job they are the slices of one logical result.
  bool mirrored = false;
  /// Some collective actor also reduces across the processes (CollectiveAttrs::across_processes):
  /// the job needs a process group, and the session runs one such call at a time.
  bool process_collectives = false;
  /// A consistent job split over processes (graph/planner/process_split.hpp): this process's part of a plan of
  /// every process's devices, whose ToDot this is: what the processes compare to find jobs that differ.
  std::string whole_plan_dot;
  /// Things the user should know about how the job was placed; the session prints them once.
  std::vector<std::string> notices;
  /// Variables this plan reads (and the subset it writes), for the session's cross-job ordering.
  std::vector<std::string> variables_read;
  std::vector<std::string> variables_written;
  std::vector<TensorMeta> output_metas;
  /// Whatever the tasks' attrs point into (the job graph); kept alive with the plan.
  std::shared_ptr<const void> keep_alive;
  /// Attrs of the kernels the planner fused (graph/fusion.hpp); a deque, so tasks' pointers stay put.
  std::deque<std::any> fused_attrs;

  /// Appends a task (no registers yet) and returns its id.
  int AddTask(TaskKind kind, std::string name, int stream);
  /// Appends a register of `register_num` slots of `meta` that `producer` writes, and returns its id.
  int AddRegister(std::string name, int producer, int register_num, TensorMeta meta);
  /// Makes `task` consume `reg` (once, however often it reads it); returns the index in its consumed list.
  int Consume(int task, int reg);
  /// A zero-byte register from `from` to `to`: `to` acts on a call only after `from` has.
  void AddControlEdge(int from, int to);

  /// Where `task` runs: "cpu:1", or "cpu:0-1" for a collective actor spanning the devices; "host" for
  /// the source, input and sink actors of a CUDA device.
  std::string DeviceName(const TaskDesc& task) const;
  /// Bytes of register memory the plan needs (every slot of every register).
  std::size_t RegisterBytes() const;
  /// Graphviz dot: one node per actor (grouped by stream, labelled with its device), one edge per
  /// register and consumer, labelled with the register's name, register_num and slot size.
  std::string ToDot() const;
  /// Throws std::logic_error naming the tasks of a loop when some task waits, through registers, on
  /// itself: such a plan would never complete its first call.
  void CheckAcyclic() const;
  /// For each task, whether a path of registers leads from it to the sink (the sink's own is true).
  std::vector<bool> TasksReachingSink() const;
  /// Throws std::logic_error naming a task from which no path of registers leads to the sink: such a
  /// task could act for a call that already completed, whose inputs and record are gone.
  void CheckEveryTaskReachesSink() const;
  /// Removes the tasks and registers marked (a removed task's registers must be marked too), takes
  /// removed tasks off the consumer lists, and renumbers the rest in order.
  void RemoveTasks(const std::vector<bool>& dropped_tasks, const std::vector<bool>& dropped_registers);
};

}  // namespace weir::internal
